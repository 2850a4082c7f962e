"""The gRPC client's own work per request: building a `PredictRequest` of raw texts and
reading the `PredictResponse`, by `keras_bert_client` (TF Serving's messages encoded by
field number in Python, no TensorFlow) against what a user of `tensorflow-serving-api`
writes (`tf.make_tensor_proto` into the library's protobuf classes, `SerializeToString`;
`PredictResponse.FromString` and `tf.make_ndarray` per output), the way `GrpcClient` did it
before it encoded the messages itself.

Per batch size, one request of that many texts (~60 characters each) and one response with
a classifier's outputs and a sentence embedding per text (`label` strings, `probabilities`
[n, 2], `embedding` [n, 384] float32), serialized once by the protobuf classes in each of
TF Serving's encodings: `tensor_content` (raw little-endian bytes) and the typed value
lists (`float_val`, ...; what TF Serving writes by default). Timed round-robin in one
process after warm-up rounds; the figure is the median microseconds per request (encode +
decode), and the ratio ours / serving-api.

    .venv/bin/python bench/client_codec.py            # batch 1, 32, 256; 15 rounds
    .venv/bin/python bench/client_codec.py --quick    # smoke check
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402  (sets up the thread pools before TF starts)


def _response(tf, predict_pb2, n: int, typed: bool) -> bytes:
    """A serialized `PredictResponse` of `n` rows, in tensor_content or typed lists."""
    import numpy as np

    rng = np.random.default_rng(0)
    outputs = {"label": np.array([b"positive", b"negative"] * (n // 2 + 1), object)[:n],
               "probabilities": rng.random((n, 2), np.float32),
               "embedding": rng.standard_normal((n, 384)).astype(np.float32)}
    response = predict_pb2.PredictResponse()
    response.model_spec.name = "bert"
    for name, value in outputs.items():
        proto = tf.make_tensor_proto(value)
        if typed and value.dtype == np.float32:
            proto.ClearField("tensor_content")
            proto.float_val.extend(value.reshape(-1).tolist())
        response.outputs[name].CopyFrom(proto)
    return response.SerializeToString()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", type=int, nargs="+", default=[1, 32, 256])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--repeats", type=int, default=50, help="requests per timed call")
    p.add_argument("--quick", action="store_true", help="tiny sizes, a smoke check")
    args = p.parse_args(argv)
    if args.quick:
        args.batches, args.rounds, args.repeats = [1, 8], 2, 2
    common.configure_threads(1)
    import numpy as np
    import tensorflow as tf
    from keras_bert_client import serving_messages as ours
    from tensorflow_serving.apis import predict_pb2

    info = common.machine_description()
    print(f"host: {common.host_line(info)}; load {common.load_average()}")
    rows = []
    for n in args.batches:
        texts = [f"A sentence of about sixty characters, number {i:05d}, to send."
                 for i in range(n)]
        for encoding in ("tensor_content", "typed"):
            answer = _response(tf, predict_pb2, n, encoding == "typed")

            def run_ours(texts=texts, answer=answer):
                for _ in range(args.repeats):
                    ours.predict_request("bert", "serving_default", {"text": texts})
                    ours.predict_response(answer)

            def run_serving_api(texts=texts, answer=answer):
                for _ in range(args.repeats):
                    request = predict_pb2.PredictRequest()
                    request.model_spec.name = "bert"
                    request.model_spec.signature_name = "serving_default"
                    request.inputs["text"].CopyFrom(tf.make_tensor_proto(
                        np.array([t.encode() for t in texts], object)))
                    request.SerializeToString()
                    parsed = predict_pb2.PredictResponse.FromString(answer)
                    {k: tf.make_ndarray(v) for k, v in parsed.outputs.items()}

            check_ours = ours.predict_response(answer)
            parsed = predict_pb2.PredictResponse.FromString(answer)
            for name, value in parsed.outputs.items():  # the same arrays, or no timing
                np.testing.assert_array_equal(check_ours[name], tf.make_ndarray(value))
            timings = common.interleaved({"ours": run_ours, "serving_api": run_serving_api},
                                         args.rounds)
            us = {k: t.median / args.repeats * 1e6 for k, t in timings.items()}
            rows.append([n, encoding, f"{us['ours']:.0f}", f"{us['serving_api']:.0f}",
                         f"{us['ours'] / us['serving_api']:.2f}x"])
    print(common.markdown_table(["texts", "response encoding", "ours (us)",
                                 "serving-api (us)", "ours / serving-api"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
