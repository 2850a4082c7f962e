"""`BertConfig`: the hyper-parameters of a BERT encoder, its presets, and its file formats.

Reads and writes Google's `bert_config.json` (the file shipped beside the released TF1
checkpoints) and Hugging Face's `config.json` (`BertConfig.to_dict()` of `transformers`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from keras_bert.activation_names import (
    EXACT,
    GOOGLE,
    HIDDEN_ACTS,
    HUGGING_FACE,
    KERAS_BERT,
    WHICH_GELU,
    ActivationNames,
)


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Hyper-parameters of a BERT encoder (the fields of Google's `bert_config.json`).

    `hidden_act` is one of `keras_bert.activation_names.HIDDEN_ACTS`: `gelu_exact` (erf) or
    `gelu_approximate` (tanh) for a GELU; each file format's name for it is read and written
    through that format's table there."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = EXACT
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_epsilon: float = 1e-12

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"BertConfig.{name} must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"BertConfig.hidden_size ({self.hidden_size}) must be divisible by "
                f"num_heads ({self.num_heads})")
        if self.hidden_act == "gelu":
            raise ValueError(f"BertConfig.hidden_act 'gelu' names no GELU: {WHICH_GELU}")
        if self.hidden_act not in HIDDEN_ACTS:
            raise ValueError(f"BertConfig.hidden_act {self.hidden_act!r} is not one of "
                             f"{sorted(HIDDEN_ACTS)}")
        for name in ("hidden_dropout", "attention_dropout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0.0 <= value < 1.0:
                raise ValueError(f"BertConfig.{name} must be in [0, 1)")

    @property
    def head_size(self) -> int:
        """Width of one attention head."""
        return self.hidden_size // self.num_heads

    def replace(self, **changes) -> BertConfig:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Our own JSON form (the field names of this class)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BertConfig:
        """Inverse of `to_dict`; unknown keys are an error. A dict written before
        `hidden_act` said which GELU holds "gelu": the erf GELU (`activation_names.KERAS_BERT`)."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"Unknown BertConfig fields: {unknown}")
        if "hidden_act" in d:
            d = {**d, "hidden_act": KERAS_BERT.read(d["hidden_act"], "BertConfig")}
        return cls(**d)

    # ----- Google's bert_config.json -------------------------------------------------------

    def to_google_dict(self, names: ActivationNames = GOOGLE) -> dict[str, Any]:
        """The dict of Google's `bert_config.json`, its `hidden_act` in `names` (Model
        Garden writes Google's fields with its own names); a model whose activation Google's
        code cannot compute is refused (`ActivationNames.write`)."""
        return {
            "attention_probs_dropout_prob": self.attention_dropout,
            "hidden_act": names.write(self.hidden_act),
            "hidden_dropout_prob": self.hidden_dropout,
            "hidden_size": self.hidden_size,
            "initializer_range": self.initializer_range,
            "intermediate_size": self.intermediate_size,
            "max_position_embeddings": self.max_position_embeddings,
            "num_attention_heads": self.num_heads,
            "num_hidden_layers": self.num_layers,
            "type_vocab_size": self.type_vocab_size,
            "vocab_size": self.vocab_size,
        }

    @classmethod
    def from_google_dict(cls, d: dict[str, Any], names: ActivationNames = GOOGLE) -> BertConfig:
        """Reads the dict of Google's `bert_config.json`: its "gelu" is the tanh
        approximation Google's `modeling.py` computes. `names`: the activation names of
        another file with these fields (`from_hf_dict` reads Hugging Face's)."""
        try:
            act = names.read(d.get("hidden_act"), f"{names.layout} config")
            return cls(
                vocab_size=int(d["vocab_size"]),
                hidden_size=int(d["hidden_size"]),
                num_layers=int(d["num_hidden_layers"]),
                num_heads=int(d["num_attention_heads"]),
                intermediate_size=int(d["intermediate_size"]),
                hidden_act=act,
                hidden_dropout=float(d.get("hidden_dropout_prob", 0.1)),
                attention_dropout=float(d.get("attention_probs_dropout_prob", 0.1)),
                max_position_embeddings=int(d.get("max_position_embeddings", 512)),
                type_vocab_size=int(d.get("type_vocab_size", 2)),
                initializer_range=float(d.get("initializer_range", 0.02)),
                layer_norm_epsilon=float(d.get("layer_norm_eps", 1e-12)),
            )
        except KeyError as e:
            raise ValueError(f"BERT config is missing the field {e.args[0]!r}") from None

    # ----- Hugging Face config.json --------------------------------------------------------

    def to_hf_dict(self) -> dict[str, Any]:
        """The dict of a Hugging Face `BertModel` `config.json` (the exact GELU is "gelu",
        the tanh approximation "gelu_new")."""
        d = self.to_google_dict(HUGGING_FACE)
        d.update({"architectures": ["BertModel"], "model_type": "bert",
                  "layer_norm_eps": self.layer_norm_epsilon, "pad_token_id": 0,
                  "position_embedding_type": "absolute"})
        return d

    @classmethod
    def from_hf_dict(cls, d: dict[str, Any]) -> BertConfig:
        """Reads a Hugging Face `config.json` dict of a BERT model."""
        model_type = d.get("model_type", "bert")
        if model_type != "bert":
            raise ValueError(f"Not a BERT config: model_type is {model_type!r}")
        pos = d.get("position_embedding_type", "absolute")
        if pos != "absolute":
            raise ValueError(f"Unsupported position_embedding_type {pos!r} (only 'absolute')")
        return cls.from_google_dict(d, HUGGING_FACE)

    # ----- files ---------------------------------------------------------------------------

    def save_json(self, path: str | os.PathLike, flavor: str = "keras_bert") -> None:
        """Writes the config as JSON: flavor `keras_bert`, `google` or `hf`."""
        writers = {"keras_bert": self.to_dict, "google": self.to_google_dict,
                   "hf": self.to_hf_dict}
        if flavor not in writers:
            raise ValueError(f"flavor must be one of {sorted(writers)}, got {flavor!r}")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(writers[flavor](), f, indent=2, sort_keys=True)
            f.write("\n")

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> BertConfig:
        """Reads any of the three JSON flavours, recognised by their keys: ours has
        `num_layers`; Hugging Face's has `model_type`, or is named `config.json` (older ones
        have no `model_type`); any other is Google's (`bert_config.json`). The flavour
        decides what its "gelu" is."""
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        if "num_layers" in d:
            return cls.from_dict(d)
        if "model_type" in d or os.path.basename(path) == "config.json":
            return cls.from_hf_dict(d)
        return cls.from_google_dict(d)

    @classmethod
    def from_preset(cls, name: str, **overrides) -> BertConfig:
        """One of `PRESETS` (`tiny` ... `large`), optionally with fields overridden."""
        if name not in PRESETS:
            raise ValueError(f"Unknown preset {name!r}; choose one of {list(PRESETS)}")
        return PRESETS[name].replace(**overrides)


