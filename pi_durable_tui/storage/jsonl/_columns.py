"""Compact columns for the JSONL index: sorted tables, multimaps and stable hashes.

The index of a JSONL store (``_index``) keeps one row per record ever
committed: every entry, task, submission, conversation and document
incarnation. Held as Python objects (a dict entry, a dataclass, a few ints and
strings each) that costs about 200 bytes and a microsecond to build per row, so
a store with 100,000 entries would cost 20 MB and a tenth of a second to load.
Held as ``array`` columns it costs 1 to 8 bytes per field, and loading a
checkpoint is one read into each column, at the speed of ``memcpy``
(``_checkpoint``).

What this module owns:

- ``Table``: rows sorted by ID, one ``array`` per field; a subclass names its
  columns in ``COLUMNS``. Lookups bisect the ID column (and remember the rows
  they found); IDs mostly arrive in increasing order, so inserting mostly
  appends.
- ``Codes``: small integers for the few distinct values of a string field.
- ``MultiMap``: sorted ``(key, value)`` pairs of integers (documents by scope),
  and ``HashIndex``, the same keyed by hashes (documents by address,
  submissions by request ID), whose new pairs wait in a dict until a checkpoint
  merges them, since a hash belongs anywhere in the sorted columns.
- ``stable_hash``: a 64-bit hash that is the same in every process (Python's
  ``hash`` of a string is not), so hashed indexes survive in a checkpoint. A
  hash only narrows the search: every lookup compares the real values, so a
  collision costs a comparison, never a wrong answer.
"""

from __future__ import annotations

import bisect
import json
import zlib
from array import array
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

Sections = dict[str, "array[int]"]
"""Named columns, as a checkpoint stores them."""


def new_column(typecode: str = "q") -> array[int]:
    """Return an empty column: ``q`` (signed 64-bit, the default), ``b`` or ``B`` (bytes)."""
    return array(typecode)


def find(ids: array[int], item: int) -> int:
    """Return the position of ``item`` in the sorted column ``ids``, or -1."""
    if not ids or item > ids[-1]:
        return -1  # the common case for a fresh ID: no bisection
    position = bisect.bisect_left(ids, item)
    return position if ids[position] == item else -1


def stable_hash(*parts: str) -> int:
    """Return a signed 64-bit hash of ``parts``, never 0 (0 means "none" in columns).

    CRC-32 and Adler-32 side by side: not cryptographic, but fast (a fraction of a
    microsecond, paid by every commit that writes a submission) and plenty to keep
    candidates few; lookups compare the real values anyway.
    """
    joined = "\x00".join(parts).encode("utf-8", "surrogatepass")
    value = zlib.crc32(joined) << 32 | zlib.adler32(joined)
    return (value - (1 << 64) if value >= 1 << 63 else value) or 1


_CACHED_ROWS = 4096


