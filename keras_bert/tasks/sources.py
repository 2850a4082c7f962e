"""Where a task model comes from (`TextTaskModel.from_pretrained`), read in memory:

- a keras_bert model directory, as it is (a fine-tuned model loads whole);
- any other checkpoint layout, local or by hub id (`keras_bert.checkpoints.hub_ids`), opened
  in memory (`keras_bert.checkpoints.formats.open_checkpoint`): a fine-tuned head is read by
  its kind's hook (`task_conversion.held_model`), and the encoder from the checkpoint's own
  arrays;
- `random-NAME`: a BERT of preset size NAME with random weights (the name says so; a bare
  preset name is refused, as it would read as pretrained weights).

Nothing is written on the way (no model directory, no temporary copy), and the encoder is
built once per load, in the precision the caller asks for.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

# The prefix that asks for random weights of a preset size (`random-tiny` ... `random-large`).
RANDOM_PREFIX = "random-"
# The vocabulary of `random-NAME` models: the package's 8k-token uncased WordPiece vocabulary.
RANDOM_VOCAB = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "vocab",
                            "corpus_uncased_8k.txt")


@dataclasses.dataclass(frozen=True)
class Pretrained:
    """What a source holds: `encoder`, what a new head is built on (its `load_encoder(dtype)`
    and `tokenizer()`: a `ModelDir`, an opened `Checkpoint` or a `RandomEncoder`), and the
    fine-tuned model it holds whole, if any: its `model_class` and `build(dtype)`."""

    encoder: object
    model_class: type | None = None
    build: Callable | None = None


@dataclasses.dataclass(frozen=True)
class RandomEncoder:
    """`random-NAME`: a BERT of preset size `name` over `RANDOM_VOCAB` (uncased), its weights
    drawn when the encoder is built; `rules`: its tokenizer rules (None: `google`)."""

    name: str
    rules: str | None = None

    def load_encoder(self, dtype=None):
        """A randomly initialised `BertEncoder` of the preset size, computing in `dtype`."""
        from keras_bert.config import BertConfig
        from keras_bert.models.encoder import BertEncoder
        from keras_bert.text.tokenizer import load_vocab

        config = BertConfig.from_preset(self.name, vocab_size=len(load_vocab(RANDOM_VOCAB)))
        return BertEncoder(config, dtype=dtype)

    def tokenizer(self):
        """The uncased tokenizer of `RANDOM_VOCAB`."""
        from keras_bert.text.rules import DEFAULT_RULES
        from keras_bert.text.tokenizer import BertTokenizer

        return BertTokenizer(RANDOM_VOCAB, lower_case=True, rules=self.rules or DEFAULT_RULES)


def open_source(source: str, rules: str | None = None) -> Pretrained:
    """The source `source` read in memory (see the module docstring); `rules`: its tokenizer
    read with other rules than its own."""
    from keras_bert.checkpoints.formats import KerasBertFormat, detect_format
    from keras_bert.checkpoints.hub_ids import local_checkpoint
    from keras_bert.config import PRESETS

    source = os.fspath(source)
    if not os.path.exists(source) and source.startswith(RANDOM_PREFIX):
        name = source[len(RANDOM_PREFIX):]
        if name not in PRESETS:
            raise ValueError(f"{source!r}: random weights come in the preset sizes "
                             f"{[RANDOM_PREFIX + p for p in PRESETS]}")
        return Pretrained(RandomEncoder(name, rules))
    path = local_checkpoint(source)
    fmt = detect_format(path)
    if isinstance(fmt, KerasBertFormat):
        return _model_directory(path, rules)
    from keras_bert.tasks.task_conversion import held_model, hf_task_architectures

    checkpoint = fmt.open(path, rules=rules)
    held = held_model(checkpoint)
    if held is None:
        checkpoint.refuse_unkept_heads(hf_task_architectures())
        return Pretrained(checkpoint)
    return Pretrained(checkpoint, held.model_class, lambda dtype: held.build(dtype)[0])


def _model_directory(path: str, rules: str | None) -> Pretrained:
    """A keras_bert model directory: a fine-tuned one holds its kind's model."""
    from keras_bert.tasks.registry import task_class
    from keras_bert.tasks.task_dir import read_task_dir

    saved = read_task_dir(path, rules)
    if "task" not in saved.model_dir.metadata:
        return Pretrained(saved.model_dir)
    model_class = task_class(saved.kind)
    return Pretrained(saved.model_dir, model_class,
                      lambda dtype: model_class._restore(saved, dtype))
