"""The writes of one commit batch (reference section 1.9).

A batch is a list of writes committed atomically: table rows (conversations and
entries are written once; tasks and submissions by whole-record replacement) and
document changes. Document writes carry no sequence number: the backend stamps
``created_at`` / ``retired_at`` and revision seqs with the seq of the commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from pi_durable_tui.storage.json_ops import JsonObject, Op
from pi_durable_tui.storage.records import (
    ConversationRecord,
    DocScope,
    EntryRecord,
    SubmissionRecord,
    TaskRecord,
)


@dataclass(frozen=True, slots=True)
class PutConversation:
    """Store a new conversation (conversations are immutable)."""

    record: ConversationRecord


@dataclass(frozen=True, slots=True)
class PutEntry:
    """Store a new entry (entries are immutable)."""

    record: EntryRecord


@dataclass(frozen=True, slots=True)
class PutTask:
    """Create a task or replace its whole record."""

    record: TaskRecord


@dataclass(frozen=True, slots=True)
class PutSubmission:
    """Create a submission or replace its whole record."""

    record: SubmissionRecord


@dataclass(frozen=True, slots=True)
class CreateDocument:
    """Create a document incarnation with a complete base (R13)."""

    id: int
    kind: str
    scope: DocScope
    version: int
    value: JsonObject
    key: str | None = None


@dataclass(frozen=True, slots=True)
class CopyDocument:
    """Create a document incarnation whose content is another's value at a point (R17).

    The source must be alive at ``source_at`` and have the same kind, key, history
    and fork policy; it may not be created, changed or retired in the same batch
    (R18). Otherwise the commit is ``StorageRejected``.
    """

    id: int
    kind: str
    scope: DocScope
    source_id: int
    source_at: int
    key: str | None = None


@dataclass(frozen=True, slots=True)
class ChangeDocument:
    """Change a live document by a complete base or a delta (exactly one of them).

    A version change must be a base.
    """

    id: int
    version: int
    base: JsonObject | None = None
    ops: list[Op] | None = None


@dataclass(frozen=True, slots=True)
class RetireDocument:
    """Retire a live document incarnation at this commit."""

    id: int


Write: TypeAlias = (
    PutConversation
    | PutEntry
    | PutTask
    | PutSubmission
    | CreateDocument
    | CopyDocument
    | ChangeDocument
    | RetireDocument
)
