"""`LabelVocab`: the ordered label names of a task and their integer ids.

Order rule: labels built from training data are SORTED (Python string order), so the ids do
not depend on the order of the rows and two runs over shuffled data agree. A vocabulary
read from a file keeps the file's order, so a model directory that ships `labels.txt`
decodes its logits the way it was trained.

File format: UTF-8 text, one label per line, id = line number (0-based), no blank lines.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

LABELS_FILENAME = "labels.txt"


class LabelVocab:
    """Label names <-> ids.

    Args:
      names: the labels in id order; each a non-empty string without line breaks, no
        repeats.

    Raises:
      ValueError: no labels, an empty or repeated label, or one with a line break.
    """

    def __init__(self, names: Sequence[str]):
        names = [str(n) for n in names]
        if not names:
            raise ValueError("A label vocabulary needs at least one label.")
        index: dict[str, int] = {}
        for i, name in enumerate(names):
            if not name or name != name.strip() or "\n" in name or "\r" in name:
                raise ValueError(f"Label {i} ({name!r}) is empty, has surrounding whitespace "
                                 "or a line break; labels are stored one per line.")
            if name in index:
                raise ValueError(f"Label {name!r} is repeated (ids {index[name]} and {i}).")
            index[name] = i
        self._names = names
        self._index = index

    @classmethod
    def from_labels(cls, labels: Iterable) -> LabelVocab:
        """The sorted set of the labels seen in training data (`None` entries skipped)."""
        return cls(sorted({str(label) for label in labels if label is not None}))

    @classmethod
    def load(cls, path) -> LabelVocab:
        """Reads a vocabulary written by `save` (a file, or a directory with `labels.txt`)."""
        if os.path.isdir(path):
            path = os.path.join(path, LABELS_FILENAME)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                raise ValueError(f"{path}: line {number} is blank; a label file holds one "
                                 "label per line.")
        try:
            return cls([line.rstrip("\r") for line in lines])
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None

    def save(self, path) -> str:
        """Writes one label per line; `path` may be a directory (gets `labels.txt`).

        Returns the path of the written file.
        """
        if os.path.isdir(path):
            path = os.path.join(path, LABELS_FILENAME)
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(name + "\n" for name in self._names))
        return str(path)

    @property
    def names(self) -> list[str]:
        """The labels in id order (a copy)."""
        return list(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name) -> bool:
        return str(name) in self._index

    def __iter__(self):
        return iter(self._names)

    def __eq__(self, other) -> bool:
        return isinstance(other, LabelVocab) and self._names == other._names

    def __repr__(self) -> str:
        return f"LabelVocab({self._names!r})"

    def id(self, name) -> int:
        """Id of one label; `ValueError` listing the known labels when it is unknown."""
        try:
            return self._index[str(name)]
        except KeyError:
            raise ValueError(f"Unknown label {name!r}; the labels are {self._names}.") from None

    def name(self, label_id: int) -> str:
        """Label of one id."""
        label_id = int(label_id)
        if not 0 <= label_id < len(self._names):
            raise ValueError(f"Label id {label_id} is outside 0..{len(self._names) - 1}.")
        return self._names[label_id]

    def encode(self, names: Iterable) -> list[int]:
        """Ids of several labels."""
        return [self.id(n) for n in names]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Labels of several ids."""
        return [self.name(i) for i in ids]
