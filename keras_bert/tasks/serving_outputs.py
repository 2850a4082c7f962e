"""The named outputs of each task's `serving_default` (postprocessing inside the graph)."""

from __future__ import annotations

import tensorflow as tf


def embedding_outputs(normalize: bool = False):
    """Embedding export: `embedding` and `pooled_output`, as the network gives them
    (`keras_bert.models.embedder.embedding_network`); with `normalize`, the embedding
    scaled to unit L2 norm here (windows: after their vectors are averaged)."""
    def outputs(model_outputs, inputs):
        embedding = model_outputs["embedding"]
        if normalize:
            embedding = tf.math.l2_normalize(embedding, axis=-1, epsilon=1e-24)
        return {"embedding": embedding, "pooled_output": model_outputs["pooled_output"]}
    return outputs


def _logits(model_outputs):
    logits = model_outputs["logits"] if isinstance(model_outputs, dict) else model_outputs
    return tf.cast(logits, tf.float32)


def classification_outputs(label_names: list[str]):
    """`logits`, `probabilities`, `label_id` and `label` (the label's name)."""
    names = tf.constant(label_names, tf.string)

    def outputs(model_outputs, inputs):
        logits = _logits(model_outputs)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"logits": logits, "probabilities": tf.nn.softmax(logits),
                "label_id": label_id, "label": tf.gather(names, label_id)}
    return outputs


def regression_outputs():
    """`score`: the regression output, one float per text."""
    def outputs(model_outputs, inputs):
        return {"score": tf.reshape(_logits(model_outputs), [-1])}
    return outputs


def token_label_outputs(label_names: list[str]):
    """Per-position tagger outputs (the tagger's `serve_ids`): `logits` `[batch, seq, tags]`,
    `label_ids`, `labels` (names) and `scores` (the chosen label's probability), `[batch, seq]`.
    """
    names = tf.constant(label_names, tf.string)

    def outputs(model_outputs, inputs):
        logits = _logits(model_outputs)
        label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"logits": logits, "label_ids": label_ids, "labels": tf.gather(names, label_ids),
                "scores": tf.reduce_max(tf.nn.softmax(logits), axis=-1)}
    return outputs


def multilabel_outputs(label_names: list[str], thresholds: list[float]):
    """Multi-label outputs: `logits` and `scores` (sigmoid probabilities) `[batch, labels]`,
    and `labels` `[batch, labels]`: the names of the labels whose score reaches the label's
    threshold, highest score first, padded with "" (a row with no label is all "")."""
    if len(thresholds) != len(label_names):
        raise ValueError(f"{len(thresholds)} thresholds for {len(label_names)} labels")
    names = tf.constant(label_names, tf.string)
    cuts = tf.constant(thresholds, tf.float32)

    def outputs(model_outputs, inputs):
        logits = _logits(model_outputs)
        scores = tf.sigmoid(logits)
        chosen = scores >= cuts
        # Chosen labels by descending score, then the others (-1 < any score), in one sort.
        order = tf.math.top_k(tf.where(chosen, scores, -1.0), k=len(label_names)).indices
        ranked = tf.gather(names, order)
        return {"logits": logits, "scores": scores,
                "labels": tf.where(tf.gather(chosen, order, batch_dims=1), ranked, "")}
    return outputs
