"""How far the LiteRT file's tokenizer (TF Text's FastBertTokenizer, uncased) is from
Google's and Hugging Face's rules, measured on the tokenizer tests' parity corpora.

The reference is `BertTokenizer` (itself checked line for line against Google's
`tokenization.py` and Hugging Face's `tokenizers` in `tests/text/test_tokenizer_upstream.py`)
on the same lines: the embedded corpus, the hard cases and the sampled Unicode scalar values
(each between two letters, and 16 in a row). The file's ids are first shown to be
`FastBertTokenizer`'s own, through LiteRT's interpreter, on every one of these lines; the
differences are then counted and every differing scalar value is put in a class. The counts
are those `docs/litert.md` gives; a change of TF Text or of Python's Unicode database
changes them, and this test says so.

`python -m tests.export.test_litert_tokenizer` prints the table.
"""

import collections
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export.litert_text import LiteRTTokenizer
from keras_bert.text.tokenizer import BertTokenizer, load_vocab
from tests.support.tokenizer_parity import corpus_lines, uncased_vocab_path
from tests.text.code_points import groups_of_16, sampled_scalars
from tests.text.test_tokenizer import HARD_CASES

# Where FastBertTokenizer parts from the rules: the class of each differing scalar value.
CONTROL = "control or format character (Cc, Cf, U+FFFD): dropped by the rules, a space in FastBert"
COMPAT = "compatibility character (NFKC differs from NFD): kept by the rules, folded by FastBert"
FOLDING = ("case folding other than lower-casing (ß -> ss): lower-cased by the rules, "
           "folded by FastBert")
PRIVATE = "private use (Co): dropped by huggingface's rules, kept by FastBert"
UNASSIGNED = "unassigned in Python's Unicode database (Cn): FastBert's ICU assigns some"

OTHER = "other"


def _measured(in_a_row: tuple[int, int], between: tuple[int, int], compat: int, control: int,
              folding: int, unassigned: int, other: int = 0) -> dict:
    """The figures of one Unicode database, `google`'s and `huggingface`'s (which also drops
    the 9 private-use scalars the sample holds)."""
    classes = {COMPAT: compat, CONTROL: control, FOLDING: folding, UNASSIGNED: unassigned,
               **({OTHER: other} if other else {})}
    return {rules: {"corpus": 0, "hard cases": 12, "scalars in a row": in_a_row[i],
                    "scalars between letters": between[i],
                    "classes": {**classes, **({PRIVATE: 9} if i else {})}}
            for i, rules in enumerate(("google", "huggingface"))}


# Measured with TF Text 2.21.1, per Python's Unicode database (`unicodedata.unidata_version`:
# Python 3.10's 13.0, 3.11's 14.0, 3.12's 15.0, 3.13's 15.1; CI rotates through all four).
# The sampled scalars and their classes come from that database, so the counts move with it;
# docs/litert.md gives them.
MEASURED = {
    "13.0.0": _measured((152, 159), (768, 777), 625, 77, 34, 31, other=1),
    "14.0.0": _measured((149, 156), (770, 779), 643, 79, 32, 16),
    "15.0.0": _measured((146, 153), (769, 778), 645, 79, 32, 13),
    "15.1.0": _measured((144, 151), (767, 776), 643, 79, 32, 13),
}


def difference_class(code_point: int) -> str:
    """The class of a scalar value whose line FastBert tokenizes differently."""
    ch = chr(code_point)
    category = unicodedata.category(ch)
    if category in ("Cc", "Cf") or code_point == 0xFFFD:
        return CONTROL
    if category == "Co":
        return PRIVATE
    if category == "Cn":
        return UNASSIGNED
    if unicodedata.normalize("NFKC", ch) != unicodedata.normalize("NFC", ch):
        return COMPAT
    if ch.casefold() != ch.lower():
        return FOLDING
    return OTHER


def fast_bert(vocab: list[str], rules: str) -> LiteRTTokenizer:
    """The tokenizer the LiteRT export puts in the file for an uncased model."""
    return LiteRTTokenizer(BertTokenizer(vocab, lower_case=True, rules=rules))


def parity_lines() -> dict[str, list[str]]:
    scalars = sampled_scalars()
    return {"corpus": corpus_lines(), "hard cases": HARD_CASES,
            "scalars in a row": groups_of_16(scalars),
            "scalars between letters": ["a" + chr(c) + "a" for c in scalars]}


def _ids(tokenizer, lines: list[str]) -> list[list[int]]:
    data = tf.constant([line.encode("utf-8", "surrogatepass") for line in lines])
    return tokenizer.tokenize(data).to_list()


def measure(rules: str) -> dict:
    """Differing lines per corpus, and the classes of the differing scalar values."""
    vocab = load_vocab(uncased_vocab_path())
    ours, fast = BertTokenizer(vocab, lower_case=True, rules=rules), fast_bert(vocab, rules)
    found = {}
    for name, lines in parity_lines().items():
        found[name] = sum(a != b for a, b in zip(_ids(ours, lines), _ids(fast, lines),
                                                   strict=True))
    scalars = sampled_scalars()
    lines = ["a" + chr(c) + "a" for c in scalars]
    classes = collections.Counter(
        difference_class(c) for c, a, b in zip(scalars, _ids(ours, lines), _ids(fast, lines),
                                               strict=True) if a != b)
    found["classes"] = dict(classes)
    return found


@pytest.mark.parametrize("rules", ["google", "huggingface"])
def test_measured_difference_is_the_documented_one(rules):
    version = unicodedata.unidata_version
    assert version in MEASURED, (f"Unicode {version} has no measured figures: run `python -m "
                                 "tests.export.test_litert_tokenizer` and add them")
    assert measure(rules) == MEASURED[version][rules]


def test_the_file_tokenizes_as_fast_bert(tmp_path):
    """The LiteRT interpreter's TF Text kernels give FastBertTokenizer's ids (TensorFlow's
    kernels) on every parity line, so the measurement above is the file's."""
    pytest.importorskip("ai_edge_litert")
    from keras_bert.export.litert_runtime import make_interpreter

    vocab = load_vocab(uncased_vocab_path())
    fast = fast_bert(vocab, "google")
    module = tf.Module()
    module.f = tf.function(lambda text: {"ids": fast.tokenize(text).to_tensor(-1)},
                           input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [module.f.get_concrete_function()], module)
    converter.allow_custom_ops = True
    runner = make_interpreter(converter.convert()).get_signature_runner()
    for lines in parity_lines().values():
        want = _ids(fast, lines)
        for line, ids in zip(lines, want, strict=True):
            got = runner(text=np.array([line.encode("utf-8", "surrogatepass")], dtype=object))
            assert [i for i in got["ids"][0].tolist() if i != -1] == ids, repr(line[:40])


if __name__ == "__main__":
    print("Unicode", unicodedata.unidata_version)
    for name in ("google", "huggingface"):
        print(name, measure(name))
