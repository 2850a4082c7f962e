"""What both clients share: the text inputs they send, the Python values they return and
the error they raise."""

from __future__ import annotations

import base64

import numpy as np

DEFAULT_SIGNATURE = "serving_default"


class ServerError(RuntimeError):
    """An error answer: `code` (e.g. "NOT_FOUND"), `message`, and `http_status` over REST."""

    def __init__(self, code: str, message: str, http_status: int | None = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.http_status = http_status


def text_inputs(texts, text_b) -> dict[str, list[str]]:
    """`{"text": [...]}` (and `"text_b"` for pair tasks) from one text or a list of them."""
    texts = [texts] if isinstance(texts, str) else list(texts)
    inputs = {"text": texts}
    if text_b is not None:
        text_b = [text_b] if isinstance(text_b, str) else list(text_b)
        if len(text_b) != len(texts):
            raise ValueError(f"text_b has {len(text_b)} texts; text has {len(texts)}")
        inputs["text_b"] = text_b
    return inputs


def python_value(value):
    """NumPy/JSON values as plain Python values (bytes decoded when valid UTF-8)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, list):
        return [python_value(x) for x in value]
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    if isinstance(value, dict) and list(value) == ["b64"]:
        return python_value(base64.b64decode(value["b64"]))
    return value


def rows(columns: dict, count: int) -> list[dict]:
    """`{name: batch}` -> one `{name: value}` per batch element (names sorted)."""
    return [{name: python_value(columns[name][i]) for name in sorted(columns)}
            for i in range(count)]
