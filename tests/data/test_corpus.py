"""Corpus readers and the sentence splitter."""

import json

import pytest

from keras_bert.data.corpus import default_corpus_files, guess_format, read_documents
from keras_bert.data.sentences import split_sentences


@pytest.mark.parametrize("text, expected", [
    ("Call me Ishmael. Some years ago I went to sea.",
     ["Call me Ishmael.", "Some years ago I went to sea."]),
    ("Mr. Starbuck spoke to Dr. Bunger. Then he left!",
     ["Mr. Starbuck spoke to Dr. Bunger.", "Then he left!"]),
    ('"Is it you?" he asked. "Aye."', ['"Is it you?" he asked.', '"Aye."']),
    ("It was plan b. Then c.", ["It was plan b.", "Then c."]),
    ("J. Q. Adams was elected in 1824. He served one term.",
     ["J. Q. Adams was elected in 1824.", "He served one term."]),
    ("The price rose 3.5 percent. Markets fell.", ["The price rose 3.5 percent.", "Markets fell."]),
    ("no final stop", ["no final stop"]),
    ("   \n ", []),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_sentences_format(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("First sentence.\nSecond one.\n\n\nOther doc.\n  \nThird doc line.\n")
    assert list(read_documents(str(path), "sentences")) == [
        ["First sentence.", "Second one."], ["Other doc."], ["Third doc line."]]
    assert guess_format(str(path)) == "sentences"


def test_prose_and_jsonl(tmp_path):
    prose = tmp_path / "p.txt"
    prose.write_text("One. Two is here. Three!\nStill three's paragraph. Four.\n\nNew doc. Ok.\n")
    docs = list(read_documents(str(prose), "prose"))
    assert docs == [["One.", "Two is here.", "Three!", "Still three's paragraph.", "Four."],
                    ["New doc.", "Ok."]]
    assert guess_format(str(prose)) == "prose"
    chapters = tmp_path / "book.txt"
    chapters.write_text("CHAPTER 1. Start.\n\nOne. Two.\n\nThree.\n\n\nCHAPTER 2. End.\n\nFour.\n")
    assert list(read_documents(str(chapters), "prose")) == [
        ["CHAPTER 1.", "Start.", "One.", "Two.", "Three."], ["CHAPTER 2.", "End.", "Four."]]
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text(json.dumps({"body": "A b. C d."}) + "\n\n" + json.dumps({"body": ""}) + "\n")
    assert list(read_documents(str(jsonl), "jsonl", text_field="body")) == [["A b.", "C d."]]
    assert guess_format(str(jsonl)) == "jsonl"


def test_jsonl_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine."}\n{"txt": "oops"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: expected a JSON object with a 'text'"):
        list(read_documents(str(path), "jsonl"))
    with pytest.raises(ValueError, match="Unknown corpus format"):
        list(read_documents(str(path), "xml"))


def test_embedded_corpus_is_there():
    files = default_corpus_files()
    assert len(files) >= 2
    docs = [d for f in files for d in read_documents(f, guess_format(f))]
    assert len(docs) > 100 and sum(len(d) for d in docs) > 5000
    assert sum(d[0].startswith("CHAPTER") for d in docs) == 112  # a document per chapter
