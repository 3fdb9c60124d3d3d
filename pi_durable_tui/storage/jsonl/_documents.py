"""The documents table of a JSONL index: incarnations, sidecar state and current values.

One row per document incarnation ever created (``jsonl_columns.Table``):

- the record: kind (``Codes``), scope, history and fork policy, family key (in
  the ``keys`` byte buffer), ``created`` and ``retired`` (0: live);
- what its sidecar holds, all derived from the commit markers of ``main.jsonl``:
  ``ordinals`` (revisions ever stored: the next one's ordinal), ``first`` (the
  ordinal of the first record still in the file), ``base`` (the ordinal of the
  newest base), ``version`` and ``last_seq`` of the newest revision, ``deltas``
  since the newest base, and ``size``, the file's confirmed length in bytes;
- where its current value is: ``value_at``/``value_length`` in the ``blob``
  byte buffer (JSON text, -1: none), unless ``values`` holds it parsed.

Why values live as text: a store has as many live documents as it has
conversations, tasks and family keys; parsing them all at open would cost a
``json.loads`` each. The blob is loaded in one copy from a checkpoint and a value
is parsed when first needed: a read parses a fresh copy (every read is a
detached copy, R128), a delta commit parses it once and keeps the result in
``values`` (marked ``dirty`` until the next checkpoint writes it back as text).

Two ``MultiMap`` indexes find documents: ``by_scope`` (an exact integer per
scope) and ``by_address`` (a stable hash of kind, scope and key; candidates are
compared field by field, so a collision is never a wrong answer). ``pending``
names the documents whose sidecar still holds records that reclamation should
have dropped (a failed rewrite, R132), so a later open finishes the job without
looking at every sidecar.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from typing import Any

from pi_durable_tui.storage.json_ops import JsonObject, copy_json, dumps, loads
from pi_durable_tui.storage.jsonl._columns import (
    Codes,
    HashIndex,
    MultiMap,
    Sections,
    Table,
    stable_hash,
)
from pi_durable_tui.storage.records import (
    ConversationScope,
    DocAddress,
    DocScope,
    DocumentRecord,
    ScopeRef,
    SessionScope,
    TaskScope,
)

SCOPE_KINDS = ("session", "conversation", "task")
_SHIFT = 54
"""Scope keys are ``kind_code << 54 | id``: IDs stay below 2**53, so keys never collide."""
_COMPACT_SLACK = 1 << 20
_CACHED_RECORDS = 4096


def scope_key(scope: ScopeRef) -> int | None:
    """Return the integer ``by_scope`` indexes a scope under, or ``None`` if none can match."""
    kind, scope_id = scope.kind, scope.id
    if kind == "session":
        return 0 if scope_id is None else None
    if kind not in SCOPE_KINDS or not isinstance(scope_id, int) or isinstance(scope_id, bool):
        return None
    if not 0 <= scope_id < 1 << 53:
        return None
    return SCOPE_KINDS.index(kind) << _SHIFT | scope_id


def address_hash(address: DocAddress) -> int:
    """Return the hash ``by_address`` indexes an address under."""
    key = "" if address.key is None else "k" + address.key
    return stable_hash(str(address.kind), address.scope.kind, str(address.scope.id), key)


class Documents(Table):
    """Every document incarnation. See the module docstring."""

    COLUMNS = (
        ("kind", "i"),
        ("scope", "b"),
        ("scope_id", "q"),
        ("history", "i"),
        ("fork", "i"),
        ("key_at", "q"),
        ("key_length", "q"),
        ("created", "q"),
        ("retired", "q"),
        ("ordinals", "q"),
        ("first", "q"),
        ("base", "q"),
        ("version", "q"),
        ("deltas", "q"),
        ("last_seq", "q"),
        ("size", "q"),
        ("value_at", "q"),
        ("value_length", "q"),
    )
    kind: array[int]
    scope: array[int]
    scope_id: array[int]
    history: array[int]
    fork: array[int]
    key_at: array[int]
    key_length: array[int]
    created: array[int]
    retired: array[int]
    ordinals: array[int]
    first: array[int]
    base: array[int]
    version: array[int]
    deltas: array[int]
    last_seq: array[int]
    size: array[int]
    value_at: array[int]
    value_length: array[int]

    def __init__(self) -> None:
        super().__init__()
        self.kinds = Codes()
        self.histories = Codes()
        self.forks = Codes()
        self.keys = bytearray()
        self.blob = bytearray()
        self.live_bytes = 0
        """Bytes of ``blob`` that hold a current value (the rest is garbage)."""
        self.values: dict[int, JsonObject] = {}
        self.dirty: set[int] = set()
        self.by_scope = MultiMap()
        self.by_address = HashIndex()
        self.pending: set[int] = set()
        self._records: dict[int, DocumentRecord] = {}
        """Records built lately: immutable, so shared, as ``MemoryStorage`` shares them."""

    # -- records ------------------------------------------------------------

    def add(self, record: DocumentRecord) -> int:
        """Store a new incarnation (its sidecar state starts empty) and return its row."""
        row = self.insert(record.id)
        self.kind[row] = self.kinds.code(record.kind)
        scope = record.scope
        if isinstance(scope, ConversationScope):
            self.scope[row] = 1
            self.scope_id[row] = scope.conversation_id
            self.history[row] = self.histories.code(scope.history)
            self.fork[row] = self.forks.code(scope.fork)
        elif isinstance(scope, TaskScope):
            self.scope[row] = 2
            self.scope_id[row] = scope.task_id
        self.key_at[row] = -1
        if record.key is not None:
            data = record.key.encode("utf-8", "surrogatepass")
            self.key_at[row] = len(self.keys)
            self.key_length[row] = len(data)
            self.keys += data
        self.created[row] = record.created_at
        self.retired[row] = record.retired_at or 0
        self.value_at[row] = -1
        address = record.address
        key = scope_key(address.scope)
        if key is not None:
            self.by_scope.add(key, record.id)
        self.by_address.add(address_hash(address), record.id)
        return row

    def retire(self, row: int, seq: int) -> None:
        """Retire a live incarnation at ``seq``; its current value goes."""
        self.retired[row] = seq
        self._records.pop(self.ids[row], None)
        self.drop_value(row)

    def record(self, row: int) -> DocumentRecord:
        """Return the record of a row."""
        record = self._records.get(self.ids[row])
        if record is None:
            if len(self._records) >= _CACHED_RECORDS:
                self._records.clear()
            record = self._records[self.ids[row]] = self._build(row)
        return record

    def _build(self, row: int) -> DocumentRecord:
        code = self.scope[row]
        scope: DocScope
        if code == 1:
            scope = ConversationScope(
                self.scope_id[row],
                self.histories.values[self.history[row]],
                self.forks.values[self.fork[row]],
            )
        elif code == 2:
            scope = TaskScope(self.scope_id[row])
        else:
            scope = SessionScope()
        return DocumentRecord(
            self.ids[row],
            self.kinds.values[self.kind[row]],
            scope,
            self.created[row],
            self.key(row),
            self.retired[row] or None,
        )

    def key(self, row: int) -> str | None:
        """Return the family key of a row."""
        at = self.key_at[row]
        if at < 0:
            return None
        return self.keys[at : at + self.key_length[row]].decode("utf-8", "surrogatepass")

    def current_only(self, row: int) -> bool:
        """Whether the incarnation keeps only its current content (R16, R129)."""
        return not (
            self.scope[row] == 1 and self.histories.values[self.history[row]] == "rewindable"
        )

    def alive_at(self, row: int, at: int | None) -> bool:
        """Whether the incarnation is a member of the store at ``at`` (``None``: now)."""
        retired = self.retired[row]
        if at is None:
            return not retired
        return self.created[row] <= at and (not retired or at < retired)

    def rows_at(self, address: DocAddress) -> Iterator[int]:
        """Yield the rows of every incarnation ever created at ``address``."""
        for document_id in self.by_address.get(address_hash(address)):
            row = self.row(document_id)
            if self._at_address(row, address):
                yield row

    def find(self, address: DocAddress, at: int | None) -> int:
        """Return the row of the incarnation at ``address`` alive at ``at``, or -1.

        At most one incarnation of an address is alive at any point: one created
        and retired in the same commit is alive nowhere.
        """
        for row in self.rows_at(address):
            if self.alive_at(row, at):
                return row
        return -1

    def _at_address(self, row: int, address: DocAddress) -> bool:
        if self.kinds.values[self.kind[row]] != address.kind or self.key(row) != address.key:
            return False
        code = self.scope[row]
        scope = address.scope
        if scope.kind != SCOPE_KINDS[code]:
            return False
        return scope.id == (None if code == 0 else self.scope_id[row])

    # -- revisions --------------------------------------------------------------

    def add_revision(self, row: int, seq: int, kind: str, version: int, line: int) -> None:
        """Count one stored revision; ``line`` is the bytes appended to its sidecar."""
        if kind == "base":
            self.base[row] = self.ordinals[row]
            self.deltas[row] = 0
        else:
            self.deltas[row] += 1
        self.ordinals[row] += 1
        self.version[row] = version
        self.last_seq[row] = seq
        self.size[row] += line

    def reclaimed(self, row: int, everything: bool, size: int) -> None:
        """Record that a sidecar was rewritten to its newest base (or removed)."""
        self.first[row] = self.ordinals[row] if everything else self.base[row]
        self.size[row] = 0 if everything else size
        self.pending.discard(self.ids[row])

    def keep_from(self, row: int) -> int:
        """Return the ordinal of the oldest revision still needed (``ordinals``: none)."""
        if not self.current_only(row):
            return 0
        return self.ordinals[row] if self.retired[row] else self.base[row]

    # -- current values ---------------------------------------------------------

    def set_text(self, row: int, text: str | bytes) -> None:
        """Make ``text`` (the JSON of an object) the current value of a row."""
        self.drop_value(row)
        data = text.encode() if isinstance(text, str) else text
        if len(self.blob) + len(data) > 2 * (self.live_bytes + len(data)) + _COMPACT_SLACK:
            self._compact()  # amortized: only once the garbage outweighs the live values
        self.value_at[row] = len(self.blob)
        self.value_length[row] = len(data)
        self.live_bytes += len(data)
        self.blob += data

    def set_value(self, row: int, value: JsonObject) -> None:
        """Make a parsed object (owned by the index from now on) the current value."""
        self.drop_value(row)
        document_id = self.ids[row]
        self.values[document_id] = value
        self.dirty.add(document_id)

    def drop_value(self, row: int) -> None:
        """Forget the current value of a row."""
        document_id = self.ids[row]
        self.values.pop(document_id, None)
        self.dirty.discard(document_id)
        if self.value_at[row] >= 0:
            self.live_bytes -= self.value_length[row]
            self.value_at[row] = -1

    def has_value(self, row: int) -> bool:
        """Whether a row has a current value (every live incarnation does)."""
        return self.ids[row] in self.values or self.value_at[row] >= 0

    def shared_value(self, row: int) -> JsonObject:
        """Return the current value, parsed once and kept; callers must not mutate it."""
        document_id = self.ids[row]
        value = self.values.get(document_id)
        if value is None:
            value = self.values[document_id] = self._parse(row)
        return value

    def fresh_value(self, row: int) -> JsonObject:
        """Return a new copy of the current value."""
        value = self.values.get(self.ids[row])
        if value is not None:
            copied = copy_json(value)
            assert isinstance(copied, dict)
            return copied
        return self._parse(row)

    def _parse(self, row: int) -> JsonObject:
        at = self.value_at[row]
        value = loads(bytes(self.blob[at : at + self.value_length[row]]))
        if not isinstance(value, dict):
            raise ValueError(f"document {self.ids[row]} value is not an object")
        return value

    def flush_values(self) -> None:
        """Write every dirty value back as text (``set_text`` drops garbage as it goes)."""
        for document_id in sorted(self.dirty):
            row = self.row(document_id)
            value = self.values[document_id]
            self.set_text(row, dumps(value))
            self.values[document_id] = value  # still valid: keep it parsed
        self.dirty.clear()

    def _compact(self) -> None:
        """Copy the live values to a new blob, dropping replaced ones."""
        blob = bytearray()
        for row in range(len(self.ids)):
            at = self.value_at[row]
            if at >= 0:
                self.value_at[row] = len(blob)
                blob += self.blob[at : at + self.value_length[row]]
        self.blob = blob

    # -- checkpoint -------------------------------------------------------------

    def sections(self, prefix: str) -> Sections:
        """Return every column, index and buffer (call ``flush_values`` first)."""
        assert not self.dirty, "flush_values before taking sections"
        return {
            **super().sections(prefix),
            **self.by_scope.sections(f"{prefix}.by_scope"),
            **self.by_address.sections(f"{prefix}.by_address"),
            f"{prefix}.keys": array("B", self.keys),
            f"{prefix}.blob": array("B", self.blob),
            f"{prefix}.pending": array("q", sorted(self.pending)),
            f"{prefix}.live_bytes": array("q", [self.live_bytes]),
        }

    def load(self, prefix: str, sections: Mapping[str, array[int]]) -> None:
        """Take the columns saved by ``sections``."""
        super().load(prefix, sections)
        self.by_scope.load(f"{prefix}.by_scope", sections)
        self.by_address.load(f"{prefix}.by_address", sections)
        names = ("keys", "blob", "pending", "live_bytes")
        keys, blob, pending, live = (sections.get(f"{prefix}.{name}") for name in names)
        if keys is None or blob is None or pending is None or live is None or len(live) != 1:
            raise ValueError(f"checkpoint columns {prefix} are missing")
        self.keys = bytearray(keys)
        self.blob = bytearray(blob)
        self.pending = set(pending)
        self.live_bytes = live[0]

    def codes(self) -> dict[str, list[Any]]:
        """Return the values behind every code, for a checkpoint."""
        return {
            "document_kinds": self.kinds.values,
            "histories": self.histories.values,
            "forks": self.forks.values,
        }

    def load_codes(self, codes: Mapping[str, Any]) -> None:
        """Take the values saved by ``codes``."""
        self.kinds = Codes(list(codes["document_kinds"]))
        self.histories = Codes(list(codes["histories"]))
        self.forks = Codes(list(codes["forks"]))
