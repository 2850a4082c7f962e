"""Text preprocessing in TensorFlow ops: the tokenizer, the packer, the one
`BertPreprocessor` of a model built from both, and the pretraining masker.

Importing it first checks that tensorflow-text matches TensorFlow's minor version
(`dependency_check`)."""

from keras_bert.text import dependency_check  # noqa: F401 - first: checks before TF Text loads
from keras_bert.text.masker import BertMasker, continuation_flags
from keras_bert.text.normalize import BertNormalizer
from keras_bert.text.packer import BertPacker
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.tokenizer import SPECIAL_TOKENS, BertTokenizer, load_vocab

__all__ = ["SPECIAL_TOKENS", "BertMasker", "BertNormalizer", "BertPacker", "BertPreprocessor",
           "BertTokenizer",
           "continuation_flags", "load_vocab"]
