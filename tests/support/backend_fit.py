"""Fits every kind for a few steps in ONE Keras backend and writes what it saw, so that tests
can compare backends (and XLA against no XLA) from the same start on the same batches.

The backend is chosen when Keras is imported, so each backend runs in its own process:

    KERAS_BACKEND=tensorflow python -m tests.support.backend_fit init DIR
    KERAS_BACKEND=tensorflow python -m tests.support.backend_fit fit DIR OUT.json [--xla]
    KERAS_BACKEND=jax        python -m tests.support.backend_fit fit DIR OUT.json [--kinds ...]

`init` (TensorFlow) writes one saved model per kind under DIR, built from a tiny BERT with
no dropout anywhere (dropout draws differ between backends' generators, so equal updates
need none), so every later process starts from the same weights. `fit` loads each, trains
it with `fit` on raw strings (the TF Text pipeline feeding the backend) for a few steps at
a learning rate large enough to move the weights, and records each step's running loss and
the model's answers after training (`predict`'s numeric outputs).

Data: the rules of tests/jobs/test_finetune.py (classify, regress, tag, squad), the pairs
of tests/tasks/text_embedding (embed), label lists for multilabel, Moby Dick chapters for
pretraining.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import keras
import numpy as np

from tests.support.callbacks import KillAt, Killed, StepLosses

KINDS = ("classify", "pair", "regress", "multilabel", "tag", "squad", "embed", "pretrain")
SEQ = 24
BATCH = 8
EPOCHS = 2
LEARNING_RATE = 5e-3
LABELS = ["whale", "other"]


def sentences(count: int, seed: int) -> tuple[list[str], list[str]]:
    from tests.jobs.test_finetune import _sentences as rule

    rows = rule(np.random.default_rng(seed), count)
    return [" ".join(words) for words, _ in rows], [label for _, label in rows]


def data(kind: str, root: Path):
    """`(x, y)` of `kind`'s fit, 32 examples (pretraining: documents, no y)."""
    texts, labels = sentences(32, seed=1)
    if kind == "classify":
        return texts, labels
    if kind == "pair":
        return list(zip(texts, texts[::-1], strict=True)), [
            "same" if a == b else "other" for a, b in zip(labels, labels[::-1], strict=True)]
    if kind == "regress":
        return texts, [t.split().count("whale") / len(t.split()) for t in texts]
    if kind == "multilabel":
        return texts, [[label] + (["long"] if len(t.split()) > 6 else [])
                       for t, label in zip(texts, labels, strict=True)]
    if kind == "tag":
        from tests.jobs.test_finetune import _tagged_sentence

        rng = np.random.default_rng(2)
        rows = [_tagged_sentence(rng) for _ in range(32)]
        return [w for w, _ in rows], [t for _, t in rows]
    if kind == "squad":
        from tests.jobs.test_finetune import _squad_file

        _, paragraphs = _squad_file(root / "squad.json", np.random.default_rng(3), 32)
        return ([(p["qas"][0]["question"], p["context"]) for p in paragraphs],
                [{"text": a["text"], "start": a["answer_start"]}
                 for a in (p["qas"][0]["answers"][0] for p in paragraphs)])
    if kind == "embed":
        return list(zip(texts, [" ".join(reversed(t.split())) for t in texts],
                        strict=True)), None
    from tests.support.tiny_data import moby_chapters

    return moby_chapters(root, 6), None


def _new_model(kind: str, encoder_dir: str):
    """`kind`'s model on the encoder of `encoder_dir`, a new head, no dropout."""
    from keras_bert import (
        MultiLabelClassifier,
        QuestionAnswerer,
        TextClassifier,
        TextEmbedder,
        TextPretrainer,
        TextRegressor,
        TokenClassifier,
    )

    common = {"seq_length": SEQ, "precision": "float32"}
    if kind == "classify":
        return TextClassifier.from_pretrained(encoder_dir, LABELS, dropout=0.0, **common)
    if kind == "pair":
        return TextClassifier.from_pretrained(encoder_dir, ["same", "other"], pair=True,
                                              dropout=0.0, **common)
    if kind == "regress":
        return TextRegressor.from_pretrained(encoder_dir, dropout=0.0, **common)
    if kind == "multilabel":
        return MultiLabelClassifier.from_pretrained(encoder_dir, LABELS + ["long"],
                                                    dropout=0.0, **common)
    if kind == "tag":
        return TokenClassifier.from_pretrained(encoder_dir, ["B-LOC", "B-PER", "I-PER", "O"],
                                               dropout=0.0, **common)
    if kind == "squad":
        return QuestionAnswerer.from_pretrained(encoder_dir, max_query_length=10, **common)
    if kind == "embed":
        return TextEmbedder.from_pretrained(encoder_dir, **common)
    return TextPretrainer.from_pretrained(encoder_dir, seq_length=SEQ, precision="float32")


def init(root: Path, kinds=KINDS) -> None:
    """Writes the zero-dropout encoder and each of `kinds`' starting models under `root`
    (those not there yet)."""
    from keras_bert import BertConfig, BertEncoder
    from keras_bert.checkpoints.model_dir import save_model_dir
    from tests.support.tiny_data import SPECIAL, WORDS

    keras.utils.set_random_seed(0)
    vocab = root / "vocab.txt"
    vocab.write_text("".join(f"{t}\n" for t in SPECIAL + WORDS), encoding="utf-8")
    config = BertConfig(vocab_size=len(SPECIAL) + len(WORDS), hidden_size=32, num_layers=2,
                        num_heads=4, intermediate_size=64, max_position_embeddings=64,
                        hidden_dropout=0.0, attention_dropout=0.0)
    encoder_dir = str(root / "encoder")
    if not os.path.exists(encoder_dir):
        save_model_dir(BertEncoder(config), encoder_dir, str(vocab), lower_case=True)
    for kind in kinds:
        if not (root / kind).exists():
            _new_model(kind, encoder_dir).save(str(root / kind))


