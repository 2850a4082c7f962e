"""A TF Hub-style pair of SavedModels for the encoder alone: preprocess + encoder.

    preprocess/   serving_default: text [batch] -> input_word_ids, input_mask,
                  input_type_ids [batch, the model's training length, else 128]
                  .tokenize(text) -> RaggedTensor of ids [batch, (tokens)]
                  .bert_pack_inputs(segments, seq_length) -> the three id tensors
    encoder/      serving_default: the three id tensors -> pooled_output, sequence_output,
                  default; calling the object also gives encoder_outputs (every layer);
                  .mlm(inputs with masked_lm_positions) -> mlm_logits, when exported from a
                  BertPretrainer

Used like TF Hub's BERT models: `preprocess = tf.saved_model.load(p)`,
`encoder = tf.saved_model.load(e)`, `encoder(preprocess(text))["pooled_output"]`.
Unlike TF Hub's, `.tokenize` returns wordpiece ids per text (not per word).
"""

from __future__ import annotations

import os

import tensorflow as tf

from keras_bert.config import DEFAULT_SEQ_LENGTH
from keras_bert.export.versions import atomic_dir
from keras_bert.models.encoder import INPUT_NAMES
from keras_bert.text.packer import BertPacker

_RAGGED_IDS = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1,
                                  row_splits_dtype=tf.int64)


def save_functions(path: str, functions: dict, signatures: dict, concrete_functions=(),
                   resources=()) -> None:
    """Saves `functions` (attribute name -> `tf.function`) and `signatures` as a SavedModel
    whose variables are exactly those `concrete_functions` read, each stored once (the rule
    of `keras.export.ExportArchive`, which TF Serving's SaverDef restore needs).

    ExportArchive itself is not used here because it makes every endpoint a SignatureDef,
    and a TF Hub-style module also has functions no signature can hold: ragged ids
    (`tokenize`), one function traced for one and two segments (`bert_pack_inputs`), a
    list of layer outputs (`encoder_outputs`). `resources`: trackables with TF resources
    the functions use (the tokenizer's table); `concrete_functions`: the traces whose
    variables are saved.
    """
    root = tf.Module()
    variables = {}
    for concrete in concrete_functions:
        for variable in concrete.variables:
            variables.setdefault(id(variable), variable)
    root.saved_variables = list(variables.values())
    root.resources = list(resources)
    for name, fn in functions.items():
        setattr(root, name, fn)
    tf.saved_model.save(root, path, signatures=signatures)


def preprocess_functions(preprocessor, default_seq_length: int | None = None) -> dict:
    """`tokenize`, `bert_pack_inputs` and `__call__` of the preprocess module, all from the
    model's `BertPreprocessor` (its tokenizer, its packing rules). `__call__` pads to
    `default_seq_length`, else the preprocessor's fixed length, else `DEFAULT_SEQ_LENGTH`
    (TF Hub's BERT preprocessors pad to 128 too)."""
    fixed = preprocessor.with_length(
        default_seq_length or preprocessor.seq_length or DEFAULT_SEQ_LENGTH)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(text):
        """`[batch]` strings -> RaggedTensor of wordpiece ids `[batch, (tokens)]`."""
        return preprocessor.tokenize(text).with_row_splits_dtype(tf.int64)

    @tf.function
    def bert_pack_inputs(segments, seq_length):
        """One or two segments of ragged ids -> the three id tensors `[batch, seq_length]`."""
        return BertPacker.for_tokenizer(preprocessor.tokenizer, seq_length)(list(segments))

    for count in (1, 2):
        bert_pack_inputs.get_concrete_function([_RAGGED_IDS] * count,
                                               tf.TensorSpec([], tf.int32))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def call(text):
        """`[batch]` strings -> the three id tensors `[batch, default_seq_length]`."""
        return fixed(text)

    return {"tokenize": tokenize, "bert_pack_inputs": bert_pack_inputs, "__call__": call}


def encoder_functions(encoder, pretrainer=None) -> dict:
    """`__call__` (all encoder outputs, float32), `serving_default` (without
    `encoder_outputs`) and, with a pretrainer, `mlm`."""
    specs = {n: tf.TensorSpec([None, None], tf.int32, name=n) for n in INPUT_NAMES}

    def outputs(inputs):
        out = encoder(inputs, training=False)
        pooled = tf.cast(out["pooled_output"], tf.float32)
        return {"pooled_output": pooled, "default": pooled,
                "sequence_output": tf.cast(out["sequence_output"], tf.float32),
                "encoder_outputs": [tf.cast(x, tf.float32) for x in out["encoder_outputs"]]}

    @tf.function(input_signature=[specs])
    def call(inputs):
        """The three id tensors -> all encoder outputs (float32)."""
        return outputs(inputs)

    @tf.function(input_signature=list(specs.values()))
    def serve(input_word_ids, input_mask, input_type_ids):
        out = outputs({"input_word_ids": input_word_ids, "input_mask": input_mask,
                       "input_type_ids": input_type_ids})
        return {k: v for k, v in out.items() if k != "encoder_outputs"}

    functions = {"__call__": call, "serving_default": serve}
    if pretrainer is not None:
        mlm_specs = {**specs, "masked_lm_positions": tf.TensorSpec(
            [None, None], tf.int32, name="masked_lm_positions")}

        @tf.function(input_signature=[mlm_specs])
        def mlm(inputs):
            return {"mlm_logits": tf.cast(pretrainer(inputs, training=False)["mlm_logits"],
                                          tf.float32)}
        functions["mlm"] = mlm
    return functions


def export_hub_pair(encoder, preprocessor, out_dir: str, pretrainer=None,
                    default_seq_length: int | None = None) -> dict[str, str]:
    """Writes `out_dir/preprocess` and `out_dir/encoder` (the preprocessor's `__call__` padding
    to `default_seq_length`: see `preprocess_functions`), built in temporary directories
    and renamed into place when both are complete (a failure leaves neither; an existing
    one is never overwritten); returns their paths."""
    paths = {"preprocess": os.path.join(out_dir, "preprocess"),
             "encoder": os.path.join(out_dir, "encoder")}
    for path in paths.values():
        if os.path.exists(path):
            raise FileExistsError(f"{path} exists; export to another directory")
    preprocess = preprocess_functions(preprocessor, default_seq_length)
    encoder_fns = encoder_functions(encoder, pretrainer)
    serve = encoder_fns.pop("serving_default")
    # Both are built before either appears: a failure leaves neither.
    with atomic_dir(paths["preprocess"]) as tmp_pre, atomic_dir(paths["encoder"]) as tmp_enc:
        # The tokenizer holds no variable: its vocabulary is a constant and a table.
        save_functions(tmp_pre, preprocess, resources=[preprocessor],
                       signatures={"serving_default": preprocess["__call__"]
                                   .get_concrete_function()})
        traces = [fn.get_concrete_function() for fn in (*encoder_fns.values(), serve)]
        save_functions(tmp_enc, encoder_fns, concrete_functions=traces,
                       signatures={"serving_default": serve.get_concrete_function()})
    return paths
