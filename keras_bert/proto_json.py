"""Protocol buffers as TF Serving writes them in JSON, on every protobuf TensorFlow brings.

TF Serving's REST API prints every field, default values included, under its proto name.
protobuf 5.26 renamed that option of `json_format.MessageToDict`
(`including_default_value_fields` -> `always_print_fields_with_no_presence`); TensorFlow
2.16 and 2.17 come with protobuf 4, later releases with 5 or 6.
"""

from __future__ import annotations

import inspect

from google.protobuf import json_format

_EVERY_FIELD = ("always_print_fields_with_no_presence"
                if "always_print_fields_with_no_presence"
                in inspect.signature(json_format.MessageToDict).parameters
                else "including_default_value_fields")


def message_to_dict(message) -> dict:
    """`message` as a JSON-ready dict: proto field names, every field printed."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                     **{_EVERY_FIELD: True})
