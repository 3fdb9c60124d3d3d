"""Document drafts inside one commit, and what they become when it settles.

``tx.doc(definition, ...)`` hands the callback a mutable copy of the committed
value (a plain dict). When the callback returns, each draft is diffed against its
base (``json_diff``), the definition's ``checkpoint_when`` picks base or delta
(R13), and the draft becomes storage writes plus a ``DocChange`` for publication.

The committed value the kernel keeps is rebuilt from the operations, never taken
from the draft, so mutating a draft after its callback returned has no effect
(R6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pi_durable_tui.kernel.documents import DocDefinition
from pi_durable_tui.kernel.json_diff import diff_json
from pi_durable_tui.storage.json_ops import JsonObject, Op, apply_ops, check_json, copy_json
from pi_durable_tui.storage.records import DocAddress, DocumentRecord
from pi_durable_tui.storage.writes import ChangeDocument, CreateDocument, RetireDocument, Write


@dataclass(frozen=True, slots=True)
class DocChange:
    """What one commit did to one document incarnation, as publications carry it.

    ``ops`` turn the previous committed value into ``value`` (for a created
    document: one root ``set``). A retired document has ``value`` equal to its
    final content and ``retired`` true.
    """

    address: DocAddress
    record: DocumentRecord
    version: int
    ops: list[Op]
    value: JsonObject
    deltas_since_base: int
    created: bool = False
    retired: bool = False


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

    def finish(self, seq_hint: int) -> tuple[list[Write], DocChange | None]:
        """Turn the draft into storage writes and the change to publish.

        Args:
            seq_hint: The seq the commit will get, used for created/retired stamps
                in the published record (the storage stamps the stored one).

        Returns:
            The writes (possibly none) and the change, or ``None`` when nothing changed.

        Raises:
            TypeError: A non-JSON value in the draft; the message names its path.
            ValueError: A non-finite number in the draft; the message names its path.
            Exception: Whatever ``checkpoint_when`` raises (the commit is aborted, R13).
        """
        where = f'docs["{self.definition.kind}"]'
        definition = self.definition
        if self.record is None:
            check_json(self.value, where)
            value: JsonObject = copy_json(self.value)  # type: ignore[assignment]
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
            change = DocChange(
                self.address,
                record,
                definition.version,
                [{"op": "set", "path": [], "value": copy_json(value)}],
                value,
                0,
                created=True,
                retired=self.retired,
            )
            return writes, change
        ops = diff_json(self.base, self.value, where)
        upgrade = self.stored_version != definition.version
        writes = []
        value = self.base
        deltas = self.deltas_since_base
        if ops or upgrade:
            value = apply_ops(self.base, ops)  # type: ignore[assignment]
            as_base = upgrade or (
                definition.checkpoint_when is not None
                and bool(definition.checkpoint_when(copy_json(value), ops, deltas))  # type: ignore[arg-type]
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
        assert self.record is not None
        record = self.record
        if self.retired:
            record = DocumentRecord(
                record.id, record.kind, record.scope, record.created_at, record.key, seq_hint
            )
        return writes, DocChange(
            self.address,
            record,
            definition.version,
            ops,
            value,
            deltas,
            retired=self.retired,
        )
