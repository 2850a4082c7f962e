"""Activation functions by the names `BertConfig.hidden_act` uses."""

import keras


@keras.saving.register_keras_serializable(package="keras_bert")
def gelu_approximate(x):
    """GELU with the tanh approximation (Hugging Face's `gelu_new`)."""
    return keras.activations.gelu(x, approximate=True)


def get_activation(name: str):
    """The activation callable for a `BertConfig.hidden_act` name; `gelu` is the exact erf GELU."""
    if name == "gelu":
        return lambda x: keras.activations.gelu(x, approximate=False)
    if name == "gelu_approximate":
        return gelu_approximate
    return keras.activations.get(name)
