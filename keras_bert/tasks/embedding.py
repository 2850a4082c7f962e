"""`EmbedTask`: an encoder that maps text to one vector (sentence embeddings).

Not fine-tuned by `keras-bert finetune` (a plain model directory, or one saved with an
`embed` task block by `keras_bert.TextEmbedder`, is one); its texts are embedded by
`keras-bert encode`, `TextEmbedder.predict` and its export's `serving_default`
(`embedding`, `pooled_output`), all through `serving_module`: the `BertEmbedder` the task
block describes (`EmbedderConfig`), its pooling and normalization.
"""

from __future__ import annotations

from keras_bert.models.embedder import BertEmbedder, embedding_network
from keras_bert.tasks.embedder_config import EmbedderConfig
from keras_bert.tasks.serving_module import ServingModule
from keras_bert.tasks.serving_outputs import embedding_outputs
from keras_bert.tasks.task import Task
from keras_bert.text.sentence_windows import TOKEN_MEAN


class EmbedTask(Task):
    """Text -> vector with a pooling rule (`pooled`, `cls`, `mean`, `concat_last4`)."""

    name = "embed"
    finetunable = False
    predictable = False

    def build_model(self, encoder, spec: dict, labels=None):
        """The `BertEmbedder` of the task block (`EmbedderConfig.from_block`)."""
        config = EmbedderConfig.from_block(spec)
        return BertEmbedder(encoder, pooling=config.pooling, normalize=config.normalize)

    def compile(self, model, optimizer) -> None:
        """No Keras loss: the `TextEmbedder` brings its in-batch-negatives loss
        (`TextEmbedder.compute_loss`)."""
        model.compile(optimizer=optimizer, jit_compile=False)

    def serving_module(self, model, preprocessor, labels, spec: dict, pooling=None,
                       **options):
        """`embedding` (the model's vector; `pooling` replaces its pooling, keeping its
        normalization) and `pooled_output`, from one pass of the encoder. Read in windows,
        each text's vectors are the mean of its windows', weighted by the word pieces each
        read, normalized after that mean if the model normalizes."""
        reading = EmbedderConfig.from_block(spec).reading
        pooling = pooling or model.pooling
        if reading.windowed:  # the windows' vectors are averaged first, normalized after
            network = BertEmbedder(model.encoder, pooling=pooling, normalize=False)
            return ServingModule(embedding_network(network), preprocessor,
                                 embedding_outputs(normalize=model.normalize),
                                 reading=reading, aggregate=TOKEN_MEAN)
        if pooling != model.pooling:
            model = BertEmbedder(model.encoder, pooling=pooling, normalize=model.normalize)
        return ServingModule(embedding_network(model), preprocessor, embedding_outputs())
