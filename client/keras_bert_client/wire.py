"""Protocol buffers' wire format, enough to speak TF Serving's protos without `protobuf`.

A message is a sequence of fields: a varint key (`number << 3 | wire type`) and a value: a
varint (type 0), 8 bytes (type 1), a length and that many bytes (type 2: strings, bytes,
messages, packed repeated scalars) or 4 bytes (type 5).
https://protobuf.dev/programming-guides/encoding/
"""

from __future__ import annotations

import struct
from collections import defaultdict

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


class WireError(ValueError):
    """Bytes that are not a well-formed protocol buffer message."""


_ONE_BYTE = [bytes((i,)) for i in range(128)]


def varint(value: int) -> bytes:
    """`value` as a varint; negative values as their 64-bit two's complement (10 bytes)."""
    if 0 <= value < 128:
        return _ONE_BYTE[value]
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field: a string, bytes, a message or a packed repeated scalar."""
    return varint(number << 3 | LENGTH) + varint(len(payload)) + payload


def varint_field(number: int, value: int) -> bytes:
    """A varint field (int32, int64, uint, bool, enum); nothing for 0 (proto3's default)."""
    return varint(number << 3 | VARINT) + varint(value) if value else b""


def string_field(number: int, text: str) -> bytes:
    """A UTF-8 string field; nothing for "" (proto3's default)."""
    return field(number, text.encode("utf-8")) if text else b""


def map_entry(number: int, key: str, value: bytes) -> bytes:
    """One entry of a `map<string, Message>` field: key = 1, value = 2."""
    return field(number, field(1, key.encode("utf-8")) + field(2, value))


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    if at < len(data) and data[at] < 0x80:  # one byte: most keys and lengths
        return data[at], at + 1
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise WireError("truncated or overlong varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


class Fields:
    """A parsed message: its fields by number, each a list of `(wire type, value)` in wire
    order (ints for varint and fixed fields, unsigned; bytes for length-delimited ones)."""

    def __init__(self, data: bytes):
        self._fields: dict[int, list[tuple[int, int | bytes]]] = defaultdict(list)
        data = memoryview(data)  # values are slices of it, not copies
        at = 0
        while at < len(data):
            key, at = _read_varint(data, at)
            number, kind = key >> 3, key & 7
            if kind == VARINT:
                value, at = _read_varint(data, at)
            elif kind in (FIXED64, FIXED32):
                size = 8 if kind == FIXED64 else 4
                if at + size > len(data):
                    raise WireError(f"field {number}: truncated fixed-size value")
                value, at = int.from_bytes(data[at:at + size], "little"), at + size
            elif kind == LENGTH:
                size, at = _read_varint(data, at)
                if at + size > len(data):
                    raise WireError(f"field {number}: length {size} runs past the message")
                value, at = data[at:at + size], at + size
            else:
                raise WireError(f"field {number}: unsupported wire type {kind}")
            self._fields[number].append((kind, value))

    def __contains__(self, number: int) -> bool:
        return number in self._fields

    def all(self, number: int) -> list:
        """A repeated field's values (length-delimited ones, strings, bytes and messages, as
        views of the parsed bytes)."""
        return [value for _, value in self._fields.get(number, [])]

    def one(self, number: int, default=None):
        """A singular field's value: the last one on the wire (protobuf's rule)."""
        values = self._fields.get(number)
        return values[-1][1] if values else default

    def text(self, number: int) -> str:
        """A singular string field ("" when absent)."""
        return bytes(self.one(number, b"")).decode("utf-8")

    def message(self, number: int) -> Fields | None:
        """A singular message field, parsed; None when absent."""
        return Fields(self.one(number)) if number in self else None

    def varints(self, number: int) -> list[int]:
        """A repeated varint field's values, packed or not (parsers must accept both)."""
        out = []
        for kind, value in self._fields.get(number, []):
            if kind == LENGTH:
                at = 0
                while at < len(value):
                    item, at = _read_varint(value, at)
                    out.append(item)
            else:
                out.append(value)
        return out

    def fixed(self, number: int, code: str) -> bytes:
        """A repeated fixed-size field's values (`code`: struct's "f" or "d"), packed or not,
        as their little-endian bytes (for `numpy.frombuffer`)."""
        size, parts = struct.calcsize("<" + code), []
        for kind, value in self._fields.get(number, []):
            if kind == LENGTH:
                if len(value) % size:
                    raise WireError(f"field {number}: packed length {len(value)} is not a "
                                    f"multiple of {size}")
                parts.append(value)
            else:
                parts.append(value.to_bytes(size, "little"))
        return b"".join(parts)

    def map(self, number: int) -> dict[str, bytes]:
        """A `map<string, Message>` field as `{key: the value message's bytes}`."""
        out = {}
        for entry in self.all(number):
            parts = Fields(entry)
            out[parts.text(1)] = parts.one(2, b"")
        return out


def signed(value: int, bits: int = 64) -> int:
    """An unsigned varint or fixed value as the signed integer it encodes."""
    return value - (1 << bits) if value >= 1 << (bits - 1) else value
