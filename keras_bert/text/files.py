"""Text files read as UTF-8, with an error that names the file and line of a bad byte."""

from __future__ import annotations

import io


def read_utf8(path, bom: bool = True) -> str:
    """The contents of the file `path` decoded as UTF-8 (a leading byte-order mark dropped
    when `bom`).

    Raises `ValueError` naming the file, line and column of the first byte that is not
    UTF-8 (and `IsADirectoryError` / `FileNotFoundError` / `PermissionError` as `open`).
    """
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ValueError(f"{path}: line {line}: invalid UTF-8 (byte 0x{data[e.start]:02x} at "
                         f"byte column {column}); save the file as UTF-8") from None


def open_utf8(path, bom: bool = True) -> io.StringIO:
    """`read_utf8(path)` as a text stream (universal newlines, like `open`)."""
    return io.StringIO(read_utf8(path, bom), newline=None)
