"""Where a task model's encoder comes from: a keras_bert model directory as it is, another
checkpoint format converted (a local directory or a hub id, `keras_bert.checkpoints.hub_ids`),
or `random-NAME`: a BERT of preset size NAME with random weights (the name says so; a bare
preset name is refused, as it would read as pretrained weights)."""

from __future__ import annotations

import os
import tempfile

# The prefix that asks for random weights of a preset size (`random-tiny` ... `random-large`).
RANDOM_PREFIX = "random-"


def pretrained_model_dir(source: str) -> str:
    """A keras_bert model directory for `source` (converted into a temporary directory
    when it is another checkpoint format, made when it is `random-NAME`)."""
    from keras_bert.checkpoints.formats import KerasBertFormat, detect_format
    from keras_bert.checkpoints.hub_ids import local_checkpoint
    from keras_bert.config import PRESETS
    from keras_bert.tasks.task_conversion import convert

    source = os.fspath(source)
    if not os.path.exists(source) and source.startswith(RANDOM_PREFIX):
        name = source[len(RANDOM_PREFIX):]
        if name not in PRESETS:
            raise ValueError(f"{source!r}: random weights come in the preset sizes "
                             f"{[RANDOM_PREFIX + p for p in PRESETS]}")
        return _preset_dir(name)
    source = local_checkpoint(source)
    if isinstance(detect_format(source), KerasBertFormat):
        return source
    return convert(source, os.path.join(tempfile.mkdtemp(prefix="keras_bert-"), "model")).path


def _preset_dir(name: str) -> str:
    from keras_bert.checkpoints.model_dir import save_model_dir
    from keras_bert.config import BertConfig
    from keras_bert.models import BertEncoder
    from keras_bert.text.tokenizer import load_vocab

    vocab_file = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "vocab",
                              "corpus_uncased_8k.txt")
    config = BertConfig.from_preset(name, vocab_size=len(load_vocab(vocab_file)))
    path = os.path.join(tempfile.mkdtemp(prefix="keras_bert-"), RANDOM_PREFIX + name)
    return save_model_dir(BertEncoder(config), path, vocab_file, True,
                          metadata={"preset": name}).path
