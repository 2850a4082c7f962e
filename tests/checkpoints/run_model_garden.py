"""Makes Model Garden's own BERT checkpoints and TF Hub SavedModels, in the environment of
`tf-models-official` (`tests/checkpoints/model_garden_env.py`), without keras_bert.

    python tests/checkpoints/run_model_garden.py CASES.json

`CASES.json`: `{"texts": [...], "cases": [{"dir": D, "vocab": V, "lower_case": bool,
"with_mlm": bool, "seed": int}], "restore": [{"dir": C, "inputs": IN.npz, "outputs": OUT.npz}]}`.

For each case, in `D`: `ckpt/` a Model Garden release directory (`bert_config.json` of a small
BERT in Model Garden's legacy format, `vocab.txt` and the object-based TF2 checkpoint of a
`BertEncoder`, or of a `BertPretrainerV2` with its masked LM head) whose every variable is
drawn at random (layer norms included, so that a misplaced one shows); `hub/` the encoder
SavedModel that Model Garden's `export_tfhub` writes from it, `preprocess/` its preprocessing
SavedModel; `reference.npz` the texts tokenized by that preprocessing model and the outputs
of the encoder SavedModel run by `tf.saved_model.load` here (with the masked LM head, also
the logits of its `mlm` subobject at positions 0-4).

A case with `"classifier": true` also gets `clf/`: the checkpoint of a Model Garden
`BertClassifier` on its encoder (a random head), and its logits in `clf_reference.npz`.

Each `restore` job restores the checkpoint directory `C` (`bert_config.json`,
`bert_model.ckpt`) into Model Garden's `BertEncoder` as its exporter does
(`assert_existing_objects_matched`) and writes its outputs on the ids of `IN.npz`.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf
import tf_keras
from official.legacy.bert import configs
from official.modeling import tf_utils
from official.nlp.modeling import models
from official.nlp.tools import export_tfhub_lib

CONFIG = {"vocab_size": None, "hidden_size": 32, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 48, "hidden_act": "gelu",
          "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
          "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02}
SEQ_LENGTH = 32


def _randomize(model, seed: int) -> None:
    """Every variable at random: large enough that activations reach GELU's curved part."""
    rng = np.random.default_rng(seed)
    for v in model.weights:
        scale = 0.3 if len(v.shape) > 1 else 0.2
        base = 1.0 if v.name.endswith("gamma:0") else 0.0
        v.assign(base + scale * rng.standard_normal(v.shape).astype(np.float32))


def _export(case: dict, folder: str, checkpoint: str) -> None:
    """What `python -m official.nlp.tools.export_tfhub` does for `--export_type model` (or
    `model_with_mlm`) and `preprocessing`, in this process (each run of the tool spends ~30 s
    importing Model Garden); a fresh Keras session, as the tool's own process has."""
    tf_keras.backend.clear_session()
    export_tfhub_lib.export_model(
        os.path.join(folder, "hub"),
        bert_config=configs.BertConfig.from_json_file(case["config_file"]),
        model_checkpoint_path=checkpoint, with_mlm=case["with_mlm"],
        vocab_file=case["vocab_in_dir"], do_lower_case=case["lower_case"])
    export_tfhub_lib.export_preprocessing(
        os.path.join(folder, "preprocess"), vocab_file=case["vocab_in_dir"],
        do_lower_case=case["lower_case"], tokenize_with_offsets=False,
        default_seq_length=SEQ_LENGTH)


def _classifier(case: dict, encoder, texts: list[str]) -> None:
    """A Model Garden `BertClassifier` (3 classes, its default head on the pooled output) on
    `encoder`, its head drawn at random: its checkpoint in `clf/` as Model Garden's trainer
    saves one (`model=`), its logits in `clf_reference.npz`."""
    folder = os.path.join(case["dir"], "clf")
    os.makedirs(folder, exist_ok=True)
    for name in ("vocab.txt", "bert_config.json"):
        with open(os.path.join(case["dir"], "ckpt", name), encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)
    classifier = models.BertClassifier(network=encoder, num_classes=3)
    head = [v for v in classifier.weights if v.name.startswith("sentence_prediction/")]
    rng = np.random.default_rng(case["seed"] + 100)
    for v in head:
        v.assign(0.3 * rng.standard_normal(v.shape).astype(np.float32))
    tf.train.Checkpoint(model=classifier).save(os.path.join(folder, "bert_model"))
    preprocess = tf.saved_model.load(os.path.join(case["dir"], "preprocess"))
    ids = preprocess(tf.constant(texts))
    logits = classifier([ids["input_word_ids"], ids["input_mask"], ids["input_type_ids"]],
                        training=False)
    np.savez(os.path.join(case["dir"], "clf_reference.npz"), logits=logits.numpy())


