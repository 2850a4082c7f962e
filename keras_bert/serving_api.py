"""`tensorflow-serving-api`, an optional dependency (the `serving` extra).

Each release of it requires one TensorFlow minor version, so a required dependency on it
made pip replace a user's installed TensorFlow. Exports do not need it (their warmup
records are encoded in `keras_bert.export.warmup`), nor do the clients (`keras_bert_client`
encodes TF Serving's messages itself); the development server (`keras-bert serve`) and
reading warmup records do, and say how to install it when it is missing.
"""

from __future__ import annotations

import importlib

INSTALL = ("pip install 'keras-bert-tf[serving]'; next to a TensorFlow you keep, pin it to "
           "that TensorFlow's minor version, e.g. pip install 'tensorflow-serving-api==2.18.*'")


class MissingServingApi(ImportError):
    """`tensorflow-serving-api` is needed and not installed."""


def serving_apis(purpose: str, *modules: str) -> list:
    """The modules `tensorflow_serving.apis.<name>` of `modules`; `MissingServingApi`
    naming `purpose` and the install command when the package is missing."""
    try:
        return [importlib.import_module(f"tensorflow_serving.apis.{name}") for name in modules]
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("tensorflow_serving"):
            raise
        raise MissingServingApi(f"{purpose} needs tensorflow-serving-api, which is not "
                                f"installed: {INSTALL}") from None


__all__ = ["INSTALL", "MissingServingApi", "serving_apis"]
