"""`TextEmbedder`: sentence vectors from raw strings (an encoder, its pooling rule and, if
asked, L2 normalization).

    embedder = keras_bert.TextEmbedder.from_pretrained("models/minilm", pooling="mean",
                                                       normalize=True)
    embedder.predict(["Call me Ishmael."])["embedding"]     # [1, 384] float32
    embedder.fit([(text, its_paraphrase), ...], epochs=1)  # in-batch negatives
    embedder.evaluate([(query, its_paraphrase), ...])      # paraphrase retrieval
    embedder.export("serving")                             # embedding, pooled_output

`predict`, the export and `keras-bert encode` compute the vectors with the same function
(`serving.embedding_serving`: the `BertEmbedder` the model was built as, its pooling and
normalization). A plain model directory (an encoder: converted or pretrained) loads as an
embedder of its pooler's output, the TF Hub convention for an encoder's `default`. `fit`
trains on `(text, paraphrase)` pairs with in-batch negatives (sentence-transformers'
MultipleNegativesRankingLoss).
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from keras_bert.config import DEFAULT_SEQ_LENGTH, LongTextReading
from keras_bert.tasks.batches import examples_dataset, featurise_in_chunks
from keras_bert.tasks.inputs import text_examples
from keras_bert.tasks.task_model import TextTaskModel
from keras_bert.tasks.text_embedding.config import EmbedderExportOptions, TextEmbedderConfig
from keras_bert.tasks.text_embedding.network import BertEmbedder
from keras_bert.tasks.text_embedding.serving import embedding_serving
from keras_bert.training import backends
from keras_bert.training.distribution import distributed_builder

# sentence-transformers' MultipleNegativesRankingLoss scale: cosines in [-1, 1] become
# logits in [-20, 20].
SIMILARITY_SCALE = 20.0
FEATURE_CHUNK = 1024  # pairs packed per TensorFlow call


@keras.saving.register_keras_serializable(package="keras_bert")
class TextEmbedder(TextTaskModel):
    """One vector per text. `predict` gives `embedding` (`[texts, dim]`, by the model's
    pooling, L2-normalized if built with `normalize=True`) and `pooled_output` (BERT's
    pooler); `evaluate` scores paraphrase retrieval on `(text, paraphrase)` pairs. Hooks
    (`TaskHooks`): every "must", no "may" (not fine-tuned by `keras-bert finetune`;
    `keras-bert encode`, not `predict`, reads it)."""

    kind = "embed"
    config_class = TextEmbedderConfig
    export_options_class = EmbedderExportOptions

    @classmethod
    @distributed_builder
    def from_pretrained(cls, source: str, *, pooling: str = "mean", normalize: bool = False,
                        seq_length: int = DEFAULT_SEQ_LENGTH,
                        reading: LongTextReading | str = "truncate", rules: str | None = None,
                        precision: str | None = None):
        """An embedder on the encoder of `source` (a keras_bert model directory, any
        checkpoint `keras-bert convert` reads, local or by hub id, or `random-NAME`: random
        weights of a preset size; a model directory saved
        by a `TextEmbedder` loads whole, with its own pooling).
        `pooling`: `mean` (the default: sentence-transformers models such as MiniLM are
        trained for it), `cls`, `pooled` (BERT's pooler; what a plain encoder directory's
        export serves) or `concat_last4`; `seq_length`: the length read at once; `reading`:
        longer texts are `"truncate"`d or read in `"windows"` whose vectors are averaged,
        weighted by the word pieces each read (or a `LongTextReading`)."""
        reading = LongTextReading.at_length(reading, seq_length)
        config = TextEmbedderConfig(pooling=pooling, normalize=normalize,
                                    reading=reading)  # checked first
        loaded, model_dir = cls._pretrained(source, rules, precision)
        if loaded is not None:
            return loaded
        encoder, preprocessor = cls._encoder_and_preprocessor(model_dir, seq_length, precision)
        return cls(cls._build_network(encoder, config, None), preprocessor, None, config)

    @classmethod
    def _build_network(cls, encoder, config, labels):
        """The `BertEmbedder` of the config's pooling and normalization."""
        return BertEmbedder(encoder, pooling=config.pooling, normalize=config.normalize)

    def _default_loss(self):
        """No Keras loss: the embedder's in-batch-negatives loss is `compute_loss`."""
        return None, None

    def _build_serving(self, preprocessor, options: EmbedderExportOptions | None = None):
        """`embedding` (the model's vector; the options' `pooling` replaces its pooling,
        keeping its normalization) and `pooled_output`."""
        pooling = None if options is None else options.pooling
        return embedding_serving(self.network, preprocessor, self.config.reading, pooling)

    def fit(self, x=None, y=None, validation_data=None, **kwargs):
        """Trains the encoder for retrieval on `(text, paraphrase)` pairs `x` (no `y`), with
        in-batch negatives: each text's paraphrase must score above the batch's other
        paraphrases by the cosine of their vectors times `SIMILARITY_SCALE` (softmax cross
        entropy: sentence-transformers' MultipleNegativesRankingLoss). `validation_data`:
        pairs too. Texts are read truncated at the sequence length. Other arguments: as
        `TextTaskModel.fit` (BERT's AdamW schedule, seeded batches, resumable)."""
        if self.config.reading.windowed:
            raise ValueError("a TextEmbedder reading long texts in windows is not trained: "
                             "fit one built with reading='truncate'; windows apply to "
                             "predict and the export")
        if y is not None:
            raise ValueError("TextEmbedder.fit takes (text, paraphrase) pairs as x and no y")
        if validation_data is not None:
            validation_data = (validation_data, None)
        return super().fit(x, None, validation_data=validation_data, **kwargs)

    def _stream(self, rows, batch_size, seed=None, drop_remainder=False, batching=None):
        """`({"text": ids, "paraphrase": ids}, placeholder)` batches of the pairs `rows`,
        each side packed alone at the training length (with `seed`: endless epochs, each
        shuffled by `(seed, epoch)`), both sides cut to the batch's longest (`Batching`:
        they run through the network as one batch)."""
        features = {side: featurise_in_chunks(rows, FEATURE_CHUNK, lambda chunk, f=field: (
            self.preprocessor(tf.constant([getattr(r, f) for r in chunk]))))
            for side, field in (("text", "text"), ("paraphrase", "text_b"))}
        placeholder = np.zeros(len(rows), np.int32)
        return examples_dataset(features, placeholder, batch_size, seed,
                                drop_remainder, batching), len(rows)

    def call(self, inputs, training=False):
        """The vectors of packed ids; for training pairs (`{"text", "paraphrase"}`),
        `[2, batch, dim]`: both sides through the network as one batch."""
        if "paraphrase" not in inputs:
            return super().call(inputs, training=training)
        both = {k: keras.ops.concatenate([inputs["text"][k], inputs["paraphrase"][k]], 0)
                for k in inputs["text"]}
        vectors = self.network(both, training=training)
        return keras.ops.stack(keras.ops.split(vectors, 2, axis=0))

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """In-batch negatives: softmax cross entropy of each text against every
        paraphrase of its batch, logits the cosines times `SIMILARITY_SCALE`; under a
        `tf.distribute` strategy of several replicas, the paraphrases of the whole global
        batch, as on one device."""
        text, paraphrase = (keras.ops.normalize(keras.ops.cast(v, "float32"), axis=-1)
                            for v in (y_pred[0], y_pred[1]))
        start, several = 0, backends.replicas_in_sync() > 1
        if several:  # a tf.distribute strategy: every replica's paraphrases are negatives
            paraphrase, start = backends.gather_replicas(paraphrase)
        logits = SIMILARITY_SCALE * keras.ops.matmul(text, keras.ops.transpose(paraphrase))
        rows = keras.ops.shape(logits)[0]
        losses = keras.losses.sparse_categorical_crossentropy(
            start + keras.ops.arange(rows), logits, from_logits=True)
        if several:
            return backends.global_mean(keras.ops.sum(losses), rows)
        return keras.ops.mean(losses)

    def get_compile_config(self):
        """None: a `.keras` file of an embedder holds no optimizer (recompile to train on)."""
        return None

    def _rows(self, x, y) -> list:
        """The `(text, paraphrase)` pairs of `x` (`y` must be None)."""
        if y is not None:
            raise ValueError("TextEmbedder.evaluate takes (text, paraphrase) pairs as x and "
                             "no y")
        return text_examples(x, pair=True)

    def _score(self, rows, batch_size, train=None) -> dict:
        """Paraphrase retrieval: each text's vector ranks every pair's paraphrase by cosine
        similarity. `retrieval_accuracy`: the share ranked first by its own text;
        `pair_cosine` / `other_cosine`: the mean cosine of the pairs and of the rest."""
        if len(rows) < 2:
            raise ValueError("retrieval needs at least 2 pairs")
        texts = self._unit(self.predict([ex.text for ex in rows], batch_size)["embedding"])
        others = self._unit(self.predict([ex.text_b for ex in rows], batch_size)["embedding"])
        cosine = texts @ others.T
        n = len(rows)
        pairs = np.eye(n, dtype=bool)
        return {"retrieval_accuracy": float(np.mean(cosine.argmax(axis=1) == np.arange(n))),
                "pair_cosine": float(cosine[pairs].mean()),
                "other_cosine": float(cosine[~pairs].mean()), "pairs": n}

    @staticmethod
    def _unit(vectors) -> np.ndarray:
        vectors = np.asarray(vectors, np.float64)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def _requests(self, x) -> dict[str, list[str]]:
        """`text`: the texts of `x`."""
        return {"text": [ex.text for ex in text_examples(x, pair=False)]}
