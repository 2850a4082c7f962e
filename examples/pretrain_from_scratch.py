"""Pretrains a BERT-Tiny from scratch on the embedded public-domain corpus (MLM + NSP).

Corpus: Moby-Dick and State of the Union addresses shipped in `keras_bert/data/corpus`
(chapters and addresses are the documents; 15% of each file's are held out). Vocabulary: the
embedded 8k uncased WordPiece vocabulary. Training: `keras_bert.jobs.pretrain.run_pretraining`,
i.e. `model.fit` on `BertPretrainer` (masked LM + next-sentence prediction, masks drawn anew
every epoch) with BERT's AdamW, warmup and linear decay. The held-out masked-LM accuracy is
compared with always predicting the most frequent masked token.

    python examples/pretrain_from_scratch.py            # 2000 steps, batch 32, seq 128
    python examples/pretrain_from_scratch.py --quick    # 20 steps, batch 16, seq 64 (tests)

Figures (2 CPU cores): the full run is `keras-bert pretrain --steps 2000 --batch-size 32
--seq-length 128` with the CLI's defaults (peak learning rate 3e-3); its measured held-out
MLM and NSP accuracies against their baselines, over several seeds, are in docs/pretraining.md
and docs/runs.md. `--quick` (about 40 s on the busy
machine) only shows the path: 20 steps are far too few to beat the baseline.

Writes OUT/model (a keras_bert model directory for `finetune`, `encode`, `export`),
OUT/metrics.json, OUT/curves.png and TensorBoard logs in OUT/logs.
"""

from __future__ import annotations

import argparse
import os

import _shared  # noqa: F401  (the repository on sys.path)


def main(argv=None) -> dict:
    """Runs the pretraining; returns the metrics it writes to OUT/metrics.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="artifacts/pretrain_tiny")
    parser.add_argument("--quick", action="store_true", help="20 steps, batch 16, seq 64")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--verbose", type=int, default=2)
    args = parser.parse_args(argv)
    steps_per_epoch, eval_steps, max_predictions = 200, 20, 20
    if args.quick:
        args.steps, args.batch_size, args.seq_length = 20, 16, 64
        steps_per_epoch, eval_steps, max_predictions = 10, 2, 10

    from keras_bert.jobs.pretrain import PretrainJob, run_pretraining

    job = PretrainJob(out=args.out, preset="tiny", steps=args.steps,
                      steps_per_epoch=steps_per_epoch, batch_size=args.batch_size,
                      seq_length=args.seq_length, max_predictions=max_predictions,
                      learning_rate=args.learning_rate,
                      eval_steps=eval_steps, verbose=args.verbose)
    metrics = run_pretraining(job)
    held_out = metrics["eval"]
    print(f"steps {metrics['steps']}, {metrics['seconds']}s wall")
    print(f"held-out MLM accuracy {held_out['mlm_accuracy']:.4f} "
          f"(frequency baseline {held_out['mlm_frequency_baseline']:.4f}), "
          f"NSP accuracy {held_out['nsp_accuracy']:.4f}")
    print(f"model: {os.path.join(args.out, 'model')}  curves: "
          f"{os.path.join(args.out, 'curves.png')}")
    return metrics


if __name__ == "__main__":
    main()
