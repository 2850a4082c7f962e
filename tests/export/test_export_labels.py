"""The label names of classifier exports, against labels known in advance: the head's
weights are solved by hand so that each text's logits are chosen values, and the export,
read as TF Serving reads it (`SessionBundle`), must name the labels those logits pick.

`predict` runs the export's own serving functions, so comparing the two cannot see a
wrong name for an id; these tests fix the answer before the model runs.
"""

from __future__ import annotations

import numpy as np
import pytest

from keras_bert import MultiLabelClassifier, TextClassifier
from keras_bert.export.session_bundle import SessionBundle

# Id order that is neither sorted nor its reverse, nor symmetric: a name gathered in any
# other order lands on the wrong id.
LABELS = ["whale", "ahab", "sea", "moby"]
TEXTS = ["the cat sat on the mat", "call me ishmael", "bert reads whole sentences at once",
         "the state of the union is strong", "ahab sailed to sea", "who sat on the mat ?"]
SEQ = 16


@pytest.fixture(scope="module")
def model_dir(tiny_model_dir) -> str:
    """The session's tiny encoder (`tests/conftest.py`), read only."""
    return tiny_model_dir


def _set_logits(model, targets: np.ndarray) -> np.ndarray:
    """Solves the head (a dense layer on the pooled output) so that the network's logits
    for `TEXTS` are `targets` `[texts, labels]`; returns the logits it now gives."""
    features = model.preprocessor(np.array(TEXTS, dtype=object))
    pooled = np.asarray(model.network.encoder(features)["pooled_output"], np.float64)
    design = np.concatenate([pooled, np.ones((len(TEXTS), 1))], axis=1)
    # Fewer texts than pooled dimensions: an exact (least-norm) solution.
    solution = np.linalg.lstsq(design, targets, rcond=None)[0]
    model.network.get_layer("logits").set_weights([solution[:-1].astype(np.float32),
                                                   solution[-1].astype(np.float32)])
    return np.asarray(model.network(features, training=False))


def _served(model, base_dir) -> dict:
    path = model.export(str(base_dir), target=None)  # the op audit has tests of its own
    with open(f"{path}/assets/labels.txt", encoding="utf-8") as f:
        assert f.read().splitlines() == LABELS  # names in id order
    with SessionBundle(path) as bundle:
        return bundle.run("serving_default", {"text": np.array(TEXTS, dtype=object)})


def test_classifier_export_names_the_label_its_logits_pick(model_dir, tmp_path):
    clf = TextClassifier.from_pretrained(model_dir, labels=LABELS, seq_length=SEQ,
                                         precision="float32")
    want = np.array([2, 0, 3, 1, 1, 2])  # each text's label id, chosen here
    targets = np.where(np.arange(len(LABELS)) == want[:, None], 4.0, -4.0)
    np.testing.assert_allclose(_set_logits(clf, targets), targets, atol=1e-3)
    served = _served(clf, tmp_path / "served")
    np.testing.assert_allclose(served["logits"], targets, atol=1e-3)
    assert served["label_id"].tolist() == want.tolist()
    assert [v.decode() for v in served["label"]] == ["sea", "whale", "moby", "ahab", "ahab",
                                                     "sea"]


def test_multilabel_export_names_the_labels_over_their_thresholds(model_dir, tmp_path):
    clf = MultiLabelClassifier.from_pretrained(model_dir, labels=LABELS, seq_length=SEQ,
                                               precision="float32")
    # Logits per text; a label is chosen when its sigmoid reaches 0.5 (logit 0), highest
    # score first.
    targets = np.array([[3.0, -3.0, 1.0, -3.0], [-3.0, -3.0, -3.0, -3.0],
                        [1.0, 2.0, 3.0, -3.0], [-3.0, 3.0, -3.0, 2.0],
                        [-2.0, -1.0, -3.0, 1.0], [2.0, 1.0, 3.0, 4.0]])
    want = [["whale", "sea", "", ""], ["", "", "", ""], ["sea", "ahab", "whale", ""],
            ["ahab", "moby", "", ""], ["moby", "", "", ""], ["moby", "sea", "whale", "ahab"]]
    np.testing.assert_allclose(_set_logits(clf, targets), targets, atol=1e-3)
    served = _served(clf, tmp_path / "served")
    np.testing.assert_allclose(served["scores"], 1 / (1 + np.exp(-targets)), atol=1e-4)
    assert [[v.decode() for v in row] for row in served["labels"]] == want
