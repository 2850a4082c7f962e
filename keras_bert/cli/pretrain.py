"""`keras-bert pretrain`: pretrain BERT (MLM + NSP) with `model.fit`; resumes when restarted."""

from __future__ import annotations

import json

from keras_bert.cli.finetune import PRECISION_HELP, PRECISION_NAMES  # one list of choices
from keras_bert.cli.options import add_rules_argument
from keras_bert.config import DEFAULT_SEQ_LENGTH


def register(subparsers) -> None:
    """Adds the `pretrain` subcommand."""
    p = subparsers.add_parser(
        "pretrain", help="pretrain BERT with masked LM + next sentence prediction",
        description="Pretrains a BERT from raw text (NSP pairs and masks made on the fly, new "
                    "every epoch) or from create-pretraining-data TFRecords. Writes OUT/model "
                    "(a model directory for encode and fine-tuning), metrics.json, curves.png, "
                    "TensorBoard logs and checkpoints; started again with the same arguments "
                    "it resumes from the last checkpoint. Defaults: BERT-Tiny on the embedded "
                    "corpus with its 8k vocabulary. Large batches: --optimizer lamb, "
                    "--accumulation-steps; BERT's two phases: a run at --seq-length 128, then "
                    "--phase2-from its OUT at 512.")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--preset", default="tiny",
                   choices=("tiny", "mini", "small", "medium", "base", "large"))
    data = p.add_mutually_exclusive_group()
    data.add_argument("--corpus", nargs="+", help="text files (default: the embedded corpus)")
    data.add_argument("--tfrecords", help="glob of create-pretraining-data files")
    p.add_argument("--format", default="auto", choices=("auto", "sentences", "prose", "jsonl"))
    p.add_argument("--vocab", help="vocab.txt (default: --init's, else the embedded 8k vocab)")
    p.add_argument("--cased", action="store_true", help="with --vocab: keep case and accents")
    add_rules_argument(p, "--init's, else google")
    p.add_argument("--init", help="continue pretraining from a Google BERT release, a Hugging "
                                  "Face BertForPreTraining / BertForMaskedLM directory or a "
                                  "keras_bert model directory converted from one or written by "
                                  "pretrain (with their MLM / NSP heads; another keras_bert "
                                  "model directory gets new heads)")
    p.add_argument("--phase2-from", metavar="PHASE1_OUT",
                   help="a finished pretrain run's --out directory: continue its model, "
                        "vocabulary and optimizer state (moments and step count) under a new "
                        "warmup + decay schedule of --steps, e.g. at the longer --seq-length "
                        "and larger --max-predictions of BERT's phase 2 (128 -> 512, 20 -> 80); "
                        "the same --optimizer; not with --init or --vocab")
    p.add_argument("--steps", type=int, default=2000,
                   help="training steps (default 2000: BERT-Tiny on the embedded corpus "
                        "usually learns NSP after ~1,200-1,600)")
    p.add_argument("--steps-per-epoch", type=int, default=200,
                   help="logging, evaluation and checkpoint interval: a killed run started again "
                        "resumes from the last one (steps must be a multiple)")
    p.add_argument("--batch-size", type=int, default=32,
                   help="global batch size of one forward/backward pass (a micro-batch with "
                        "--accumulation-steps)")
    p.add_argument("--accumulation-steps", type=int, default=1, metavar="K",
                   help="average the gradients of K micro-batches of --batch-size into one "
                        "update of K x batch-size examples (--steps and the schedule count "
                        "updates); default 1")
    p.add_argument("--optimizer", default="adamw", choices=("adamw", "lamb"),
                   help="adamw (BERT's; default) or lamb (You et al. 2019, for large batches: "
                        "layer-wise trust ratio; no decay or trust ratio on LayerNorm and "
                        "biases)")
    p.add_argument("--seq-length", type=int, default=DEFAULT_SEQ_LENGTH)
    p.add_argument("--max-predictions", type=int, default=20)
    p.add_argument("--whole-word", action="store_true")
    p.add_argument("--learning-rate", type=float, default=3e-3,
                   help="peak learning rate (default 3e-3, for the tiny preset: at 5e-3 it "
                        "stalls at the unigram baseline; BERT-base used 1e-4)")
    p.add_argument("--warmup-steps", type=int, help="default: 10%% of --steps")
    p.add_argument("--nsp-loss-weight", type=float, default=1.0,
                   help="loss = MLM + this * NSP (the original: 1; on the embedded corpus "
                        "a weight of 10 kept BERT-Tiny's NSP at the label prior)")
    p.add_argument("--precision", default="auto", choices=PRECISION_NAMES,
                   help=PRECISION_HELP + "; --strategy tpu: mixed_bfloat16")
    p.add_argument("--strategy", default="auto",
                   choices=("auto", "default", "mirrored", "multi_worker", "tpu"))
    p.add_argument("--jit-compile", action="store_true", help="XLA (measured slower on CPU)")
    p.add_argument("--seed", type=int, default=12345)
    p.set_defaults(run=run)


def run(args) -> int:
    """Runs the job and prints the final metrics."""
    from keras_bert.training.pretrain_job import PretrainJob, run_pretraining

    job = PretrainJob(
        out=args.out, preset=args.preset, corpus=args.corpus, corpus_format=args.format,
        tfrecords=args.tfrecords, vocab=args.vocab, lower_case=not args.cased, init=args.init,
        rules=args.rules, phase2_from=args.phase2_from, optimizer=args.optimizer,
        accumulation_steps=args.accumulation_steps,
        steps=args.steps, steps_per_epoch=args.steps_per_epoch, batch_size=args.batch_size,
        seq_length=args.seq_length, max_predictions=args.max_predictions,
        whole_word=args.whole_word, learning_rate=args.learning_rate,
        warmup_steps=args.warmup_steps, nsp_loss_weight=args.nsp_loss_weight,
        precision=args.precision, strategy=args.strategy,
        jit_compile=args.jit_compile, seed=args.seed)
    metrics = run_pretraining(job)
    print(json.dumps(metrics, indent=2))
    print(f"model directory: {args.out}/model   curves: {args.out}/curves.png")
    return 0
