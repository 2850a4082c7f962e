"""A text embedder's export: `text` in, `embedding` and `pooled_output` out, one pass of the
encoder; texts read in windows get the mean of their windows' vectors, weighted by the word
pieces each read, normalized after that mean if the model normalizes."""

from __future__ import annotations

import tensorflow as tf

from keras_bert.tasks.serving import SentenceServing
from keras_bert.tasks.text_embedding.network import BertEmbedder, embedding_network
from keras_bert.text.sentence_windows import TOKEN_MEAN


def embedding_outputs(normalize: bool = False):
    """`embedding` and `pooled_output`, as the network gives them (`embedding_network`);
    with `normalize`, the embedding scaled to unit L2 norm here (windows: after their
    vectors are averaged)."""
    def outputs(model_outputs, inputs):
        embedding = model_outputs["embedding"]
        if normalize:
            embedding = tf.math.l2_normalize(embedding, axis=-1, epsilon=1e-24)
        return {"embedding": embedding, "pooled_output": model_outputs["pooled_output"]}
    return outputs


def embedding_serving(network: BertEmbedder, preprocessor, reading,
                      pooling: str | None = None) -> SentenceServing:
    """The `SentenceServing` of an embedder: `network`'s vectors (`pooling` replaces its
    pooling, keeping its normalization), texts read as `reading` says."""
    pooling = pooling or network.pooling
    if reading.windowed:  # the windows' vectors are averaged first, normalized after
        unnormalized = BertEmbedder(network.encoder, pooling=pooling, normalize=False)
        return SentenceServing(embedding_network(unnormalized), preprocessor,
                               embedding_outputs(normalize=network.normalize),
                               reading=reading, aggregate=TOKEN_MEAN)
    if pooling != network.pooling:
        network = BertEmbedder(network.encoder, pooling=pooling, normalize=network.normalize)
    return SentenceServing(embedding_network(network), preprocessor, embedding_outputs())
