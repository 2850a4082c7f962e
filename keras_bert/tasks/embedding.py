"""`EmbedTask`: an encoder that maps text to one vector (sentence embeddings).

Not fine-tuned by `keras-bert finetune` (a plain model directory, or one saved with an
`embed` task block, is one); its texts are embedded by `keras-bert encode` and its export's
`serving_default` (`embedding`, `pooled_output`).
"""

from __future__ import annotations

from keras_bert.models.embedder import BertEmbedder
from keras_bert.tasks.serving_module import ServingModule
from keras_bert.tasks.serving_outputs import embedding_outputs
from keras_bert.tasks.task import Task


class EmbedTask(Task):
    """Text -> vector with a pooling rule (`pooled`, `cls`, `mean`)."""

    name = "embed"
    finetunable = False
    predictable = False

    def build_model(self, encoder, spec: dict, labels=None):
        """A `BertEmbedder` (mean pooling unless `spec` says otherwise)."""
        return BertEmbedder(encoder, pooling=spec.get("pooling", "mean"),
                            normalize=bool(spec.get("normalize", False)))

    def serving_module(self, model, preprocessor, labels, spec: dict, pooling=None,
                       **options):
        """`embedding` (pooled by `pooling`, else the saved pooling, else the pooler's output)
        and `pooled_output`, computed from the encoder's outputs."""
        return ServingModule(model.encoder, preprocessor,
                             embedding_outputs(pooling or spec.get("pooling", "pooled")))
