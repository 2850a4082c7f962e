"""keras_bert_client: query BERT models served by TensorFlow Serving (or `keras-bert serve`)
over REST or gRPC, without TensorFlow.

    from keras_bert_client import GrpcClient, RestClient
    client = RestClient("http://127.0.0.1:8501", "bert")  # or GrpcClient("127.0.0.1:8500", "bert")
    client.predict(["Call me Ishmael."])                  # [{"label": ..., "probabilities": [...]}]
    client.status()                                       # TF Serving's GetModelStatus JSON
    client.metadata()                                     # TF Serving's GetModelMetadata JSON

`predict` sends raw strings to a text signature (`text`, and `text_b` for pair tasks) and
returns one dict of Python values per text (floats, ints, lists; strings as `str`, or
`bytes` when they are not valid UTF-8). `predict_columns` sends any named inputs. Server
errors raise `ServerError` with TF Serving's status code name and message. The REST client
needs the standard library and NumPy; the gRPC client `grpcio` too (the `grpc` extra).
"""

from keras_bert_client.grpc_client import GrpcClient
from keras_bert_client.rest import RestClient
from keras_bert_client.values import DEFAULT_SIGNATURE, ServerError, python_value, rows

__version__ = "0.1.0"
__all__ = ["DEFAULT_SIGNATURE", "GrpcClient", "RestClient", "ServerError", "__version__",
           "python_value", "rows"]
