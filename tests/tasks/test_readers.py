"""Classification / regression readers, `LabelVocab`, and the packed tf.data pipeline."""

from __future__ import annotations

import os

import numpy as np
import pytest

from keras_bert.tasks.labels import LABELS_FILENAME, LabelVocab
from keras_bert.tasks.readers import TextExample
from keras_bert.tasks.text_classification.readers import (
    classification_dataset,
    multi_hot,
    read_examples,
    regression_dataset,
    text_dataset,
)
from keras_bert.text import BertTokenizer
from keras_bert.text.preprocessor import BertPreprocessor
from tests.support.reference import minilm_dir


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(os.path.join(minilm_dir(), "vocab.txt"))


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


CSV = ('text,label,extra\n'
       '"Hello, world",pos,1\n'
       '"He said ""hi""",neg,2\n'
       '"two\nlines",pos,3\n'
       'plain,neg,4\n')


def test_csv_with_quoted_commas(tmp_path):
    examples = read_examples(_write(tmp_path, "train.csv", CSV))
    assert [ex.text for ex in examples] == ["Hello, world", 'He said "hi"', "two\nlines",
                                            "plain"]
    assert [ex.label for ex in examples] == ["pos", "neg", "pos", "neg"]
    # header = line 1; the quoted line break makes the third record lines 4-5
    assert [ex.line for ex in examples] == [2, 3, 4, 6]
    assert examples[0].text_b is None
    # a spreadsheet's byte-order mark does not hide the first column's name
    bom = tmp_path / "bom.csv"
    bom.write_bytes("\ufefftext,label\nhi,pos\n".encode())
    assert read_examples(bom)[0].text == "hi"


def test_tsv_pairs_regression_without_quoting(tmp_path):
    path = _write(tmp_path, "sts.tsv", 'sentence1\tsentence2\tscore\n'
                  'A "quoted" man\tA man\t4.5\n'
                  'cats\tdogs\t 0 \n')
    examples = read_examples(path, "sentence1", "sentence2", "score", task="regression")
    assert examples[0] == TextExample('A "quoted" man', "A man", 4.5, 2)  # quotes kept
    assert examples[1].label == 0.0


def test_jsonl(tmp_path):
    path = _write(tmp_path, "dev.jsonl", '{"text": "good", "label": "pos"}\n\n'
                  '{"text": "bad", "label": 0, "id": 7}\n')
    examples = read_examples(path)
    assert [(ex.text, ex.label, ex.line) for ex in examples] == [("good", "pos", 1),
                                                                 ("bad", "0", 3)]
    unlabeled = read_examples(path, label_column=None)
    assert unlabeled[1].label is None


def test_multilabel_csv_and_jsonl(tmp_path):
    csv_path = _write(tmp_path, "ml.csv", "text,label\none,b|a\nnone,\nspaced, a | c \n")
    assert [ex.label for ex in read_examples(csv_path, task="multilabel")] == [
        ("b", "a"), (), ("a", "c")]
    jsonl = _write(tmp_path, "ml.jsonl", '{"text": "x", "label": ["c", "a"]}\n'
                   '{"text": "y", "label": []}\n{"text": "z", "label": "a|b"}\n')
    examples = read_examples(jsonl, task="multilabel")
    assert [ex.label for ex in examples] == [("c", "a"), (), ("a", "b")]
    targets = multi_hot(examples, LabelVocab(["a", "b", "c"]))
    np.testing.assert_array_equal(targets, [[1, 0, 1], [0, 0, 0], [1, 1, 0]])
    assert targets.dtype == np.float32


