r"""How values bind as the PostgreSQL store's indexed columns (protocol, Strings; R128).

Records are JSON text made by ``json_ops.dumps``, which escapes control
characters and lone surrogates, so PostgreSQL's ``text`` takes them as they
are. Indexed text columns (task and document kinds, document keys, request IDs,
scope kinds, status filters) hold the caller's strings, and PostgreSQL's
``text`` can hold neither NUL nor a lone surrogate (UTF-8 cannot encode one).
``column_text`` keeps every other string as it is, readable in ``psql``, and
writes the few that cannot be stored, or that start with the marker ``\x01``,
as the marker followed by their ASCII JSON literal. The mapping is one to one
(only escaped strings start with the marker), so equality in SQL is equality
of the strings, never a confusion of lookalikes.

Integers bind as ``bigint``; a key outside it can match nothing, so lookups and
filters by one answer ``None`` or nothing (``fits``) instead of failing.
"""

from __future__ import annotations

import json
import re
from typing import Any

_MARKER = "\x01"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_INT64 = range(-(2**63), 2**63)


def fits(value: object) -> bool:
    """Whether a key can be bound as a PostgreSQL ``bigint``."""
    return isinstance(value, int) and not isinstance(value, bool) and value in _INT64


def column_text(value: str | None) -> str | None:
    """Return a string as an indexed text column holds it (``None`` stays ``None``)."""
    if value is None:
        return None
    if value.startswith(_MARKER) or _UNSTORABLE.search(value) is not None:
        return _MARKER + json.dumps(value, ensure_ascii=True)
    return value


def from_column_text(value: str | None) -> str | None:
    """Return the string an indexed text column holds (the inverse of ``column_text``)."""
    if value is not None and value.startswith(_MARKER):
        decoded: str = json.loads(value[1:])
        return decoded
    return value


class Where:
    """A conjunction of SQL conditions with ``$n`` parameters, numbered in binding order.

    ``store`` is always ``$1``: every query of a store names it first.
    """

    def __init__(self, store: int) -> None:
        self.clauses: list[str] = ["store = $1"]
        self.params: list[Any] = [store]

    def bind(self, value: Any) -> str:
        """Add a parameter and return its placeholder."""
        self.params.append(value)
        return f"${len(self.params)}"

    def add(self, clause: str, *values: Any) -> None:
        """Add a clause whose ``{}`` fields are filled with the placeholders of ``values``."""
        self.clauses.append(clause.format(*(self.bind(v) for v in values)))

    def equals(self, column: str, value: Any) -> None:
        """Add ``column = value`` (``None``: ``IS NULL``; an integer too big: nothing)."""
        if value is None:
            self.clauses.append(f"{column} IS NULL")
        elif isinstance(value, int) and not isinstance(value, bool) and not fits(value):
            self.clauses.append("FALSE")
        elif isinstance(value, str):
            self.add(f"{column} = {{}}", column_text(value))
        else:
            self.add(f"{column} = {{}}", value)

    def equals_if(self, column: str, value: Any) -> None:
        """Add ``column = value`` unless ``value`` is ``None`` (no filter)."""
        if value is not None:
            self.equals(column, value)

    def among(self, column: str, values: list[str] | None) -> None:
        """Add ``column = ANY(values)``; an empty list matches nothing, ``None`` everything."""
        if values is not None:
            self.add(f"{column} = ANY({{}}::text[])", [column_text(v) for v in values])

    def sql(self) -> str:
        """The conditions joined by ``AND``."""
        return " AND ".join(self.clauses)
