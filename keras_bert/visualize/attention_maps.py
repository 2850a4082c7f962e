"""Attention heat maps: each layer's and head's attention probabilities over the tokens, as a PNG.

`text_attention(model_dir, text)` runs the model on one text (or pair) and returns its tokens
and probabilities; `plot_attention(probs, tokens, path)` draws them: one panel per (layer,
head), a row per layer and a column per head, queries down the rows, keys along the columns,
token labels on both axes, one colour scale (0 to the largest probability drawn).

The figure size is fixed by the panel count, so the PNG is exactly
`(heads * cell) x (layers * cell + TITLE_INCHES)` inches at `DPI` dots per inch, where
`cell = max(MIN_PANEL_INCHES, INCHES_PER_TOKEN * tokens) + LABEL_INCHES`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

DPI = 100
INCHES_PER_TOKEN = 0.16
MIN_PANEL_INCHES = 2.0
LABEL_INCHES = 0.9  # room for the token labels and the panel title
TITLE_INCHES = 0.6


def figure_inches(num_layers: int, num_heads: int, num_tokens: int) -> tuple[float, float]:
    """`(width, height)` of the heat map figure, in inches (see the module docstring): a
    quarter of a pixel over the whole number of pixels the layout rounds to, because
    Matplotlib truncates inches x dpi in some releases (3.10) and rounds it in others (3.11),
    and a product such as 5.02 x 100 falls just under 502 in floating point."""
    cell = max(MIN_PANEL_INCHES, INCHES_PER_TOKEN * num_tokens) + LABEL_INCHES
    width, height = num_heads * cell, num_layers * cell + TITLE_INCHES
    return (round(width * DPI) + 0.25) / DPI, (round(height * DPI) + 0.25) / DPI


def text_attention(model_dir, text: str, text_b: str | None = None,
                   max_length: int = 64) -> tuple[list[str], np.ndarray]:
    """`(tokens, probs)` of one text (or pair) through a keras_bert model directory.

    `tokens` are the packed wordpieces (`[CLS] ... [SEP]`, truncated to `max_length`);
    `probs` is float32 `[layers, heads, tokens, tokens]` (see `BertEncoder.attention_probs`).
    `model_dir` is a path or a `ModelDir`; a fine-tuned directory gives its encoder's attention.
    """
    from keras_bert.checkpoints.model_dir import ModelDir, load_model_dir

    if not isinstance(model_dir, ModelDir):
        model_dir = load_model_dir(model_dir)
    if not 3 <= max_length <= model_dir.config.max_position_embeddings:
        raise ValueError(f"max_length must be in [3, {model_dir.config.max_position_embeddings}]"
                         f", got {max_length}")
    preprocessor = model_dir.preprocessor().with_length(None, max_length)
    inputs = preprocessor(([text],) if text_b is None else ([text], [text_b]))
    probs = model_dir.load_encoder().attention_probs(inputs)
    tokens = [t.decode("utf-8")
              for t in preprocessor.tokenizer.id_to_token(inputs["input_word_ids"][0]).numpy()]
    return tokens, np.stack([np.asarray(p)[0] for p in probs]).astype(np.float32)


def plot_attention(probs: np.ndarray, tokens: Sequence[str], path: str,
                   layers: Sequence[int] | None = None, title: str | None = None) -> str:
    """Writes the heat map of `probs` `[layers, heads, seq, seq]` (one example) to `path`.

    `layers`: which layers to draw (0-based indices; default all). Uses matplotlib's Agg
    backend (no display needed). Returns `path`.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    probs = np.asarray(probs)
    if probs.ndim != 4 or probs.shape[2] != probs.shape[3]:
        raise ValueError(f"probs must be [layers, heads, seq, seq], got shape {probs.shape}")
    if probs.shape[2] != len(tokens):
        raise ValueError(f"{len(tokens)} tokens for attention over {probs.shape[2]} positions")
    layers = list(range(probs.shape[0])) if layers is None else [int(i) for i in layers]
    bad = [i for i in layers if not 0 <= i < probs.shape[0]]
    if bad or not layers:
        raise ValueError(f"layers must be among 0..{probs.shape[0] - 1}, got {layers}")
    heads = probs.shape[1]
    vmax = float(probs[layers].max())  # one scale for every panel drawn
    fig, axes = plt.subplots(len(layers), heads, squeeze=False, layout="constrained",
                             figsize=figure_inches(len(layers), heads, len(tokens)), dpi=DPI)
    fontsize = 7 if len(tokens) <= 32 else 5
    for row, layer in enumerate(layers):
        for head in range(heads):
            ax = axes[row, head]
            image = ax.imshow(probs[layer, head], vmin=0.0, vmax=vmax, cmap="viridis")
            ax.set_title(f"layer {layer} head {head}", fontsize=8)
            ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=fontsize)
            ax.set_yticks(range(len(tokens)), tokens, fontsize=fontsize)
    fig.colorbar(image, ax=axes, shrink=0.6, label="attention probability")
    fig.suptitle(title or "attention (rows: queries, columns: keys)")
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def attention_title(model_path: str, text: str, text_b: str | None = None,
                    width: int = 48) -> str:
    """A short title: the model's name (its directory, with the run's name for a job's
    `OUT/model`) and the text, cut to `width` characters."""
    parts = os.path.normpath(os.path.abspath(model_path)).split(os.sep)
    name = "/".join(parts[-2:]) if parts[-1] == "model" and len(parts) > 1 else parts[-1]
    shown = text if text_b is None else f"{text} | {text_b}"
    if len(shown) > width:
        shown = shown[:width - 1] + "\u2026"
    return f"{name}: \u201c{shown}\u201d"


def draw_text_attention(model_path: str, text: str, out: str, text_b: str | None = None,
                        rules: str | None = None, layers: Sequence[int] | None = None,
                        max_length: int = 64) -> str:
    """`keras-bert attention`: the heat map of the model directory at `model_path` on one
    text (or pair) written to `out`; returns the line saying what was drawn."""
    from keras_bert.checkpoints.model_dir import load_model_dir

    model_dir = load_model_dir(model_path).with_rules(rules)
    tokens, probs = text_attention(model_dir, text, text_b, max_length)
    plot_attention(probs, tokens, out, layers=layers,
                   title=attention_title(model_dir.path, text, text_b))
    shown = len(layers) if layers else probs.shape[0]
    return f"wrote {out}: {shown} layers x {probs.shape[1]} heads over {len(tokens)} tokens"
