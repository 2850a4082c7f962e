"""Training curves as a PNG (loss and accuracy per epoch, train and validation)."""

from __future__ import annotations

import math


def plot_history(history: dict[str, list[float]], path: str, title: str = "training",
                 baselines: dict[str, tuple[float, str]] | None = None) -> str:
    """Draws every metric of a Keras `History.history` (one panel per metric, `val_*` on the
    same panel as its training curve) and writes `path`.

    `baselines` maps a metric to `(value, name)`, drawn as a dashed reference line on its
    panel (e.g. the majority class for an accuracy): what the curve must beat to mean
    anything."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [k for k in history if not k.startswith("val_") and k != "learning_rate"]
    if not names:
        raise ValueError("history has no metrics to plot")
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        values = history[name]
        epochs = range(1, len(values) + 1)
        ax.plot(epochs, values, marker="o", markersize=3, label="train")
        if f"val_{name}" in history:
            ax.plot(epochs, history[f"val_{name}"], marker="o", markersize=3, label="eval")
        value, label = (baselines or {}).get(name, (None, None))
        if value is not None and math.isfinite(value):
            ax.axhline(value, color="grey", linestyle="--", linewidth=1,
                       label=f"{label} {value:.3f}")
        if ax.get_legend_handles_labels()[0][1:]:
            ax.legend(fontsize=8)
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
