"""Which source a sentence comes from: a labelled classification task from the embedded corpus.

The rule (`source_task`), applied to `keras_bert/data/corpus/` read as `prose`
(`keras_bert.data.corpus`, one document per Moby Dick chapter and per State of the Union
address):

1. **Labels** by file: every sentence of `moby_dick.txt` is `moby_dick`, every sentence of
   `sotu.txt` is `sotu`.
2. **Sentences**: `split_sentences` of each document, kept when they have `min_words` to
   `max_words` whitespace-separated words (default 8 to 50) and do not start with
   `CHAPTER` (a chapter heading would give the answer away).
3. **Dedupe**: sentences are compared lowercased with whitespace collapsed; one that occurs
   more than once anywhere in the corpus is dropped everywhere, so no text is in both splits
   and no text has two labels.
4. **Split by document**, never by sentence: the evaluation split is every 5th Moby Dick
   chapter (chapters 5, 10, ..., 110: 22 of 112) and every 4th speech of `sotu.txt`
   (speeches 4, 8, 12: Lincoln 1862, Johnson 1964, Biden 2021); training is the rest.
5. **Balance**: in each split the larger class is cut to the size of the smaller one by a
   random sample (`seed`), then each class is capped at `max_per_class` (if given), the
   sample keeping corpus order. Training rows are then shuffled (`seed`); evaluation rows
   stay in corpus order (Moby Dick first).

The same arguments always give the same rows.
"""

from __future__ import annotations

import csv
import dataclasses
import os

import numpy as np

from keras_bert.data.corpus import CORPUS_DIR, read_documents

# file -> (label, every how many documents one is held out for evaluation)
SOURCES = {"moby_dick.txt": ("moby_dick", 5), "sotu.txt": ("sotu", 4)}
LABELS = tuple(label for label, _ in SOURCES.values())


@dataclasses.dataclass(frozen=True)
class SourceExample:
    """One sentence: its `text`, its `label` and where it comes from (`document`, e.g.
    `moby_dick.txt#5`: the 5th document of that file, 1-based)."""

    text: str
    label: str
    document: str


def normalize(text: str) -> str:
    """The key sentences are deduplicated on: lowercased, whitespace collapsed."""
    return " ".join(text.lower().split())


def _sentences(min_words: int, max_words: int, corpus_dir: str):
    """`(example, held_out)` for every kept sentence of the corpus, in corpus order."""
    for filename, (label, every) in SOURCES.items():
        path = os.path.join(corpus_dir, filename)
        for number, document in enumerate(read_documents(path, "prose"), 1):
            for sentence in document:
                if (sentence.startswith("CHAPTER")
                        or not min_words <= len(sentence.split()) <= max_words):
                    continue
                yield SourceExample(sentence, label, f"{filename}#{number}"), number % every == 0


def _balance(examples: list[SourceExample], max_per_class: int | None,
             rng: np.random.Generator) -> list[SourceExample]:
    by_label = {label: [ex for ex in examples if ex.label == label] for label in LABELS}
    size = min(len(rows) for rows in by_label.values())
    if max_per_class is not None:
        size = min(size, max_per_class)
    kept = []
    for rows in by_label.values():
        kept.extend(rows[i] for i in sorted(rng.choice(len(rows), size, replace=False)))
    return kept


def source_task(min_words: int = 8, max_words: int = 50, max_per_class: int | None = None,
                seed: int = 0, corpus_dir: str = CORPUS_DIR) -> dict[str, list[SourceExample]]:
    """The task's `{"train": [...], "eval": [...]}` examples (see the module docstring)."""
    if not 1 <= min_words <= max_words:
        raise ValueError(f"need 1 <= min_words <= max_words, got {min_words} and {max_words}")
    if max_per_class is not None and max_per_class < 1:
        raise ValueError(f"max_per_class must be positive, got {max_per_class}")
    rows = list(_sentences(min_words, max_words, corpus_dir))
    counts: dict[str, int] = {}
    for example, _ in rows:
        key = normalize(example.text)
        counts[key] = counts.get(key, 0) + 1
    rows = [(ex, held_out) for ex, held_out in rows if counts[normalize(ex.text)] == 1]
    rng = np.random.default_rng(seed)
    train = _balance([ex for ex, held_out in rows if not held_out], max_per_class, rng)
    evaluation = _balance([ex for ex, held_out in rows if held_out], max_per_class, rng)
    train = [train[i] for i in rng.permutation(len(train))]
    return {"train": train, "eval": evaluation}


def write_csv(examples: list[SourceExample], path: str) -> str:
    """Writes `text,label,document` rows (the `keras-bert finetune` CSV format)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label", "document"])
        writer.writerows((ex.text, ex.label, ex.document) for ex in examples)
    return path


__all__ = ["LABELS", "SOURCES", "SourceExample", "normalize", "source_task", "write_csv"]
