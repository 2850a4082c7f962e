"""The clients of TF Serving (or `keras-bert serve`): `keras_bert_client`'s, re-exported.

They live in the `keras-bert-client` distribution (`client/` in the repository), which
installs without TensorFlow for web services that only call a model server; this package
requires it, so `keras_bert.client` and `keras-bert query` are the same code.
"""

from keras_bert_client import (
    DEFAULT_SIGNATURE,
    GrpcClient,
    RestClient,
    ServerError,
    python_value,
    rows,
)

__all__ = ["DEFAULT_SIGNATURE", "GrpcClient", "RestClient", "ServerError", "python_value",
           "rows"]