def _preset(layers: int, hidden: int, heads: int) -> BertConfig:
    return BertConfig(hidden_size=hidden, num_layers=layers, num_heads=heads,
                      intermediate_size=4 * hidden)


# The sequence length a model is trained and served at when none is given: BERT's fine-tuning
# length and its phase-1 pretraining length (Devlin et al. 2018, appendix A). The one home of
# that default: the preprocessor, the jobs, the task models and the command line read it here.
DEFAULT_SEQ_LENGTH = 128


def default_doc_stride(seq_length: int) -> int:
    """How far windows over a long text advance by default at `seq_length`: half a
    window, at most 128 word pieces (the original `run_squad.py`'s 128 at length 384; span
    QA, taggers and sentence-level windows all read it here)."""
    return max(min(128, int(seq_length) // 2), 1)

def default_max_query_length(seq_length: int) -> int:
    """The question's word pieces span QA keeps by default at `seq_length`: 64 (the
    original `run_squad.py`'s at length 384), at most half the length."""
    return min(64, int(seq_length) // 2)


# The sizes of Google's released BERT models (Turc et al. 2019 for the small ones).
PRESETS: dict[str, BertConfig] = {
    "tiny": _preset(2, 128, 2),
    "mini": _preset(4, 256, 4),
    "small": _preset(4, 512, 8),
    "medium": _preset(8, 512, 8),
    "base": _preset(12, 768, 12),
    "large": _preset(24, 1024, 16),
}


# The optimizers a pretraining run may use (`keras_bert.training.optimizer`): BERT's AdamW,
# and LAMB for large batches.
OPTIMIZERS = ("adamw", "lamb")

# The vector a sentence-level head reads: BERT's pooler output, the last layer at [CLS], or
# the masked mean of the last layer (`keras_bert.models.pooling`).
POOLING_MODES = ("pooled", "cls", "mean")

# How a sentence-level model reads a text longer than its sequence length (the task block
# records it; `keras_bert.text.sentence_windows` reads the windows, in graph).
READING_MODES = ("truncate", "windows")
AGGREGATIONS = ("mean", "max", "first")


@dataclasses.dataclass(frozen=True)
class LongTextReading:
    """How a sentence-level model reads texts longer than its sequence length.

    `mode`: `truncate` or `windows`; `doc_stride`: how far window starts advance, in word
    pieces (None: `keras_bert.config.default_doc_stride`); `max_windows`: the most windows
    read per text (the rest of a longer text is not read, and `truncated` says so);
    `aggregate`: how the windows' logits become the text's (`mean`, `max`, `first`;
    regression takes the mean).
    """

    mode: str = "truncate"
    doc_stride: int | None = None
    max_windows: int = 8
    aggregate: str = "mean"

    def __post_init__(self):
        if self.mode not in READING_MODES:
            raise ValueError(f"long-text reading must be one of {READING_MODES}, got "
                             f"{self.mode!r}")
        if self.aggregate not in AGGREGATIONS:
            raise ValueError(f"window aggregation must be one of {AGGREGATIONS}, got "
                             f"{self.aggregate!r}")
        if self.doc_stride is not None and int(self.doc_stride) < 1:
            raise ValueError(f"doc_stride must be at least 1, got {self.doc_stride}")
        if int(self.max_windows) < 1:
            raise ValueError(f"max_windows must be at least 1, got {self.max_windows}")

    @property
    def windowed(self) -> bool:
        """Whether texts are read in windows."""
        return self.mode == "windows"

    def stride(self, seq_length: int) -> int:
        """The stride at `seq_length`: `doc_stride`, else `default_doc_stride`."""
        return int(self.doc_stride or default_doc_stride(seq_length))

    @classmethod
    def at_length(cls, reading: LongTextReading | str, seq_length: int) -> LongTextReading:
        """`reading` (a mode name, or a `LongTextReading`) with its stride made explicit at
        `seq_length`, as `keras-bert finetune` records it."""
        if isinstance(reading, str):
            reading = cls(reading)
        return dataclasses.replace(reading, doc_stride=reading.stride(seq_length))

    def block(self) -> dict:
        """The task block's `long_text` entry."""
        return dataclasses.asdict(self)

    @classmethod
    def from_block(cls, block: dict | None) -> LongTextReading:
        """The reading a task block records (none: `truncate`, as before windows)."""
        return cls(**(block or {}))
