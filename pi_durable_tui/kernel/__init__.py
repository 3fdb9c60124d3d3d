"""Layer 2: the durable kernel. Sessions, commits, documents, forks, watches and tasks.

The kernel knows nothing of models, chats or terminals (DESIGN.md section 1). It
builds on ``pi_durable_tui.storage`` only.
"""

from pi_durable_tui.kernel.clock import Clock, ManualClock, SystemClock
from pi_durable_tui.kernel.documents import DocDefinition, define_doc
from pi_durable_tui.kernel.drafts import DocChange
from pi_durable_tui.kernel.errors import (
    DocumentAccessError,
    KernelError,
    OwnershipRejected,
    ReadAfterWrite,
    SessionClosed,
    SessionFailed,
    TaskGateClosed,
    TaskNotFound,
    TransactionClosed,
    WaitRejected,
)
from pi_durable_tui.kernel.hooks import Report, SessionHooks
from pi_durable_tui.kernel.inspection import TaskGraphState
from pi_durable_tui.kernel.observation import DocumentState, DocumentWatch, WatchFrame
from pi_durable_tui.kernel.publication import CommitInfo
from pi_durable_tui.kernel.registry import TaskRegistry
from pi_durable_tui.kernel.runtime import TaskRuntime
from pi_durable_tui.kernel.session import CloseReason, Session
from pi_durable_tui.kernel.tasks import (
    Aborted,
    Completed,
    ConversationOwned,
    Failed,
    Ownerless,
    Running,
    TaskDefinition,
    TaskOwned,
    Waiting,
    define_task,
)
from pi_durable_tui.kernel.tx import Tx

__all__ = [
    "Aborted",
    "Clock",
    "CloseReason",
    "CommitInfo",
    "Completed",
    "ConversationOwned",
    "DocChange",
    "DocDefinition",
    "DocumentAccessError",
    "DocumentState",
    "DocumentWatch",
    "Failed",
    "KernelError",
    "ManualClock",
    "Ownerless",
    "OwnershipRejected",
    "ReadAfterWrite",
    "Report",
    "Running",
    "Session",
    "SessionClosed",
    "SessionFailed",
    "SessionHooks",
    "SystemClock",
    "TaskDefinition",
    "TaskGateClosed",
    "TaskGraphState",
    "TaskNotFound",
    "TaskOwned",
    "TaskRegistry",
    "TaskRuntime",
    "TransactionClosed",
    "Tx",
    "WaitRejected",
    "Waiting",
    "WatchFrame",
    "define_doc",
    "define_task",
]
