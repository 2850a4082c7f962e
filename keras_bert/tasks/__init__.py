"""The task kinds: one folder each, holding the kind's whole life.

    tasks/
      registry.py          the table of kind names (no TensorFlow) and the class of each
      task_model.py        TextTaskModel: fit / evaluate / predict / save / load / export
      task_dir.py          the model directory of a fine-tuned model (head weights, labels)
      serving.py           the export graph (TensorFlow): ServingModule, the contract of a
                           kind's serving functions, and SentenceServing, the sentence kinds'
      in_process.py        the in-process engine: the serving functions answering predict,
                           evaluate, keras-bert predict and encode, in batches, decoded
      network_call.py      the network called on each backend (a Keras call in the graph on
                           TensorFlow; predict_on_batch on padded NumPy arrays on JAX)
      sources.py           what from_pretrained reads, in memory
      task_conversion.py   task models from and to other checkpoint layouts
      batches.py, fitting.py, inputs.py, labels.py, readers.py   shared parts
      text_classification/    TextClassifier, TextRegressor, MultiLabelClassifier
      token_classification/   TokenClassifier
      question_answering/     QuestionAnswerer
      text_embedding/         TextEmbedder

Each kind's folder holds `config.py` (its typed config: the task block's one writer and
reader), `network.py` (ids in, logits or vectors out), `model.py` (the class a Python user
holds), `serving.py` (its export's outputs and decoding), the readers and metrics only it
uses, and `checkpoints.py` where it reads fine-tuned heads of other checkpoint layouts.
The classes are imported on first use, so that importing this package loads no TensorFlow.
"""

from keras_bert.tasks.registry import KINDS

__all__ = ["MultiLabelClassifier", "QuestionAnswerer", "TextClassifier", "TextEmbedder",
           "TextRegressor", "TextTaskModel", "TokenClassifier"]


def __getattr__(name: str):
    """A kind's class (`registry.KINDS`), or `TextTaskModel`, imported when first used."""
    if name == "TextTaskModel":
        from keras_bert.tasks.task_model import TextTaskModel

        return TextTaskModel
    for kind in KINDS.values():
        if kind.model.endswith(f":{name}"):
            return kind.model_class()
    raise AttributeError(f"module 'keras_bert.tasks' has no attribute {name!r}")
