"""`keras-bert predict MODEL_DIR --input FILE|-`: one JSON object per input row.

Inputs by task (the model directory's `task` block says which):

* classify / regress: a CSV, TSV or JSONL file with the text column(s) the model was trained
  on (a label column, if any, is ignored), or `-`: one text per stdin line (pair tasks:
  `text<TAB>text_b`). Output `{"label", "probabilities"}` / `{"score"}`.
* tag: a CoNLL file (`.conll`, `.txt`: word in the first column, blank line between
  sentences), a CSV/TSV/JSONL text column, or `-` (one sentence per line); words are split on
  whitespace. Output `{"tokens": [...], "tags": [...]}`, one tag per word.
* squad: a JSONL file (or `-`) of `{"question", "context"[, "id"]}` objects, or a SQuAD JSON
  file. Output `{"id", "answer", "start", "end", "score"}` (character offsets in the
  context; answer "" when nothing is found).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

CONLL_EXTENSIONS = (".conll", ".txt")


def register(subparsers) -> None:
    """Adds the `predict` subcommand."""
    p = subparsers.add_parser(
        "predict", help="predict with a fine-tuned model directory",
        description=__doc__.split("\n\n", 1)[1], formatter_class=_raw_formatter())
    p.add_argument("model_dir", help="fine-tuned model directory (`keras-bert finetune` OUT/model)")
    p.add_argument("--input", required=True, help="input file, or - for stdin")
    p.add_argument("--text-column", help="default: the one the model was trained with")
    p.add_argument("--text-b-column", help="default: the one the model was trained with")
    p.add_argument("--seq-length", type=int, help="default: the training sequence length")
    p.add_argument("--batch-size", type=int, default=32)
    p.set_defaults(run=run)


def _raw_formatter():
    import argparse

    return argparse.RawDescriptionHelpFormatter


def run(args) -> int:
    """Loads the model, predicts every input row and writes JSON lines to stdout."""
    from keras_bert.checkpoints.task_dir import load_task_model

    loaded = load_task_model(args.model_dir)
    seq_length = args.seq_length or loaded.seq_length
    if loaded.kind in ("classify", "regress"):
        results = predict_sentences(loaded, read_sentences(args, loaded.task), seq_length,
                                    args.batch_size)
    elif loaded.kind == "tag":
        results = predict_tags(loaded, read_word_lists(args), seq_length, args.batch_size)
    elif loaded.kind == "squad":
        results = predict_answers(loaded, read_questions(args.input), args.batch_size)
    else:
        raise ValueError(f"{args.model_dir}: predict needs a fine-tuned model (classify, "
                         f"regress, tag or squad), not {loaded.kind!r}; use `keras-bert "
                         "encode` for embeddings")
    for result in results:
        sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


# ---------------------------------------------------------------------------- reading
def _stdin_lines() -> list[tuple[int, str]]:
    return [(n, line.rstrip("\r\n")) for n, line in enumerate(sys.stdin, start=1)]


def _no_rows(source: str):
    raise ValueError(f"{source}: no input rows (the input is empty)")


def read_sentences(args, task: dict):
    """`TextExample`s from a CSV/TSV/JSONL file or stdin lines (`text[<TAB>text_b]`)."""
    from keras_bert.tasks.readers import TextExample, read_examples

    pair = bool(task.get("pair"))
    if args.input == "-":
        examples = []
        for number, line in _stdin_lines():
            if pair:
                parts = line.split("\t")
                if len(parts) != 2:
                    raise ValueError(f"stdin: line {number}: a pair model needs "
                                     f"'text<TAB>text_b', got {len(parts)} field(s)")
                examples.append(TextExample(parts[0], parts[1], None, number))
            else:
                examples.append(TextExample(line, None, None, number))
        return examples or _no_rows("stdin")
    text_b = args.text_b_column or (task.get("text_b_column") if pair else None)
    return read_examples(args.input, text_column=args.text_column or task.get(
        "text_column") or "text", text_b_column=text_b, label_column=None)


def _read_conll_words(path) -> list[list[str]]:
    """Sentences of a CoNLL file (words = first column; tags, if any, ignored)."""
    sentences, words = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            columns = line.split()
            if not columns or columns[0] == "-DOCSTART-":
                if words:
                    sentences.append(words)
                words = []
                continue
            words.append(columns[0])
    if words:
        sentences.append(words)
    return sentences


def read_word_lists(args) -> list[list[str]]:
    """Sentences as word lists: CoNLL file, CSV/TSV/JSONL text column, or stdin lines."""
    from keras_bert.tasks.readers import read_examples

    if args.input == "-":
        sentences = [line.split() for _, line in _stdin_lines()]
    elif os.path.splitext(args.input)[1].lower() in CONLL_EXTENSIONS:
        sentences = _read_conll_words(args.input)
    else:
        sentences = [ex.text.split() for ex in read_examples(
            args.input, text_column=args.text_column or "text", label_column=None)]
    return sentences or _no_rows("stdin" if args.input == "-" else args.input)


def read_questions(source: str):
    """`SquadExample`s from JSONL `{"question", "context"[, "id"]}` rows or a SQuAD file."""
    from keras_bert.tasks.squad import SquadExample, read_squad

    if source != "-" and os.path.splitext(source)[1].lower() == ".json":
        return read_squad(source)
    if source == "-":
        lines, name = _stdin_lines(), "stdin"
    else:
        with open(source, encoding="utf-8-sig") as f:
            lines, name = [(n, t) for n, t in enumerate(f, start=1)], source
    examples = []
    for number, text in lines:
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{name}: line {number}: invalid JSON: {e}") from None
        if not isinstance(row, dict) or not isinstance(row.get("question"), str) \
                or not isinstance(row.get("context"), str):
            raise ValueError(f"{name}: line {number}: expected a JSON object with 'question' "
                             "and 'context' strings")
        examples.append(SquadExample(str(row.get("id", number)), row["question"],
                                     row["context"]))
    return examples or _no_rows(name)


# ---------------------------------------------------------------------------- predicting
def predict_sentences(loaded, examples, seq_length: int, batch_size: int = 32) -> list[dict]:
    """classify: `{"label", "probabilities"}`; regress: `{"score"}`, one per example."""
    from keras_bert.tasks.readers import text_dataset

    dataset = text_dataset(examples, loaded.preprocessor.with_length(seq_length),
                           batch_size=batch_size)
    logits = np.asarray(loaded.model.predict(dataset, verbose=0), np.float64)
    if loaded.kind == "regress":
        return [{"score": float(s)} for s in logits.reshape(-1)]
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probabilities = exp / exp.sum(axis=-1, keepdims=True)
    names = loaded.labels.names
    return [{"label": names[int(np.argmax(p))], "probabilities": [float(x) for x in p]}
            for p in probabilities]


def predict_tags(loaded, sentences, seq_length: int, batch_size: int = 32) -> list[dict]:
    """`{"tokens", "tags"}` per sentence (first-wordpiece prediction of each word)."""
    from keras_bert.tasks.conll import align_sentences, predictions_to_tags, tagging_dataset

    features = align_sentences(loaded.tokenizer, sentences, seq_length)
    logits = loaded.model.predict(tagging_dataset(features, batch_size), verbose=0)
    tags = predictions_to_tags(np.argmax(logits, axis=-1), features, loaded.labels)
    return [{"tokens": list(words), "tags": t} for words, t in zip(sentences, tags, strict=True)]


def predict_answers(loaded, examples, batch_size: int = 32) -> list[dict]:
    """`{"id", "answer", "start", "end", "score"}` per question."""
    from keras_bert.tasks.squad import decode_predictions, squad_dataset, squad_features

    task = loaded.task
    features = squad_features(examples, loaded.tokenizer, seq_length=loaded.seq_length,
                              max_query_length=int(task.get("max_query_length", 64)),
                              doc_stride=int(task.get("doc_stride", 128)))
    logits = loaded.model.predict(squad_dataset(features, batch_size), verbose=0)
    results = decode_predictions(examples, features, logits["start_logits"],
                                 logits["end_logits"],
                                 allow_no_answer=bool(task.get("version_2", False)))
    output = []
    for ex in examples:
        r = results[ex.qas_id]
        score = r["score"] if np.isfinite(r["score"]) else None
        output.append({"id": ex.qas_id, "answer": r["text"], "start": r["start_char"],
                       "end": r["end_char"], "score": score})
    return output
