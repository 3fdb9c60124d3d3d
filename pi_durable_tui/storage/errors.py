"""Storage errors.

The tree::

    StorageError                  any failure reported by a backend
    ├── StorageRejected           refused before any durable effect (R8); the commit
    │   │                         rolls back and the Session stays healthy
    │   └── InvalidCursor         a cursor that this backend did not make for this scan
    ├── StorageCorrupted          the store's files are damaged or incomplete; open fails
    ├── StoreLocked               another process holds the store's single-writer lock
    ├── StoreBusy                 another SQLite client holds the file's write lock at open
    ├── StoragePoisoned           an earlier write failed midway; reopen the store
    └── StorageClosed             the backend was closed

Every error other than ``StorageRejected`` raised by ``commit`` is *uncertain*: the
batch may or may not be durable, and the kernel poisons its Session (R8).
"""

from __future__ import annotations


class StorageError(Exception):
    """Base class of every error a storage backend raises on purpose."""


class StorageRejected(StorageError):
    """A deterministic refusal made before anything durable happened (R8, R18).

    A commit that raises it left the store exactly as it was.
    """


class InvalidCursor(StorageRejected):
    """A scan was given a cursor it did not make (forged, truncated, or of another order)."""


class StorageCorrupted(StorageError):
    """The store's files are damaged or incomplete and cannot be opened as they are."""


class StoreLocked(StorageError):
    """Another live process holds the store's single-writer lock.

    Args:
        message: The reference's words (``Session is already open in another
            process: <path>``).
        pid: The holder's process ID when the lock names it (a SQLite or JSONL
            store's lock file), so a refusal can say which process to quit.
    """

    def __init__(self, message: str, *, pid: int | None = None) -> None:
        super().__init__(message)
        self.pid = pid


class StoreBusy(StorageError):
    """Another SQLite client (not a pidurable) held the file's write lock past the open timeout."""


class StoragePoisoned(StorageError):
    """A write failed after it started; the backend refuses further use until reopened (R130)."""


class StorageClosed(StorageError):
    """The backend was closed."""


def readable(text: str) -> str:
    r"""Return a caller's string as an error message shows it.

    A kind, key or request ID may hold lone surrogates (protocol, Strings), which
    UTF-8 cannot encode; a message must still print on any terminal or log, so
    they are shown as escapes (``\udcff``). Other text is returned as it is.
    """
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