class Table:
    """Rows sorted by ID, one column per field. See the module docstring."""

    COLUMNS: ClassVar[tuple[tuple[str, str], ...]] = ()
    """``(attribute, typecode)`` of every column besides ``ids``."""

    def __init__(self) -> None:
        self.ids: array[int] = new_column()
        for name, typecode in self.COLUMNS:
            setattr(self, name, new_column(typecode))
        self.bind()

    def bind(self) -> None:
        """Collect the columns in ``COLUMNS`` order (after any of them is replaced).

        REMINDER: whoever assigns a column attribute calls this, or ``set_row``
        would fill the replaced array.
        """
        self.columns: tuple[array[int], ...] = tuple(
            getattr(self, name) for name, _ in self.COLUMNS
        )
        self._rows: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def row(self, item: int) -> int:
        """Return the row of ``item``, or -1.

        Rows found are remembered (a bisection costs ten times a dict lookup, and the
        same few IDs are asked for again and again); inserting anywhere but at the end
        moves rows, and forgets them all.
        """
        row = self._rows.get(item)
        if row is None:
            row = find(self.ids, item)
            if row >= 0:
                if len(self._rows) >= _CACHED_ROWS:
                    self._rows.clear()
                self._rows[item] = row
        return row

    def insert(self, item: int) -> int:
        """Return the row of ``item``, adding one (every field 0) if it has none.

        REMINDER: the caller sets every field of a new row right away; a row of
        zeros describes nothing real.
        """
        ids = self.ids
        if not ids or item > ids[-1]:
            ids.append(item)
            for column in self.columns:
                column.append(0)
            return len(ids) - 1
        position = bisect.bisect_left(ids, item)
        if ids[position] == item:
            return position
        ids.insert(position, item)
        for column in self.columns:
            column.insert(position, 0)
        self._rows.clear()  # REMINDER: every row after ``position`` moved
        return position

    def set_row(self, item: int, values: tuple[int, ...]) -> None:
        """Set every field of ``item``'s row (added if new), in ``COLUMNS`` order."""
        ids = self.ids
        if not ids or item > ids[-1]:  # the common case: a new, highest ID
            ids.append(item)
            for column, value in zip(self.columns, values, strict=True):
                column.append(value)
            return
        row = self.insert(item)
        for column, value in zip(self.columns, values, strict=True):
            column[row] = value

    def sections(self, prefix: str) -> Sections:
        """Return every column, named ``<prefix>.<attribute>``."""
        out: Sections = {f"{prefix}.ids": self.ids}
        for name, _ in self.COLUMNS:
            out[f"{prefix}.{name}"] = getattr(self, name)
        return out

    def load(self, prefix: str, sections: Mapping[str, array[int]]) -> None:
        """Take the columns saved by ``sections``.

        Raises:
            ValueError: A column is missing, has the wrong type or length.
        """
        self.ids = _take(sections, f"{prefix}.ids", "q", None)
        for name, typecode in self.COLUMNS:
            setattr(self, name, _take(sections, f"{prefix}.{name}", typecode, len(self.ids)))
        self.bind()


class Codes:
    """Small integers standing for the few distinct values of a field (kinds, statuses).

    Values are whatever JSON the records hold (normally strings); a code is the
    value's position in ``values``, so the list alone restores the mapping.
    """

    __slots__ = ("_codes", "values")

    def __init__(self, values: list[Any] | None = None) -> None:
        self.values: list[Any] = []
        self._codes: dict[Any, int] = {}
        for value in values or []:
            self.code(value)

    def code(self, value: Any) -> int:
        """Return the code of ``value``, giving it one if it has none."""
        if isinstance(value, str):  # nearly always: one dict lookup
            code = self._codes.get(value)
            if code is not None:
                return code
        key = _hashable(value)
        code = self._codes.get(key)
        if code is None:
            code = self._codes[key] = len(self.values)
            self.values.append(value)
        return code

    def lookup(self, value: Any) -> int:
        """Return the code of ``value``, or -1 when no row holds it."""
        return self._codes.get(_hashable(value), -1)


def _hashable(value: Any) -> Any:
    # Records are checked as JSON, not typed: a kind or status could be a list. Equal
    # values share a code, as they compare equal in MemoryStorage's filters.
    if value is None or isinstance(value, (str, int, float)):
        return value
    return ("\x00json", json.dumps(value, sort_keys=True))


class MultiMap:
    """Sorted ``(key, value)`` pairs of integers; several values per key."""

    __slots__ = ("keys", "values")

    def __init__(self) -> None:
        self.keys: array[int] = new_column()
        self.values: array[int] = new_column()

    def __len__(self) -> int:
        return len(self.keys)

    def span(self, key: int) -> tuple[int, int]:
        """Return the positions ``[low, high)`` of ``key``'s values."""
        keys = self.keys
        low = bisect.bisect_left(keys, key)
        return low, bisect.bisect_right(keys, key, low)

    def get(self, key: int) -> Iterator[int]:
        """Yield ``key``'s values in ascending order."""
        low, high = self.span(key)
        values = self.values
        for position in range(low, high):
            yield values[position]

    def add(self, key: int, value: int) -> None:
        """Add a pair (adding an existing pair is harmless)."""
        low, high = self.span(key)
        position = bisect.bisect_left(self.values, value, low, high)
        if position < high and self.values[position] == value:
            return
        if position == len(self.keys):
            self.keys.append(key)
            self.values.append(value)
        else:
            self.keys.insert(position, key)
            self.values.insert(position, value)

    def remove(self, key: int, value: int) -> None:
        """Remove a pair, if present."""
        low, high = self.span(key)
        position = bisect.bisect_left(self.values, value, low, high)
        if position < high and self.values[position] == value:
            del self.keys[position]
            del self.values[position]

    def sections(self, prefix: str) -> Sections:
        """Return both columns, named ``<prefix>.keys`` and ``<prefix>.values``."""
        return {f"{prefix}.keys": self.keys, f"{prefix}.values": self.values}

    def load(self, prefix: str, sections: Mapping[str, array[int]]) -> None:
        """Take the columns saved by ``sections``.

        Raises:
            ValueError: A column is missing or has the wrong type or length.
        """
        self.keys = _take(sections, f"{prefix}.keys", "q", None)
        self.values = _take(sections, f"{prefix}.values", "q", len(self.keys))


