"""Activation functions by the names `BertConfig.hidden_act` uses
(`keras_bert.activation_names.HIDDEN_ACTS`)."""

import keras

from keras_bert.activation_names import APPROXIMATE, EXACT


@keras.saving.register_keras_serializable(package="keras_bert")
def gelu_approximate(x):
    """GELU with the tanh approximation (Google's and Model Garden's `gelu`, Hugging Face's
    `gelu_new`)."""
    return keras.activations.gelu(x, approximate=True)


@keras.saving.register_keras_serializable(package="keras_bert")
def gelu_exact(x):
    """GELU with the erf, x * Phi(x) (Hugging Face's `gelu`)."""
    return keras.activations.gelu(x, approximate=False)


def get_activation(name: str):
    """The activation callable for a `BertConfig.hidden_act` name. A layer config saved
    before the names said which GELU holds "gelu": Keras' own, the erf GELU."""
    if name in (EXACT, "gelu"):
        return gelu_exact
    if name == APPROXIMATE:
        return gelu_approximate
    return keras.activations.get(name)
