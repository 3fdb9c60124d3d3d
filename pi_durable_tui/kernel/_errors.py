"""Kernel errors, with the reference's messages (people and tests match on them).

The tree::

    KernelError
    ├── ReadAfterWrite          a table read after a table write in one commit (R5)
    ├── TransactionClosed       a Tx used after its callback settled (R6)
    ├── DocumentAccessError     typed access that does not fit the stored document
    │                           (R15, R19, R20)
    ├── OwnershipRejected       new owned work without a live owner (R11)
    ├── WaitRejected            an invalid wait (R51, R52)
    ├── TaskGateClosed          a runtime operation after its invocation ended or
    │                           while the task cannot move (R38, R42)
    ├── TaskNotFound            an operation on an unknown task (R46)
    ├── SessionClosed           the Session is closed or closing (R27)
    └── SessionFailed           an uncertain storage failure poisoned the Session (R8)

``pi_durable_tui.storage.StorageRejected`` is not a kernel error: it passes
through ``commit`` unchanged, and the Session stays healthy.
"""

from __future__ import annotations


class KernelError(Exception):
    """Base class of the kernel's own errors."""


class ReadAfterWrite(KernelError):
    """A table read came after the first table write of the same commit (R5)."""

    def __init__(self, what: str = "table") -> None:
        super().__init__(
            f"ReadAfterWrite: cannot read the {what} after a table write in the same commit"
        )


class TransactionClosed(KernelError):
    """A transaction was used after its commit callback settled (R6)."""

    def __init__(self) -> None:
        super().__init__("Transaction is closed: it was used after its commit callback settled")


class DocumentAccessError(KernelError):
    """A typed document access does not fit what is stored (R15, R19, R20)."""


class OwnershipRejected(KernelError):
    """New owned work was refused because its owner cannot take it (R11)."""


class WaitRejected(KernelError):
    """A task asked for a wait that breaks R51 or R52."""


class TaskGateClosed(KernelError):
    """A task runtime operation was refused (R38, R42)."""


class TaskNotFound(KernelError):
    """No task has the given ID."""

    def __init__(self, task_id: int) -> None:
        super().__init__(f"Task {task_id} does not exist")
        self.task_id = task_id


class SessionClosed(KernelError):
    """The Session is closed or closing; new operations are refused (R27)."""

    def __init__(self) -> None:
        super().__init__("Session is closed")


class SessionFailed(KernelError):
    """An uncertain storage failure poisoned the Session; reopen it (R8).

    The storage error is both ``cause`` and ``__cause__``.
    """

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"SessionFailed: storage failed with an unknown outcome: {cause!r}")
        self.cause = cause
        self.__cause__ = cause