class HashIndex(MultiMap):
    """A ``MultiMap`` keyed by hashes: sorted columns as loaded, plus what changed since.

    Hash keys are spread uniformly, so a new pair belongs anywhere in the sorted
    columns, and inserting there moves half of them: a cost per commit that grows
    with history. New pairs go to ``_added`` (a dict) and removed ones to
    ``_removed`` instead, and ``sections`` merges them into the columns (with slice
    copies, in C) only when a checkpoint is written.
    """

    __slots__ = ("_added", "_removed")

    def __init__(self) -> None:
        super().__init__()
        self._added: dict[int, list[int]] = {}
        self._removed: set[tuple[int, int]] = set()

    def has(self, key: int) -> bool:
        """Whether any value is stored under ``key`` (removed ones may still count)."""
        low, high = self.span(key)
        return low < high or key in self._added

    def get(self, key: int) -> Iterator[int]:
        """Yield ``key``'s values, in no particular order."""
        removed = self._removed
        for value in super().get(key):
            if not removed or (key, value) not in removed:
                yield value
        yield from self._added.get(key, ())

    def add(self, key: int, value: int) -> None:
        """Add a pair."""
        if (key, value) in self._removed:
            self._removed.discard((key, value))
            return
        low, high = self.span(key)
        position = bisect.bisect_left(self.values, value, low, high)
        if position < high and self.values[position] == value:
            return  # already in the columns
        added = self._added.setdefault(key, [])
        if value not in added:
            added.append(value)

    def remove(self, key: int, value: int) -> None:
        """Remove a pair, if present."""
        added = self._added.get(key)
        if added is not None and value in added:
            added.remove(value)
            if not added:
                del self._added[key]
            return
        low, high = self.span(key)
        position = bisect.bisect_left(self.values, value, low, high)
        if position < high and self.values[position] == value:
            self._removed.add((key, value))

    def sections(self, prefix: str) -> Sections:
        """Merge the changes into the columns and return them."""
        if self._added or self._removed:
            self._merge()
        return super().sections(prefix)

    def load(self, prefix: str, sections: Mapping[str, array[int]]) -> None:
        """Take the columns saved by ``sections``."""
        super().load(prefix, sections)
        self._added.clear()
        self._removed.clear()

    def _merge(self) -> None:
        # Edits as (position in the old columns, kind, key, value): kind 0 drops the
        # pair at that position, kind 1 inserts a pair before it.
        edits: list[tuple[int, int, int, int]] = []
        for key, value in self._removed:
            low, high = self.span(key)
            edits.append((bisect.bisect_left(self.values, value, low, high), 0, key, value))
        for key, added in self._added.items():
            low, high = self.span(key)
            for value in added:
                edits.append((bisect.bisect_left(self.values, value, low, high), 1, key, value))
        edits.sort()
        keys, values = new_column(), new_column()
        start = 0
        for position, kind, key, value in edits:
            keys.extend(self.keys[start:position])
            values.extend(self.values[start:position])
            if kind:
                keys.append(key)
                values.append(value)
                start = max(start, position)
            else:
                start = position + 1
        keys.extend(self.keys[start:])
        values.extend(self.values[start:])
        self.keys, self.values = keys, values
        self._added.clear()
        self._removed.clear()


def _take(
    sections: Mapping[str, array[int]], name: str, typecode: str, length: int | None
) -> array[int]:
    column = sections.get(name)
    if column is None or column.typecode != typecode:
        raise ValueError(f"checkpoint column {name} is missing or not of type {typecode}")
    if length is not None and len(column) != length:
        raise ValueError(f"checkpoint column {name} has {len(column)} rows, not {length}")
    return column