def make_case(case: dict, texts: list[str]) -> None:
    tf_keras.backend.clear_session()
    folder = case["dir"]
    os.makedirs(os.path.join(folder, "ckpt"), exist_ok=True)
    with open(case["vocab"], encoding="utf-8") as f:
        vocab = f.read()
    case["vocab_in_dir"] = os.path.join(folder, "ckpt", "vocab.txt")
    with open(case["vocab_in_dir"], "w", encoding="utf-8") as f:
        f.write(vocab)
    case["config_file"] = os.path.join(folder, "ckpt", "bert_config.json")
    with open(case["config_file"], "w", encoding="utf-8") as f:
        json.dump(dict(CONFIG, vocab_size=len(vocab.splitlines())), f)
    encoder = export_tfhub_lib.get_bert_encoder(
        configs.BertConfig.from_json_file(case["config_file"]))
    if case["with_mlm"]:
        model = models.BertPretrainerV2(encoder_network=encoder,
                                        mlm_activation=tf_utils.get_activation("gelu"))
        model(model.inputs)
        items = model.checkpoint_items
    else:
        model, items = encoder, {"encoder": encoder}
    _randomize(model, case["seed"])
    checkpoint = tf.train.Checkpoint(**items).save(os.path.join(folder, "ckpt", "bert_model"))
    _export(case, folder, checkpoint)
    if case.get("classifier"):
        _classifier(case, encoder, texts)
    preprocess = tf.saved_model.load(os.path.join(folder, "preprocess"))
    hub = tf.saved_model.load(os.path.join(folder, "hub"))
    inputs = preprocess(tf.constant(texts))
    outputs = hub(inputs, training=False)
    arrays = {k: v.numpy() for k, v in inputs.items()}
    arrays.update({k: outputs[k].numpy() for k in ("sequence_output", "pooled_output")})
    if case["with_mlm"]:  # the masked LM logits of the SavedModel's `mlm` subobject
        positions = np.tile(np.arange(5, dtype=np.int32), (len(texts), 1))
        mlm = hub.mlm(dict(inputs, masked_lm_positions=tf.constant(positions)), training=False)
        arrays.update(masked_lm_positions=positions, mlm_logits=mlm["mlm_logits"].numpy())
    np.savez(os.path.join(folder, "reference.npz"), **arrays)


def restore(job: dict) -> None:
    tf_keras.backend.clear_session()
    config = configs.BertConfig.from_json_file(os.path.join(job["dir"], "bert_config.json"))
    encoder = export_tfhub_lib.get_bert_encoder(config)
    tf.train.Checkpoint(encoder=encoder).restore(
        os.path.join(job["dir"], "bert_model.ckpt")).assert_existing_objects_matched()
    with np.load(job["inputs"]) as data:
        outputs = encoder({k: data[k] for k in data.files}, training=False)
    np.savez(job["outputs"], **{k: outputs[k].numpy()
                                for k in ("sequence_output", "pooled_output")})


def main(manifest: str) -> None:
    with open(manifest, encoding="utf-8") as f:
        spec = json.load(f)
    for case in spec.get("cases", []):
        make_case(case, spec["texts"])
    for job in spec.get("restore", []):
        restore(job)
    print(f"made {len(spec.get('cases', []))} cases, restored {len(spec.get('restore', []))} "
          f"checkpoints with tensorflow {tf.__version__}")


if __name__ == "__main__":
    if "keras_bert" in sys.modules:
        raise SystemExit("keras_bert must not be imported here")
    main(sys.argv[1])
