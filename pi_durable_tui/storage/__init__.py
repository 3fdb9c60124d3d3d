"""Layer 1: records, the Storage protocol, backends, and the conformance suite.

The backends: memory, SQLite, JSONL and PostgreSQL. Nothing here knows about
models, chats or terminals; the kernel (layer 2) builds on it. See ``protocol``
for the contract every backend keeps.
"""

from typing import TYPE_CHECKING

from pi_durable_tui.storage.errors import (
    InvalidCursor,
    StorageClosed,
    StorageCorrupted,
    StorageError,
    StoragePoisoned,
    StorageRejected,
    StoreBusy,
    StoreLocked,
)
from pi_durable_tui.storage.json_ops import Json, JsonObject, Op, apply_ops
from pi_durable_tui.storage.jsonl import JsonlStorage
from pi_durable_tui.storage.lock import StoreLock
from pi_durable_tui.storage.memory import MemoryStorage
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    LIVE_TASK_STATUSES,
    MAX_ID,
    ROOT_CONVERSATION_ID,
    ConversationOwner,
    ConversationRecord,
    ConversationScope,
    DocAddress,
    DocScope,
    DocumentRead,
    DocumentRecord,
    EntryRecord,
    ForkPoint,
    Page,
    ScopeRef,
    SessionScope,
    StoredEntry,
    SubmissionRecord,
    TaskRecord,
    TaskScope,
)
from pi_durable_tui.storage.sqlite import SqliteStorage, UnsupportedSchema
from pi_durable_tui.storage.writes import (
    ChangeDocument,
    CopyDocument,
    CreateDocument,
    PutConversation,
    PutEntry,
    PutSubmission,
    PutTask,
    RetireDocument,
    Write,
)

if TYPE_CHECKING:
    from pi_durable_tui.storage.postgres import PostgresStorage


def __getattr__(name: str) -> object:
    # REMINDER: PostgresStorage is imported on first use: asyncpg costs every SQLite
    # user a tenth of a second at start-up otherwise.
    if name == "PostgresStorage":
        from pi_durable_tui.storage.postgres import PostgresStorage

        return PostgresStorage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LIVE_TASK_STATUSES",
    "MAX_ID",
    "ROOT_CONVERSATION_ID",
    "ChangeDocument",
    "ConversationOwner",
    "ConversationRecord",
    "ConversationScope",
    "CopyDocument",
    "CreateDocument",
    "DocAddress",
    "DocScope",
    "DocumentRead",
    "DocumentRecord",
    "EntryRecord",
    "ForkPoint",
    "InvalidCursor",
    "Json",
    "JsonObject",
    "JsonlStorage",
    "MemoryStorage",
    "Op",
    "Page",
    "PostgresStorage",
    "PutConversation",
    "PutEntry",
    "PutSubmission",
    "PutTask",
    "RetireDocument",
    "ScopeRef",
    "SessionScope",
    "SqliteStorage",
    "Storage",
    "StorageClosed",
    "StorageCorrupted",
    "StorageError",
    "StoragePoisoned",
    "StorageRejected",
    "StoreBusy",
    "StoreLock",
    "StoreLocked",
    "StoredEntry",
    "SubmissionRecord",
    "TaskRecord",
    "TaskScope",
    "UnsupportedSchema",
    "Write",
    "apply_ops",
]