def requests(kind: str, x) -> list:
    """The inputs the trained models answer: 8 of the training inputs (texts for the
    embedder, masked texts for the pretrainer)."""
    if kind == "pretrain":
        return ["the [MASK] sailed over the sea .", "call me [MASK] ."]
    return [text for text, _ in x[:8]] if kind == "embed" else x[:8]


def answers(kind: str, model, x) -> dict:
    """The trained model's `predict` outputs on `requests`, as JSON values."""
    outputs = model.predict(requests(kind, x))
    return {name: np.asarray(value).tolist() for name, value in outputs.items()}


def _ids_answers(model) -> dict:
    """The float outputs of the export's `serve_ids` function, run in this process, on two
    rows of 13 ids (one padded): per-position outputs keep the rows' length."""
    ids = np.array([[2, 9, 12, 30, 7, 3, 20, 21, 15, 8, 11, 3, 0],
                    [2, 14, 3, 25, 26, 3, 0, 0, 0, 0, 0, 0, 0]], np.int32)
    types = np.zeros_like(ids)
    types[0, 6:12] = 1
    types[1, 3:6] = 1
    outputs = model.serving_functions().ids_function()(
        input_word_ids=ids, input_mask=(ids > 0).astype(np.int32), input_type_ids=types)
    return {name: np.asarray(value).tolist() for name, value in outputs.items()
            if np.asarray(value).dtype.kind == "f"}


def fit(root: Path, kinds: list[str], xla: bool, accumulation: int,
        save: Path | None = None) -> dict:
    """Loads, fits and answers each of `kinds`; `{kind: {"losses", "answers", ...}}`;
    with `save`, each fitted model is saved as `save/<kind>`."""
    from keras_bert import FitSchedule, TextPretrainer
    from keras_bert.tasks.task_model import TextTaskModel

    results = {}
    for kind in kinds:
        x, y = data(kind, root)
        steps = StepLosses()
        begin = time.perf_counter()
        if kind == "pretrain":
            model = TextPretrainer.from_pretrained(str(root / kind), seq_length=SEQ,
                                                   precision="float32")
            model.compile(learning_rate=LEARNING_RATE, accumulation_steps=accumulation,
                          jit_compile=xla)
            model.fit(x, batch_size=BATCH, epochs=EPOCHS, steps_per_epoch=3, seed=5,
                      verbose=0, callbacks=[steps])
        else:
            model = TextTaskModel.load(str(root / kind))
            model.compile(schedule=FitSchedule(learning_rate=LEARNING_RATE), jit_compile=xla)
            model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, seed=5, verbose=0,
                      callbacks=[steps])
        compiled = model.pretrainer if kind == "pretrain" else model
        results[kind] = {"losses": steps.losses, "seconds": time.perf_counter() - begin,
                         "jit_compile": compiled.jit_compile,
                         "answers": answers(kind, model, x),
                         "ids_answers": {} if kind == "pretrain" else _ids_answers(model)}
        if save is not None:
            model.save(str(save / kind))
    return results


def resume(root: Path) -> float:
    """The classifier fitted whole, and killed after step 5 (its last checkpoint: step 4)
    then fitted again from the same directory: the largest difference between the two
    runs' final weights."""
    from keras_bert import FitSchedule
    from keras_bert.tasks.task_model import TextTaskModel

    x, y = data("classify", root)

    def fresh():
        model = TextTaskModel.load(str(root / "classify"))
        model.compile(schedule=FitSchedule(learning_rate=LEARNING_RATE))
        return model

    fit = dict(epochs=EPOCHS, batch_size=BATCH, seed=5, verbose=0)
    whole = fresh()
    whole.fit(x, y, **fit)
    resumable = dict(checkpoint_dir=str(root / f"resume-{keras.backend.backend()}"),
                     checkpoint_steps=2, **fit)
    try:
        fresh().fit(x, y, callbacks=[KillAt(5)], **resumable)
        raise AssertionError("the kill did not stop the fit")
    except Killed:
        pass
    resumed = fresh()
    resumed.fit(x, y, **resumable)
    assert int(resumed.optimizer.iterations.numpy()) == EPOCHS * len(x) // BATCH
    return max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
               for a, b in zip(resumed.network.weights, whole.network.weights, strict=True))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("init", "fit"))
    parser.add_argument("root", type=Path)
    parser.add_argument("out", nargs="?")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--xla", action="store_true", help="compile the train step with XLA")
    parser.add_argument("--accumulation", type=int, default=1,
                        help="pretraining's micro-batches per update")
    parser.add_argument("--save", type=Path, help="save the fitted models in this folder")
    parser.add_argument("--resume", action="store_true",
                        help="also kill a classifier's fit and resume it (`resume`)")
    args = parser.parse_args(argv)
    if args.command == "init":
        init(args.root)
        return
    result = {"backend": keras.backend.backend(),
              "kinds": fit(args.root, args.kinds, args.xla, args.accumulation,
                          args.save)}
    if args.resume:
        result["resumed_weights_difference"] = resume(args.root)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