@pytest.mark.parametrize("name, text, kwargs, message", [
    ("a.csv", "text,score\nhi,1\n", {}, r"a\.csv: line 2: no column 'label'; the available "
     r"columns are 'text', 'score'"),
    ("b.jsonl", '{"text": "x", "label": "a"}\n{"label": "b"}\n', {},
     r"b\.jsonl: line 2: no column 'text'; the available columns are 'label'"),
    ("c.csv", "", {}, r"c\.csv: the file is empty"),
    ("d.tsv", "text\tlabel\n", {}, r"d\.tsv: the file has no data rows"),
    ("e.jsonl", "\n\n", {}, r"e\.jsonl: the file has no data rows"),
    ("f.csv", "text,label\nfine,pos\nhmm,neutral\n", {"labels": LabelVocab(["neg", "pos"])},
     r"f\.csv: line 3: label 'neutral' is not in the label set \['neg', 'pos'\]"),
    ("g.tsv", "text\tlabel\nx\t1.0\ny\tabc\n", {"task": "regression"},
     r"g\.tsv: line 3: the regression target 'abc' is not a finite number"),
    ("h.jsonl", '{"text": "x", "label": "nan"}\n', {"task": "regression"},
     r"h\.jsonl: line 1: the regression target 'nan'"),
    ("i.jsonl", '{"text": "x", "label": "a"}\n{"text": oops}\n', {},
     r"i\.jsonl: line 2: invalid JSON"),
    ("j.csv", "text,label\na,b\nc\n", {}, r"j\.csv: line 3: the row has 1 fields but the header "
     "has 2"),
    ("k.jsonl", '{"text": 5, "label": "a"}\n', {}, r"k\.jsonl: line 1: column 'text' must be "
     "text"),
    ("l.txt", "text\n", {}, r"l\.txt: unknown data format"),
    ("m.csv", "text,label\nx,a||b\n", {"task": "multilabel"},
     r"m\.csv: line 2: an empty label in 'a\|\|b'"),
    ("n.csv", "text,label\nx,a|b|a\n", {"task": "multilabel"},
     r"n\.csv: line 2: label 'a' is repeated"),
    ("o.jsonl", '{"text": "x", "label": ["a", 3]}\n', {"task": "multilabel"},
     r"o\.jsonl: line 1: multi-label labels must be a '\|'-separated string or a list"),
    ("p.jsonl", '{"text": "x", "label": ["a|b"]}\n', {"task": "multilabel"},
     r"p\.jsonl: line 1: label 'a\|b' contains '\|'"),
    ("q.csv", "text,label\nx,a|zz\n", {"task": "multilabel", "labels": ["a", "b"]},
     r"q\.csv: line 2: label 'zz' is not in the label set \['a', 'b'\]"),
])
def test_bad_input_names_file_and_line(tmp_path, name, text, kwargs, message):
    with pytest.raises(ValueError, match=message):
        read_examples(_write(tmp_path, name, text), **kwargs)


def test_label_vocab_sorted_and_saved(tmp_path):
    vocab = LabelVocab.from_labels(["pos", "neg", "pos", "neutral"])
    assert vocab.names == ["neg", "neutral", "pos"]  # sorted, not first-seen
    assert vocab.encode(["pos", "neg"]) == [2, 0] and vocab.decode([1]) == ["neutral"]
    path = vocab.save(tmp_path)  # a directory gets labels.txt
    assert path.endswith(LABELS_FILENAME)
    assert open(path, encoding="utf-8").read() == "neg\nneutral\npos\n"
    assert LabelVocab.load(tmp_path) == vocab
    # a file keeps its own order
    (tmp_path / "order.txt").write_text("O\nB-PER\nI-PER\n", encoding="utf-8")
    assert LabelVocab.load(tmp_path / "order.txt").names == ["O", "B-PER", "I-PER"]
    with pytest.raises(ValueError, match="Unknown label 'other'"):
        vocab.id("other")
    (tmp_path / "bad.txt").write_text("a\n\nb\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2 is blank"):
        LabelVocab.load(tmp_path / "bad.txt")
    (tmp_path / "dup.txt").write_text("a\nb\na\n", encoding="utf-8")
    with pytest.raises(ValueError, match="'a' is repeated"):
        LabelVocab.load(tmp_path / "dup.txt")


def test_classification_dataset_packs_batches(tmp_path, tokenizer):
    examples = read_examples(_write(tmp_path, "train.csv", CSV))
    vocab = LabelVocab.from_labels(ex.label for ex in examples)  # neg = 0, pos = 1
    ds = classification_dataset(examples, BertPreprocessor(tokenizer, 8), vocab, batch_size=3)
    batches = list(ds.as_numpy_iterator())
    assert [len(b[1]) for b in batches] == [3, 1]
    features, labels = batches[0]
    assert labels.tolist() == [1, 0, 1]
    v = {t: i for i, t in enumerate(tokenizer.vocab)}
    # "Hello, world" -> [CLS] hello , world [SEP] [PAD] [PAD] [PAD]
    assert features["input_word_ids"][0].tolist() == [
        v["[CLS]"], v["hello"], v[","], v["world"], v["[SEP]"], 0, 0, 0]
    assert features["input_mask"][0].tolist() == [1, 1, 1, 1, 1, 0, 0, 0]
    assert features["input_type_ids"].sum() == 0


def test_pair_regression_dataset(tokenizer):
    examples = [TextExample("a man", "a dog", 3.5), TextExample("cats", "dogs", 1.0)]
    preprocessor = BertPreprocessor(tokenizer, 10)
    features, targets = next(iter(regression_dataset(examples, preprocessor, batch_size=2)))
    assert targets.numpy().tolist() == [3.5, 1.0]
    # [CLS] a man [SEP] a dog [SEP] -> segment B is positions 4..6
    assert features["input_type_ids"].numpy()[0].tolist() == [0, 0, 0, 0, 1, 1, 1, 0, 0, 0]
    only_inputs = next(iter(text_dataset(examples, preprocessor)))
    assert isinstance(only_inputs, dict)
    np.testing.assert_array_equal(only_inputs["input_word_ids"], features["input_word_ids"])
    with pytest.raises(ValueError, match="line 0: the example has no text_b"):
        text_dataset([examples[0], TextExample("x")], preprocessor)
