"""An independent NumPy (float64) forward pass of BERT, for checking the Keras layers.

Written from the equations of Devlin et al. 2018 (BERT) and Vaswani et al. 2017
("Attention is all you need"), not from our Keras code: only the *weights* are read from the
Keras layers, by attribute. Inference only (dropout is the identity).

Also holds small helpers shared by the tests: random model inputs and weight randomisation
(the default BERT initialisation has zero biases, unit LayerNorm gains and tiny kernels, which
would hide a swapped bias or gain).
"""

from __future__ import annotations

import math

import keras
import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def to_numpy(x) -> np.ndarray:
    """A Keras variable or tensor as a float64 NumPy array."""
    return np.asarray(keras.ops.convert_to_numpy(x), dtype=np.float64)


# ----- activations ---------------------------------------------------------------------------


def gelu_exact(x):
    """GELU(x) = x * Phi(x) = x/2 * (1 + erf(x / sqrt(2))) (Hendrycks & Gimpel 2016)."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    """The tanh approximation of GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): the
    `gelu` of Google's BERT `modeling.py` (and Hugging Face's `gelu_new`)."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


# By keras_bert's names (`BertConfig.hidden_act`): what a reference computes when it takes the
# activation from the layer; a reference written from a source's formulas passes its own.
ACTIVATIONS = {
    "gelu_exact": gelu_exact,
    "gelu_approximate": gelu_tanh,
    "relu": lambda x: np.maximum(x, 0.0),
    "tanh": np.tanh,
    "silu": lambda x: x / (1.0 + np.exp(-x)),
}


# ----- building blocks -------------------------------------------------------------------------


def layer_norm(x, gamma, beta, eps):
    """LayerNorm over the last axis (Ba et al. 2016), biased variance."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _dense(x, layer):
    return x @ to_numpy(layer.kernel) + to_numpy(layer.bias)


def _layer_norm_of(x, layer):
    return layer_norm(x, to_numpy(layer.gamma), to_numpy(layer.beta), layer.epsilon)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ----- the layers ------------------------------------------------------------------------------


def embeddings(layer, word_ids, type_ids):
    """E = LayerNorm(W_word[ids] + W_pos[0..seq) + W_type[segment ids])."""
    word_ids = np.asarray(word_ids)
    seq = word_ids.shape[1]
    x = (to_numpy(layer.word_embeddings.embeddings)[word_ids]
         + to_numpy(layer.position_embeddings.embeddings)[:seq][None]
         + to_numpy(layer.type_embeddings.embeddings)[np.asarray(type_ids)])
    return _layer_norm_of(x, layer.layer_norm)


def self_attention(layer, x, padding_mask=None):
    """Multi-head scaled dot-product self-attention; returns `(output, probs)`.

    head_i = softmax(Q_i K_i^T / sqrt(d_k) + M) V_i with M = -1e9 on padded keys,
    output = concat(head_1 .. head_h) W_O + b_O.
    """
    x = np.asarray(x, dtype=np.float64)
    batch, seq, hidden = x.shape
    heads = layer.num_heads
    d_k = hidden // heads
    q, k, v = (_dense(x, dense) for dense in (layer.query, layer.key, layer.value))
    outputs, all_probs = [], []
    for h in range(heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        scores = np.einsum("bqd,bkd->bqk", q[..., cols], k[..., cols]) / math.sqrt(d_k)
        if padding_mask is not None:
            scores = scores + (1.0 - np.asarray(padding_mask, np.float64))[:, None, :] * -1e9
        probs = softmax(scores)
        all_probs.append(probs)
        outputs.append(probs @ v[..., cols])
    context = np.concatenate(outputs, axis=-1)
    return _dense(context, layer.output_dense), np.stack(all_probs, axis=1)


def transformer_block(layer, x, padding_mask=None, activation=None):
    """Post-LN block: h = LN(x + MHA(x)); y = LN(h + W2 act(W1 h + b1) + b2), where `act`
    is `activation` (a function of a float64 array), else the layer's own `hidden_act`."""
    attended, _ = self_attention(layer.attention, x, padding_mask)
    h = _layer_norm_of(x + attended, layer.attention_layer_norm)
    act = activation or ACTIVATIONS[layer.hidden_act]
    inner = act(_dense(h, layer.intermediate))
    return _layer_norm_of(h + _dense(inner, layer.output_dense), layer.output_layer_norm)


def pooler(layer, sequence_output):
    """tanh(W h_[CLS] + b) on the first token."""
    return np.tanh(_dense(np.asarray(sequence_output, np.float64)[:, 0, :], layer.dense))


def encoder(model, input_word_ids, input_mask, input_type_ids, activation=None):
    """The whole `BertEncoder` forward pass, as a dict like the model's outputs; every block
    computes `activation` (default: the blocks' own `hidden_act`, see `transformer_block`)."""
    x = embeddings(model.embeddings, input_word_ids, input_type_ids)
    encoder_outputs = []
    for block in model.blocks:
        x = transformer_block(block, x, input_mask, activation)
        encoder_outputs.append(x)
    pooled = pooler(model.pooler, x)
    return {"sequence_output": x, "pooled_output": pooled, "encoder_outputs": encoder_outputs,
            "default": pooled}


# ----- test helpers ----------------------------------------------------------------------------


def randomize_weights(layer, rng: np.random.Generator, scale: float = 0.2) -> None:
    """Gives every weight of a built layer random values (LayerNorm gains around 1)."""
    for var in layer.weights:
        shape = tuple(var.shape)
        if var.path.endswith("gamma"):
            value = 1.0 + scale * rng.standard_normal(shape)
        else:
            value = scale * rng.standard_normal(shape)
        var.assign(value.astype(var.dtype))


def random_inputs(config, rng: np.random.Generator, lengths, seq_length=None):
    """A batch of inputs with `len(lengths)` rows: row i has `lengths[i]` real tokens
    (mask 1, random ids and segments 0 then 1) and random ids (mask 0) in the padding."""
    lengths = list(lengths)
    seq_length = seq_length or max(lengths)
    batch = len(lengths)
    word_ids = rng.integers(0, config.vocab_size, size=(batch, seq_length)).astype("int32")
    type_ids = rng.integers(0, config.type_vocab_size, size=(batch, seq_length)).astype("int32")
    mask = np.zeros((batch, seq_length), dtype="int32")
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
        type_ids[i, :n] = (np.arange(n) >= n // 2).astype("int32")
    return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}
