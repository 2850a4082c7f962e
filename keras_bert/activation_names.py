"""Which activation a BERT encoder computes, and how each checkpoint format names it: one
table per format, each following the code that reads that format.

keras_bert's own names (`BertConfig.hidden_act`, and so the `keras_bert.json` of a model
directory) say which GELU a model computes: `gelu_exact` is x * Phi(x), with the erf
(Hendrycks & Gimpel 2016), `gelu_approximate` its tanh approximation
0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The word "gelu" alone means one in some
formats and the other in others, so keras_bert never uses it for a model of its own:

- Google's layout (the `bert_config.json` of the TF1 releases): `modeling.py`'s
  `get_activation` maps "gelu" to its `gelu`, the tanh form; it knows "relu" and "tanh" too.
- Model Garden's layout, and the TF Hub / Kaggle SavedModels its exporter writes:
  `tf_utils.get_activation("gelu")` is `official.modeling.activations.gelu`, the tanh form.
- Hugging Face's `config.json`: `transformers`' `ACT2FN` maps "gelu" to the erf GELU and
  "gelu_new" and "gelu_pytorch_tanh" to the tanh form.
- A keras-hub preset names no activation: its `BertBackbone` always computes keras-hub's
  `gelu_approximate`, the tanh form.
- A keras_bert model directory written before these names holds "gelu": the erf GELU it
  computed then (Keras' own `gelu`), and it still reads so.

A format without a name for what a model computes cannot hold the model unchanged: its
`write` refuses, and says how to go on.
"""

from __future__ import annotations

import dataclasses

EXACT = "gelu_exact"
APPROXIMATE = "gelu_approximate"
# `BertConfig.hidden_act`'s values: keras_bert's own names.
HIDDEN_ACTS = (EXACT, APPROXIMATE, "relu", "tanh", "silu")
# The message that asks for a GELU by name; "gelu" alone names neither.
WHICH_GELU = (f"say which GELU: {EXACT!r} (erf; Hugging Face's 'gelu') or {APPROXIMATE!r} "
              f"(the tanh approximation; Google's and Model Garden's 'gelu')")


class UnwritableActivationError(ValueError):
    """A model computes an activation that a format has no name for."""


@dataclasses.dataclass(frozen=True)
class ActivationNames:
    """How one format names the encoder's hidden activation.

    `reads`: its names -> ours; `writes`: ours -> the name it writes (an activation absent
    there is one its code cannot compute); `default`: its name where a file names none;
    `gelu`: what its code computes for a GELU, as messages say it."""

    layout: str
    reads: dict[str, str]
    writes: dict[str, str]
    default: str
    gelu: str

    def read(self, name: str | None, where: str) -> str:
        """Our name for the activation that `where` (a file, for messages) names `name`
        (None: the format's default)."""
        name = self.default if name is None else name
        if name not in self.reads:
            raise ValueError(f"{where}: hidden_act {name!r} is not one of {self.layout}'s "
                             f"{sorted(self.reads)}")
        return self.reads[name]

    def write(self, hidden_act: str) -> str:
        """The name this format writes for our `hidden_act`; `UnwritableActivationError`
        where its code cannot compute it."""
        if hidden_act in self.writes:
            return self.writes[hidden_act]
        if hidden_act == EXACT and APPROXIMATE in self.writes:
            raise UnwritableActivationError(
                f"this model computes the exact (erf) GELU, and {self.layout} has no name "
                f"for it ({self.gelu}), so it cannot be written there unchanged: write it "
                f"in Hugging Face's layout, whose 'gelu' is the exact GELU, or approximate it "
                f"on purpose (`keras-bert convert --approximate-gelu`; in Python "
                f"`keras_bert.checkpoints.with_approximate_gelu(encoder)`), which moves its "
                f"outputs by up to a few 1e-3")
        raise UnwritableActivationError(
            f"{self.layout} has no {hidden_act!r} activation (it computes "
            f"{sorted(self.writes)}); this model cannot be written there unchanged")


def _same(*names: str) -> dict[str, str]:
    return {name: name for name in names}


# Google's `modeling.py` (BERT's TF1 code). Reading also takes names its code does not know
# but whose meaning is the same everywhere, as earlier keras_bert versions wrote them.
GOOGLE = ActivationNames(
    "Google's layout",
    reads={"gelu": APPROXIMATE, "gelu_new": APPROXIMATE, "gelu_pytorch_tanh": APPROXIMATE,
           "silu": "silu", "swish": "silu", **_same("relu", "tanh")},
    writes={APPROXIMATE: "gelu", **_same("relu", "tanh")},
    default="gelu", gelu="Google's modeling.py computes 'gelu' with the tanh approximation")

# Model Garden (`official.modeling.tf_utils.get_activation`), for its checkpoints'
# `bert_config.json` and the `inner_activation` its TF Hub exports record.
MODEL_GARDEN = ActivationNames(
    "Model Garden's layout",
    reads={"gelu": APPROXIMATE, **_same("relu", "tanh")},
    writes={APPROXIMATE: "gelu", **_same("relu", "tanh")},
    default="gelu", gelu="Model Garden's 'gelu' is the tanh approximation")

# `transformers.activations.ACT2FN`, by the names a BERT `config.json` uses.
HUGGING_FACE = ActivationNames(
    "Hugging Face's layout",
    reads={"gelu": EXACT, "gelu_new": APPROXIMATE, "gelu_pytorch_tanh": APPROXIMATE,
           "swish": "silu", **_same("relu", "tanh", "silu")},
    writes={EXACT: "gelu", APPROXIMATE: "gelu_new", **_same("relu", "tanh", "silu")},
    default="gelu", gelu="'gelu' is the erf GELU, 'gelu_new' the tanh approximation")

# keras-hub's `BertBackbone`: one activation, named in no file (the name is the function's).
KERAS_HUB = ActivationNames(
    "a keras-hub preset",
    reads={"gelu_approximate": APPROXIMATE}, writes={APPROXIMATE: "gelu_approximate"},
    default="gelu_approximate",
    gelu="keras-hub's BertBackbone always computes the tanh approximation")

# keras_bert's own model directory: our names, and "gelu" of a directory written before
# they said which GELU (the erf GELU, Keras' `gelu`, which those models computed).
KERAS_BERT = ActivationNames(
    "a keras_bert model directory",
    reads={**_same(*HIDDEN_ACTS), "gelu": EXACT}, writes=_same(*HIDDEN_ACTS),
    default=EXACT, gelu="it names both GELUs")

# The table of each `keras_bert.checkpoints.formats` layout, by its name.
BY_FORMAT = {"keras_bert": KERAS_BERT, "tf_hub": MODEL_GARDEN, "model_garden": MODEL_GARDEN,
             "google": GOOGLE, "keras_hub": KERAS_HUB, "huggingface": HUGGING_FACE}
