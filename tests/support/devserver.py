"""What the development server's tests share (`tests/devserver/test_server.py`,
`test_server_versions.py`, and the clients' and exports' tests that serve): the texts they
send, the server (it needs the `serving` extra), and what the SavedModel itself answers."""

from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf

from tests.support.reference import require

TEXTS = ["Call me Ishmael.", "", "The cat sat on the mat!", "Naïve café — BERT reads."]


def model_server(*args, **kwargs):
    """`keras_bert.devserver.server.ModelServer(*args, **kwargs)`. The server needs the
    `serving` extra (tensorflow-serving-api, grpcio), imported here: without it the tests
    that serve skip naming what is missing (fail under CI), and collection goes on."""
    return require("keras_bert.devserver.server").ModelServer(*args, **kwargs)


@functools.cache
def load(export_dir: str):
    """`tf.saved_model.load`, once per export."""
    return tf.saved_model.load(export_dir)


def reference_outputs(export_dir: str, texts, signature="serving_default") -> dict:
    """What `tf.saved_model.load` answers in this process, as arrays."""
    outputs = load(export_dir).signatures[signature](text=tf.constant(texts))
    return {name: value.numpy() for name, value in outputs.items()}


def assert_rows_match(rows, expected: dict, atol=1e-5) -> None:
    """`rows` (one dict per text) equal the columns of `expected`."""
    assert len(rows) == len(next(iter(expected.values())))
    for name, column in expected.items():
        np.testing.assert_allclose(np.array([row[name] for row in rows]), column, atol=atol)
