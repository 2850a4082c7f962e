"""The tiny data the tests train on: a vocabulary of a few dozen words, a random 2-layer BERT
over it as a model directory, and chapters of the embedded Moby Dick."""

from __future__ import annotations

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints.model_dir import save_model_dir
from keras_bert.data.corpus import default_corpus_files

FILLER = ["the", "ship", "sea", "sailed", "over", "a", "calm", "grey", "morning", "crew",
          "sang", "of", "home", "and", "wind", "is", "what", "?", "."]
CITIES = ["paris", "london", "rome", "madrid", "berlin", "vienna"]
FIRST = ["ahab", "ishmael", "queequeg"]
SURNAMES = ["smith", "jones", "brown"]
COUNTRIES = ["france", "england", "italy", "spain", "germany", "austria"]
WORDS = FILLER + CITIES + FIRST + SURNAMES + COUNTRIES + ["whale", "capital"]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_tiny_model_dir(root) -> str:
    """A tiny BERT (random weights from Keras' global generator) over the test vocabulary
    as `root/model`; returns its path."""
    vocab = root / "vocab.txt"
    vocab.write_text("".join(f"{t}\n" for t in SPECIAL + WORDS), encoding="utf-8")
    config = BertConfig(vocab_size=len(SPECIAL) + len(WORDS), hidden_size=32, num_layers=2,
                        num_heads=4, intermediate_size=64, max_position_embeddings=64)
    save_model_dir(BertEncoder(config), str(root / "model"), str(vocab), lower_case=True)
    return str(root / "model")


def moby_chapters(directory, count: int) -> str:
    """Writes the first `count` chapters of the embedded Moby Dick (documents split by two
    blank lines) to `directory/moby.txt`; returns its path."""
    text = open(default_corpus_files()[0], encoding="utf-8").read()
    path = directory / "moby.txt"
    path.write_text("\n\n\n".join(text.split("\n\n\n")[:count]))
    return str(path)
