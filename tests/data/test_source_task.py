"""The "which source is this sentence from" task: labels, split, dedupe, balance, determinism."""

from __future__ import annotations

import csv
from collections import Counter

import pytest

from keras_bert.data.source_task import normalize, source_task, write_csv
from keras_bert.tasks.text_classification.readers import read_examples


def _document(name: str, extra: list[str] = ()) -> str:
    """A paragraph of three 8-word sentences naming `name`, plus `extra` sentences."""
    sentences = [f"This is sentence {i} of the {name} document." for i in range(3)]
    return " ".join(sentences + list(extra))


@pytest.fixture
def corpus_dir(tmp_path):
    """A small corpus in the embedded layout: 10 chapters and 8 speeches (prose format,
    documents separated by two blank lines)."""
    shared = "A sentence both sources contain, word for word, here."
    chapters = []
    for n in range(1, 11):
        extra = [f"CHAPTER {n} heading words that would give it away."]
        if n == 1:
            extra += ["Too short to keep.", shared]
        chapters.append(_document(f"chapter {n}", extra))
    speeches = [_document(f"speech {n}", [shared.upper()] if n == 2 else [])
                for n in range(1, 9)]
    (tmp_path / "moby_dick.txt").write_text("\n\n\n".join(chapters) + "\n", encoding="utf-8")
    (tmp_path / "sotu.txt").write_text("\n\n\n".join(speeches) + "\n", encoding="utf-8")
    return str(tmp_path)


def test_rule_on_a_hand_made_corpus(corpus_dir):
    task = source_task(corpus_dir=corpus_dir, seed=3)
    train, evaluation = task["train"], task["eval"]
    # Labels by file; held out: chapters 5 and 10, speeches 4 and 8 (by document number).
    for ex in train + evaluation:
        name = ex.text.split(" of the ")[1].removesuffix(" document.")
        kind, number = name.split()
        assert ex.label == {"chapter": "moby_dick", "speech": "sotu"}[kind]
        file = "moby_dick.txt" if kind == "chapter" else "sotu.txt"
        assert ex.document == f"{file}#{number}"
    assert {ex.document for ex in evaluation} == {
        "moby_dick.txt#5", "moby_dick.txt#10", "sotu.txt#4", "sotu.txt#8"}
    # The two speeches (6 sentences) bound the held-out chapters' 6 too; 6 of the 8
    # training chapters' 24 sentences are sampled to match the 6 training speeches' 18.
    assert Counter(ex.label for ex in evaluation) == {"moby_dick": 6, "sotu": 6}
    assert Counter(ex.label for ex in train) == {"moby_dick": 18, "sotu": 18}
    texts = [ex.text for ex in train + evaluation]
    assert not any(t.startswith("CHAPTER") or t == "Too short to keep." for t in texts)
    # The sentence in chapter 1 and (upper-cased) in speech 2 is dropped from both.
    assert not any("both sources" in t.lower() for t in texts)


def test_real_corpus_labels_on_hand_checked_sentences():
    task = source_task()
    train = {ex.text: ex for ex in task["train"]}
    evaluation = {ex.text: ex for ex in task["eval"]}
    # Washington 1790, the first speech of sotu.txt: training.
    washington = ("The abundant fruits of another year have blessed our country with plenty "
                  "and with the means of a flourishing commerce.")
    assert (train[washington].label, train[washington].document) == ("sotu", "sotu.txt#1")
    # Biden 2021, the 12th speech: held out.
    biden = "God bless you all, and may God protect our troops."
    assert (evaluation[biden].label, evaluation[biden].document) == ("sotu", "sotu.txt#12")
    # Moby Dick sentences come from their chapter: chapter numbers are documents.
    for ex in task["train"] + task["eval"]:
        if ex.label == "moby_dick":
            number = int(ex.document.split("#")[1])
            assert 1 <= number <= 112 and (number % 5 == 0) == (ex.text in evaluation)
    assert "Call me Ishmael." not in train  # 3 words: below min_words


def test_real_corpus_splits_do_not_overlap_and_are_balanced():
    task = source_task()
    train, evaluation = task["train"], task["eval"]
    assert not ({normalize(ex.text) for ex in train} & {normalize(ex.text) for ex in evaluation})
    assert not ({ex.document for ex in train} & {ex.document for ex in evaluation})
    assert len({normalize(ex.text) for ex in train}) == len(train)  # no duplicates inside
    for split in (train, evaluation):
        counts = Counter(ex.label for ex in split)
        assert counts["moby_dick"] == counts["sotu"] > 500
        assert all(8 <= len(ex.text.split()) <= 50 for ex in split)
    # The training rows are shuffled: both labels occur in the first 20.
    assert len({ex.label for ex in train[:20]}) == 2


def test_deterministic_and_seeded():
    first, again = source_task(max_per_class=50), source_task(max_per_class=50)
    assert first == again
    other = source_task(max_per_class=50, seed=1)
    assert [ex.text for ex in other["train"]] != [ex.text for ex in first["train"]]
    assert len(first["train"]) == len(first["eval"]) == 100


def test_csv_round_trips_through_the_finetuning_reader(tmp_path, corpus_dir):
    examples = source_task(corpus_dir=corpus_dir)["eval"]
    path = write_csv(examples, str(tmp_path / "eval.csv"))
    rows = read_examples(path)
    assert [(r.text, r.label) for r in rows] == [(ex.text, ex.label) for ex in examples]
    with open(path, encoding="utf-8", newline="") as f:
        assert next(csv.reader(f)) == ["text", "label", "document"]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="min_words"):
        source_task(min_words=10, max_words=5)
    with pytest.raises(ValueError, match="max_per_class"):
        source_task(max_per_class=0)
