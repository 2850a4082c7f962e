"""`TextEmbedder`: sentence vectors from raw strings (an encoder, its pooling rule and, if
asked, L2 normalization).

    embedder = keras_bert.TextEmbedder.from_pretrained("models/minilm", pooling="mean",
                                                       normalize=True)
    embedder.predict(["Call me Ishmael."])["embedding"]     # [1, 384] float32
    embedder.evaluate([(query, its_paraphrase), ...])      # paraphrase retrieval
    embedder.export("serving")                             # embedding, pooled_output

`predict`, the export and `keras-bert encode` compute the vectors with the same function
(the embed task kind's `serving_module`: the `BertEmbedder` the model was built as, its
pooling and normalization). Not trained by `fit`: keras_bert has no embedding objective
(such as an in-batch-negatives contrastive loss) yet.
"""

from __future__ import annotations

import keras
import numpy as np

from keras_bert.config import DEFAULT_SEQ_LENGTH
from keras_bert.task_models.text_inputs import text_examples
from keras_bert.task_models.text_task_model import TextTaskModel
from keras_bert.tasks.embedder_config import EmbedderConfig
from keras_bert.tasks.registry import task_kind
from keras_bert.text.sentence_windows import LongTextReading


@keras.saving.register_keras_serializable(package="keras_bert")
class TextEmbedder(TextTaskModel):
    """One vector per text. `predict` gives `embedding` (`[texts, dim]`, by the model's
    pooling, L2-normalized if built with `normalize=True`) and `pooled_output` (BERT's
    pooler); `evaluate` scores paraphrase retrieval on `(text, paraphrase)` pairs."""

    kind = "embed"
    config_class = EmbedderConfig

    @classmethod
    def from_pretrained(cls, source: str, *, pooling: str = "mean", normalize: bool = False,
                        seq_length: int = DEFAULT_SEQ_LENGTH,
                        reading: LongTextReading | str = "truncate", rules: str | None = None,
                        precision: str = "auto"):
        """An embedder on the encoder of `source` (sources: `pretrained_source`; a model
        directory saved by a `TextEmbedder` loads whole, with its own pooling).
        `pooling`: `mean` (the default: sentence-transformers models such as MiniLM are
        trained for it), `cls`, `pooled` (BERT's pooler; what a plain encoder directory's
        export serves) or `concat_last4`; `seq_length`: the length read at once; `reading`:
        longer texts are `"truncate"`d or read in `"windows"` whose vectors are averaged,
        weighted by the word pieces each read (or a `LongTextReading`)."""
        reading = LongTextReading.at_length(reading, seq_length)
        config = EmbedderConfig(pooling=pooling, normalize=normalize,
                                reading=reading)  # checked first
        loaded, model_dir = cls.pretrained_source(source, rules, precision)
        if loaded is not None:
            return loaded
        encoder, preprocessor = cls.encoder_and_preprocessor(model_dir, seq_length, precision)
        network = task_kind(cls.kind).build_model(encoder, config.block(cls.kind, seq_length))
        return cls(network, preprocessor, None, config)

    def fit(self, *args, **kwargs):
        """Not available: keras_bert has no training objective for embeddings yet."""
        raise NotImplementedError(
            "TextEmbedder.fit: keras_bert has no embedding training objective (such as an "
            "in-batch-negatives contrastive loss) yet; embed with the pretrained weights, or "
            "fine-tune a TextClassifier / TextRegressor for a labelled task")

    def get_compile_config(self):
        """None: an embedder is not compiled for training (a `.keras` file holds no
        optimizer for it)."""
        return None

    def rows(self, x, y) -> list:
        """The `(text, paraphrase)` pairs of `x` (`y` must be None)."""
        if y is not None:
            raise ValueError("TextEmbedder.evaluate takes (text, paraphrase) pairs as x and "
                             "no y")
        return text_examples(x, pair=True)

    def score(self, rows, batch_size) -> dict:
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

    def requests(self, x) -> dict[str, list[str]]:
        """`text`: the texts of `x`."""
        return {"text": [ex.text for ex in text_examples(x, pair=False)]}
