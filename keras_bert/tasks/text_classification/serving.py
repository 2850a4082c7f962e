"""The export of a text classifier, multi-label classifier or regressor: `text` (and `text_b`)
in, the named outputs of its `serving_default` out (postprocessing inside the graph), with
what was read of each text (`num_tokens`, `num_windows`, `truncated`)."""

from __future__ import annotations

import tensorflow as tf

from keras_bert.tasks.serving import SentenceServing, float_logits


def sentence_serving(network, preprocessor, config, outputs_fn,
                     aggregate: str) -> SentenceServing:
    """The `SentenceServing` of a sentence-level model: single texts or pairs
    (`config.pair`), read as `config.reading` says, windows' outputs aggregated by
    `aggregate`."""
    return SentenceServing(network, preprocessor, outputs_fn, pair=config.pair,
                           reading=config.reading, aggregate=aggregate)


def classification_outputs(label_names: list[str]):
    """`logits`, `probabilities`, `label_id` and `label` (the label's name)."""
    names = tf.constant(label_names, tf.string)

    def outputs(model_outputs, inputs):
        logits = float_logits(model_outputs)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"logits": logits, "probabilities": tf.nn.softmax(logits),
                "label_id": label_id, "label": tf.gather(names, label_id)}
    return outputs


def regression_outputs():
    """`score`: the regression output, one float per text."""
    def outputs(model_outputs, inputs):
        return {"score": tf.reshape(float_logits(model_outputs), [-1])}
    return outputs


def multilabel_outputs(label_names: list[str], thresholds: list[float]):
    """Multi-label outputs: `logits` and `scores` (sigmoid probabilities) `[batch, labels]`,
    and `labels` `[batch, labels]`: the names of the labels whose score reaches the label's
    threshold, highest score first, padded with "" (a row with no label is all "")."""
    if len(thresholds) != len(label_names):
        raise ValueError(f"{len(thresholds)} thresholds for {len(label_names)} labels")
    # The names and "" after them: a label not chosen is gathered as "" (no select over
    # strings, which LiteRT has no kernel for).
    names = tf.constant([*label_names, ""], tf.string)
    cuts = tf.constant(thresholds, tf.float32)

    def outputs(model_outputs, inputs):
        logits = float_logits(model_outputs)
        scores = tf.sigmoid(logits)
        chosen = scores >= cuts
        # Chosen labels by descending score, then the others (-1 < any score), in one sort.
        order = tf.math.top_k(tf.where(chosen, scores, -1.0), k=len(label_names)).indices
        kept = tf.where(tf.gather(chosen, order, batch_dims=1), order, len(label_names))
        return {"logits": logits, "scores": scores, "labels": tf.gather(names, kept)}
    return outputs


def what_was_read(outputs: dict, row: int) -> dict:
    """A sentence-level answer's `num_tokens`, `num_windows` and `truncated` for `row`."""
    return {"num_tokens": int(outputs["num_tokens"][row]),
            "num_windows": int(outputs["num_windows"][row]),
            "truncated": bool(outputs["truncated"][row])}
