"""Document drafts inside one commit, and what they become when it settles (R6, R9, R13-R15).

``tx.doc(definition, ...)`` hands the callback a mutable copy of the committed
value (a plain dict). When the commit prepares, each draft is diffed against its
base (``_diff``), the definition's ``checkpoint_when`` picks base or delta
(R13), and the draft becomes storage writes plus a ``DocChange`` for publication.

Where this differs from the reference, on purpose (DESIGN.md 3.1):

- Drafts are plain values, so nothing happens at assignment time. A non-JSON
  value fails the whole commit when it prepares, with an error naming its path
  (``docs["pi.live"].tools[0].output: bytes is not JSON``), instead of failing
  the assignment (R6). Values assigned into a draft are not copied until then.
- The operations are derived by a diff, so assigning a value equal to the old one
  produces no operation, and a commit whose drafts all diff to nothing writes and
  publishes nothing for them (R14's "non-empty batch whose result equals the old
  value" cannot arise).
- When the callback returns, its drafts are detached (``detach``): the callback's
  dicts are no longer the drafts, so mutating them later, even while the commit
  is still preparing, has no effect (R6).

The committed value the kernel keeps and publishes is a copy of the draft taken
when the commit prepares; it never shares a container with anything the callback
holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pi_durable_tui.kernel.docs._definitions import DocDefinition
from pi_durable_tui.kernel.docs._diff import checked_copy, diff_json
from pi_durable_tui.storage.json_ops import JsonObject, Op, copy_json
from pi_durable_tui.storage.records import DocAddress, DocumentRecord
from pi_durable_tui.storage.writes import ChangeDocument, CreateDocument, RetireDocument, Write


@dataclass(frozen=True, slots=True)
class DocChange:
    """What one commit did to one document incarnation, as publications carry it.

    ``ops`` turn the previous committed value into ``value`` (for a created
    document, and for a version upgrade: one root ``set``). A retired document has
    ``value`` equal to its final content and ``retired`` true. ``value`` and
    ``ops`` are shared by every reader of the publication: never mutate them.
    """

    address: DocAddress
    record: DocumentRecord
    version: int
    ops: list[Op]
    value: JsonObject
    deltas_since_base: int
    created: bool = False
    retired: bool = False

    def stamped(self, seq: int) -> DocChange:
        """Return the change with ``created_at`` / ``retired_at`` set to the commit's seq."""
        record = self.record
        if self.created and record.created_at != seq:
            record = replace(record, created_at=seq)
        if self.retired and record.retired_at != seq:
            record = replace(record, retired_at=seq)
        return self if record is self.record else replace(self, record=record)


@dataclass(slots=True)
class Draft:
    """One document acquired by a transaction."""

    definition: DocDefinition
    address: DocAddress
    document_id: int
    record: DocumentRecord | None
    """The stored incarnation, or ``None`` when this commit creates it."""
    base: JsonObject
    """The committed value at the definition's version (kernel-owned; never handed out)."""
    stored_version: int
    deltas_since_base: int
    value: JsonObject = field(default_factory=dict)
    """The mutable copy handed to the callback."""
    retired: bool = False

    @property
    def created(self) -> bool:
        """Whether this commit creates the incarnation."""
        return self.record is None

    @property
    def where(self) -> str:
        """How errors name this draft's root: ``docs["<kind>"]``."""
        return f'docs["{self.definition.kind}"]'

    def detach(self) -> None:
        """Replace the value the callback holds by a copy of it (R6).

        Raises:
            ValueError: When the value holds a cycle (its path is named).
        """
        try:
            self.value = copy_json(self.value)  # type: ignore[assignment]
        except RecursionError:
            raise ValueError(f"{self.where}: nests too deeply or holds a cycle") from None

    def finish(self, seq_hint: int) -> tuple[list[Write], DocChange | None]:
        """Turn the draft into storage writes and the change to publish.

        Args:
            seq_hint: The seq the commit will get, used for created/retired stamps
                in the published record (the Session re-stamps with the real seq).

        Returns:
            The writes (possibly none) and the change, or ``None`` when nothing changed.

        Raises:
            TypeError: A non-JSON value in the draft; the message names its path.
            ValueError: A non-finite number or a cycle in the draft; the message
                names its path.
            Exception: Whatever ``checkpoint_when`` raises (the commit is aborted, R13).
        """
        if self.record is None:
            return self._finish_created(seq_hint)
        definition = self.definition
        ops = diff_json(self.base, self.value, self.where)
        upgrade = self.stored_version != definition.version
        writes: list[Write] = []
        value = self.base
        deltas = self.deltas_since_base
        if ops or upgrade:
            # The diff checked every part that differs from the (JSON) base, so the
            # copy is strict JSON.
            value = copy_json(self.value)  # type: ignore[assignment]
            # A version change must be a base (R15), whatever the predicate says;
            # otherwise the predicate decides, once per change (R13).
            as_base = upgrade or (
                definition.checkpoint_when is not None
                and bool(
                    definition.checkpoint_when(copy_json(value), copy_json(ops), deltas)  # type: ignore[arg-type]
                )
            )
            if as_base:
                writes.append(ChangeDocument(self.document_id, definition.version, base=value))
                deltas = 0
            else:
                writes.append(ChangeDocument(self.document_id, definition.version, ops=ops))
                deltas += 1
            if upgrade:
                ops = [{"op": "set", "path": [], "value": copy_json(value)}]
        if self.retired:
            writes.append(RetireDocument(self.document_id))
        if not writes:
            return [], None
        record = self.record
        if self.retired:
            record = replace(record, retired_at=seq_hint)
        change = DocChange(
            self.address, record, definition.version, ops, value, deltas, retired=self.retired
        )
        return writes, change

    def _finish_created(self, seq_hint: int) -> tuple[list[Write], DocChange]:
        # Creating a document always stores a complete base (R13).
        definition = self.definition
        value: JsonObject = checked_copy(self.value, self.where)  # type: ignore[assignment]
        record = DocumentRecord(
            self.document_id,
            definition.kind,
            definition.make_scope(self.address.scope.id),
            seq_hint,
            self.address.key,
            seq_hint if self.retired else None,
        )
        writes: list[Write] = [
            CreateDocument(
                self.document_id,
                definition.kind,
                record.scope,
                definition.version,
                value,
                self.address.key,
            )
        ]
        if self.retired:
            writes.append(RetireDocument(self.document_id))
        ops: list[Op] = [{"op": "set", "path": [], "value": copy_json(value)}]
        change = DocChange(
            self.address,
            record,
            definition.version,
            ops,
            value,
            0,
            created=True,
            retired=self.retired,
        )
        return writes, change
