"""`FitSchedule`'s learning rate, step by step, against values worked out by hand from its
docstring and BERT's `optimization.py`: linear warmup from 0 over `warmup_fraction` of the
steps, then the linear decay that runs from the peak at step 0 to 0 at the last step (the
warmup overriding its start), the update of step k taking the rate of step k."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_bert import FitSchedule, TextClassifier

PEAK = 1e-3


# 100 steps, 10 of warmup: 1e-3 * k / 10 before step 10, 1e-3 * (100 - k) / 100 from it.
WARMUP_10_OF_100 = {0: 0.0, 1: 1e-4, 5: 5e-4, 9: 9e-4, 10: 9e-4, 11: 8.9e-4, 55: 4.5e-4,
                    90: 1e-4, 99: 1e-5, 100: 0.0}
# No warmup: the decay alone, the peak at step 0.
NO_WARMUP_OF_100 = {0: 1e-3, 1: 9.9e-4, 10: 9e-4, 55: 4.5e-4, 99: 1e-5, 100: 0.0}


@pytest.mark.parametrize("warmup_fraction, expected", [(0.1, WARMUP_10_OF_100),
                                                       (0.0, NO_WARMUP_OF_100)],
                         ids=["warmup", "no-warmup"])
def test_learning_rate_at_known_steps(warmup_fraction, expected):
    optimizer = FitSchedule(learning_rate=PEAK, warmup_fraction=warmup_fraction).optimizer(100)
    got = {}
    for step in expected:
        optimizer.iterations.assign(step)
        got[step] = float(optimizer.learning_rate)
    np.testing.assert_allclose(list(got.values()), list(expected.values()), rtol=1e-6,
                               atol=1e-12, err_msg=str(got))


class _Steps(keras.callbacks.Callback):
    """The learning rate each step trains at, and whether step 0 moved any weight."""

    def __init__(self):
        super().__init__()
        self.rates, self.start, self.after_first = [], None, None

    def on_train_batch_begin(self, batch, logs=None):
        if self.start is None:
            self.start = [w.numpy().copy() for w in self.model.trainable_weights]
        self.rates.append(float(self.model.optimizer.learning_rate))

    def on_train_batch_end(self, batch, logs=None):
        if self.after_first is None:
            self.after_first = [w.numpy().copy() for w in self.model.trainable_weights]


def test_text_classifier_fit_trains_at_the_scheduled_rates(model_dir):
    keras.utils.set_random_seed(3)
    clf = TextClassifier.from_pretrained(model_dir, labels=["other", "whale"], seq_length=16,
                                         precision="float32")
    clf.compile(schedule=FitSchedule(learning_rate=PEAK, warmup_fraction=0.25))
    texts = ["the whale", "a ship", "the whale at sea", "a ship at sea"] * 2
    labels = ["whale", "other"] * 4
    steps = _Steps()
    # 8 texts in batches of 4 for 4 epochs: 8 steps, 2 of them warmup.
    clf.fit(texts, labels, batch_size=4, epochs=4, seed=3, verbose=0, callbacks=[steps])
    # Warmup 1e-3 * k / 2 (steps 0, 1), then 1e-3 * (8 - k) / 8 (steps 2 to 7).
    expected = [0.0, 5e-4, 7.5e-4, 6.25e-4, 5e-4, 3.75e-4, 2.5e-4, 1.25e-4]
    np.testing.assert_allclose(steps.rates, expected, rtol=1e-6, atol=1e-12)
    assert int(clf.optimizer.iterations.numpy()) == 8
    assert float(clf.optimizer.learning_rate) == 0.0  # the decay's end, after the last step
    # Step 0 trains at rate 0: AdamW moves no weight (its decay is scaled by the rate too).
    assert len(steps.start) > 30
    for before, after in zip(steps.start, steps.after_first, strict=True):
        np.testing.assert_array_equal(before, after)
