"""TF Serving's gRPC API with `grpcio` alone: requests and answers are encoded here
(`serving_messages`), so neither TensorFlow nor `tensorflow-serving-api` is needed."""

from __future__ import annotations

import numpy as np

from keras_bert_client import serving_messages as messages
from keras_bert_client.values import DEFAULT_SIGNATURE, ServerError, rows, text_inputs

MAX_MESSAGE_BYTES = 64 << 20
INSTALL = "pip install 'keras-bert-client[grpc]' (or use RestClient)"


class GrpcClient:
    """PredictionService/ModelService over gRPC (`host_port` like "127.0.0.1:8500")."""

    def __init__(self, host_port: str, model_name: str = "bert", timeout: float = 30.0,
                 max_message_bytes: int = MAX_MESSAGE_BYTES):
        try:
            import grpc
        except ModuleNotFoundError:
            raise ModuleNotFoundError(f"the gRPC client needs grpcio, which is not "
                                      f"installed: {INSTALL}") from None
        self._rpc_error = grpc.RpcError
        self.model_name = model_name
        self.timeout = timeout
        self.channel = grpc.insecure_channel(
            host_port, options=[("grpc.max_send_message_length", max_message_bytes),
                                ("grpc.max_receive_message_length", max_message_bytes)])
        # No (de)serializers: the calls send and receive the bytes encoded here.
        self._methods = {path: self.channel.unary_unary(path) for path in (
            messages.PREDICT, messages.GET_MODEL_METADATA, messages.GET_MODEL_STATUS)}

    def _call(self, path: str, request: bytes) -> bytes:
        try:
            return self._methods[path](request, timeout=self.timeout)
        except self._rpc_error as e:
            raise ServerError(e.code().name, e.details() or "") from None

    def predict_columns(self, inputs: dict, signature: str = DEFAULT_SIGNATURE,
                        version: int | None = None, output_filter=()) -> dict[str, np.ndarray]:
        """Runs `signature` on named inputs (array-likes); returns the output arrays."""
        request = messages.predict_request(self.model_name, signature, inputs, version,
                                           output_filter)
        return messages.predict_response(self._call(messages.PREDICT, request))

    def predict(self, texts, text_b=None, signature: str = DEFAULT_SIGNATURE,
                version: int | None = None) -> list[dict]:
        """One dict of outputs per text."""
        inputs = text_inputs(texts, text_b)
        return rows(self.predict_columns(inputs, signature, version), len(inputs["text"]))

    def metadata(self, version: int | None = None) -> dict:
        """`GetModelMetadata` as TF Serving's REST API writes it (signature map unpacked)."""
        request = messages.metadata_request(self.model_name, version)
        return messages.metadata_response(self._call(messages.GET_MODEL_METADATA, request))

    def status(self, version: int | None = None) -> dict:
        """`GetModelStatus` as JSON (`{"model_version_status": [...]}`)."""
        request = messages.status_request(self.model_name, version)
        return messages.status_response(self._call(messages.GET_MODEL_STATUS, request))

    def close(self) -> None:
        """Closes the channel."""
        self.channel.close()

    def __enter__(self) -> GrpcClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
