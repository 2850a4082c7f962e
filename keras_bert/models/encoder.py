"""`BertEncoder`: the BERT network as a functional Keras model with TF Hub input/output names."""

from __future__ import annotations

import keras

from keras_bert.config import BertConfig
from keras_bert.layers import BertEmbeddings, BertPooler, BertTransformerBlock

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEncoder(keras.Model):
    """The BERT encoder: embeddings, `num_layers` transformer blocks and the pooler.

    Inputs (a dict, int32 `[batch, seq]`, any batch and seq up to `max_position_embeddings`):
    `input_word_ids`, `input_mask` (1 = real token, 0 = padding), `input_type_ids` (segment).
    Outputs (a dict): `sequence_output` `[batch, seq, hidden]`, `pooled_output`
    `[batch, hidden]`, `encoder_outputs` (a list with each block's output) and `default`
    (= `pooled_output`, the TF Hub convention).

    Build one with `BertEncoder(BertConfig(...))` or `BertEncoder.from_preset("base")`.
    """

    def __init__(self, config: BertConfig | dict, dtype=None, **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        embeddings = BertEmbeddings(
            config.vocab_size, config.hidden_size, config.max_position_embeddings,
            config.type_vocab_size, config.initializer_range, config.layer_norm_epsilon,
            config.hidden_dropout, name="embeddings", dtype=dtype)
        blocks = [
            BertTransformerBlock(
                config.hidden_size, config.num_heads, config.intermediate_size,
                config.hidden_act, config.hidden_dropout, config.attention_dropout,
                config.initializer_range, config.layer_norm_epsilon,
                name=f"transformer_layer_{i}", dtype=dtype)
            for i in range(config.num_layers)
        ]
        pooler = BertPooler(config.hidden_size, config.initializer_range, name="pooler",
                            dtype=dtype)

        x = embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
        encoder_outputs = []
        for block in blocks:
            x = block(x, padding_mask=inputs["input_mask"])
            encoder_outputs.append(x)
        pooled = pooler(x)
        outputs = {"sequence_output": x, "pooled_output": pooled,
                   "encoder_outputs": encoder_outputs, "default": pooled}
        kwargs.setdefault("name", "bert_encoder")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # A functional model does not take `dtype`: give it its layers' policy, so `compile`
        # sees mixed_float16 (and adds loss scaling) and `get_config` records it.
        self.dtype_policy = embeddings.dtype_policy

        self.config = config
        self.embeddings = embeddings
        self.blocks = blocks
        self.pooler = pooler

    @property
    def token_embedding(self) -> keras.layers.Embedding:
        """The word embedding layer (its table is what the masked LM head is tied to)."""
        return self.embeddings.word_embeddings

    def attention_probs(self, inputs: dict) -> list:
        """Each block's attention probabilities for `inputs` (a dict like the encoder's), in
        inference mode: a list with one float32 `[batch, heads, seq, seq]` tensor per block.

        Row `q` of a head is the softmax over the keys for query `q`: it sums to 1 over the
        unmasked keys and is 0 on padded keys. The layers are called directly (the encoder's
        own graph and outputs are unchanged, and it does not pay for this).
        """
        inputs = {name: keras.ops.convert_to_tensor(inputs[name], "int32")
                  for name in INPUT_NAMES}
        x = self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=False)
        probs = []
        for block in self.blocks:
            x, block_probs = block(x, padding_mask=inputs["input_mask"], training=False,
                                   return_attention_scores=True)
            probs.append(block_probs)
        return probs

    @classmethod
    def from_preset(cls, name: str, dtype=None, **overrides) -> BertEncoder:
        """A randomly initialised encoder of preset size `name` (see `keras_bert.PRESETS`)."""
        return cls(BertConfig.from_preset(name, **overrides), dtype=dtype)

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name,
                "trainable": self.trainable, "dtype": keras.dtype_policies.serialize(
                    self.dtype_policy)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        dtype = config.pop("dtype", None)
        if isinstance(dtype, dict):
            dtype = keras.dtype_policies.deserialize(dtype)
        return cls(**config, dtype=dtype)
