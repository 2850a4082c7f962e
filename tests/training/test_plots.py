"""Training curves: one panel per metric, with the baselines a reader needs as lines."""

from __future__ import annotations

import matplotlib
import pytest

from keras_bert.training.plots import plot_history

matplotlib.use("Agg")


@pytest.fixture
def figures(monkeypatch):
    """The figures `plot_history` saves (captured before they are closed)."""
    from matplotlib.figure import Figure

    saved, original = [], Figure.savefig

    def capture(self, *args, **kwargs):
        saved.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    return saved


def test_baselines_are_drawn_on_their_panels(tmp_path, figures):
    history = {"loss": [0.7, 0.5], "accuracy": [0.6, 0.8], "val_accuracy": [0.55, 0.75]}
    path = plot_history(history, str(tmp_path / "c.png"), title="t",
                        baselines={"accuracy": (0.57, "majority class"),
                                   "loss": (None, "unknown")})
    assert open(path, "rb").read(4) == b"\x89PNG"
    loss, accuracy = figures[0].axes[:2]
    assert accuracy.get_title() == "accuracy" and loss.get_title() == "loss"
    dashed = [line for line in accuracy.get_lines() if line.get_linestyle() == "--"]
    assert [list(line.get_ydata()) for line in dashed] == [[0.57, 0.57]]
    assert "majority class 0.570" in [t.get_text() for t in accuracy.get_legend().get_texts()]
    assert not [line for line in loss.get_lines() if line.get_linestyle() == "--"]
