"""The profiler's trace files (`*.xplane.pb`) read without protobuf or TensorFlow.

`bench/accelerator.py run --profile DIR` traces a few pretraining steps with
`jax.profiler.trace`, on a lent GPU whose image has JAX alone: no TensorFlow, hence no
`xplane_pb2`, and no registry to install one from. A lent machine sends back at most 8 files,
so the traces are summarised there, by this reader of the protobuf wire format and of the
few fields the summary needs:

* `XSpace.planes`; an `XPlane`'s name, lines, event and stat metadata; an `XLine`'s name and
  events; an `XEvent`'s metadata id, offset, duration and stats; an `XStat`'s value
  (tensorflow/tsl/profiler/protobuf/xplane.proto).
* The `Hlo Proto` stat of the `/host:metadata` plane: one `HloProto` per XLA program, of
  which each instruction's name, opcode, `metadata.op_name` (the name scopes JAX traced it
  under: `jit(train_step)/adam_w/...`), custom-call target and called computations
  (xla/service/hlo.proto).

Field numbers are the protos'; unknown fields are skipped, as protobuf does.
`tests/bench/test_accelerator.py` builds its input with `xplane_pb2` and `hlo_pb2` and checks
what this reads.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

# Wire types: 0 varint, 1 fixed 64 bits, 2 length-delimited, 5 fixed 32 bits.
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


@dataclass
class Line:
    name: str
    timestamp_ns: int = 0  # the events' offsets are from this
    events: list = field(default_factory=list)  # (metadata id, offset ps, duration ps, stats)


@dataclass
class Plane:
    name: str
    lines: list = field(default_factory=list)
    event_names: dict = field(default_factory=dict)  # metadata id -> name
    event_stats: dict = field(default_factory=dict)  # metadata id -> {stat name: value}


@dataclass
class Instruction:
    opcode: str
    op_name: str  # the name scopes, from the instruction's metadata
    target: str  # a custom call's target
    calls: tuple  # ids of the computations it calls (a fusion's body)


def _varint(data: memoryview, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


def fields(data):
    """`(field number, value)` of one message: an int for a varint or a fixed-width field
    (raw bits), a memoryview for a length-delimited one (a string, bytes or a message)."""
    data = memoryview(data)
    position, end = 0, len(data)
    while position < end:
        key, position = _varint(data, position)
        kind = key & 7
        if kind == _VARINT:
            value, position = _varint(data, position)
        elif kind == _BYTES:
            size, position = _varint(data, position)
            value, position = data[position:position + size], position + size
        elif kind in (_FIXED64, _FIXED32):
            width = 8 if kind == _FIXED64 else 4
            value = int.from_bytes(data[position:position + width], "little")
            position += width
        else:
            raise ValueError(f"protobuf wire type {kind} (groups) is not used by these protos")
        yield key >> 3, value


def _text(value) -> str:
    return bytes(value).decode("utf-8", "replace")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def plane_names(space: bytes) -> list[tuple[str, memoryview]]:
    """Each plane of a serialized `XSpace`: its name and its still-encoded message."""
    found = []
    for number, value in fields(space):
        if number == 1:
            name = next((_text(v) for n, v in fields(value) if n == 2), "")
            found.append((name, value))
    return found


def read_plane(message) -> Plane:
    """One encoded `XPlane`, its stats' values resolved: a `ref_value` to the stat metadata's
    name, strings decoded, bytes kept (a stat's `double_value` as its raw 64 bits)."""
    plane, lines, stat_names, metadata = Plane(""), [], {}, []
    for number, value in fields(message):
        if number == 2:
            plane.name = _text(value)
        elif number == 3:
            lines.append(value)
        elif number in (4, 5):  # map entries: key 1, value 2
            entry = dict(fields(value))
            if number == 5:
                stat_names[entry.get(1, 0)] = _text(
                    next((v for n, v in fields(entry.get(2, b"")) if n == 2), b""))
            else:
                metadata.append((entry.get(1, 0), entry.get(2, b"")))
    for key, value in metadata:
        name, stats = "", []
        for number, item in fields(value):
            if number == 2:
                name = _text(item)
            elif number == 5:
                stats.append(item)
        plane.event_names[key] = name
        plane.event_stats[key] = _stats(stats, stat_names)
    plane.lines = [_line(value, stat_names) for value in lines]
    return plane


def _line(message, stat_names: dict) -> Line:
    line = Line("")
    for number, value in fields(message):
        if number == 2:
            line.name = _text(value)
        elif number == 3:
            line.timestamp_ns = _signed(value)
        elif number == 4:
            event = {1: 0, 2: 0, 3: 0}
            stats = []
            for item_number, item in fields(value):
                if item_number == 4:
                    stats.append(item)
                else:
                    event[item_number] = item
            line.events.append((event[1], event[2], event[3], _stats(stats, stat_names)))
    return line


def _stats(messages, stat_names: dict) -> dict:
    resolved = {}
    for message in messages:
        stat = dict(fields(message))
        name = stat_names.get(stat.get(1, 0), "")
        if 7 in stat:
            resolved[name] = stat_names.get(stat[7], "")
        elif 5 in stat:
            resolved[name] = _text(stat[5])
        elif 6 in stat:
            resolved[name] = bytes(stat[6])
        elif 4 in stat:
            resolved[name] = _signed(stat[4])
        elif 3 in stat:
            resolved[name] = stat[3]
        elif 2 in stat:
            resolved[name] = struct.unpack("<d", stat[2].to_bytes(8, "little"))[0]
    return resolved


def hlo_module(proto: bytes) -> tuple[str, dict, dict]:
    """A serialized `HloProto`: its module's name, `{instruction name: Instruction}` over
    every computation, and `{computation id: [Instruction]}`."""
    module = next((v for n, v in fields(proto) if n == 1), b"")
    name, instructions, computations = "", {}, {}
    for number, value in fields(module):
        if number == 1:
            name = _text(value)
        elif number == 3:
            members, key = [], None
            for item_number, item in fields(value):
                if item_number == 2:
                    members.append(_instruction(item))
                elif item_number == 5:
                    key = _signed(item)
            computations[key] = [instruction for _, instruction in members]
            instructions.update(members)
    return name, instructions, computations


def _instruction(message) -> tuple[str, Instruction]:
    name, opcode, op_name, target, calls = "", "", "", "", []
    for number, value in fields(message):
        if number == 1:
            name = _text(value)
        elif number == 2:
            opcode = _text(value)
        elif number == 7:
            op_name = next((_text(v) for n, v in fields(value) if n == 2), "")
        elif number == 28:
            target = _text(value)
        elif number == 38:  # repeated int64: packed (one length-delimited run) or one by one
            if isinstance(value, int):
                calls.append(_signed(value))
            else:
                packed, position = memoryview(value), 0
                while position < len(packed):
                    call, position = _varint(packed, position)
                    calls.append(_signed(call))
    return name, Instruction(opcode, op_name, target, tuple(calls))
