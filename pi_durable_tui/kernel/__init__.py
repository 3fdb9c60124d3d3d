"""Layer 2: the durable kernel. Sessions, commits, documents, forks, watches and tasks.

The kernel knows nothing of models, chats or terminals (DESIGN.md section 1). It
builds on ``pi_durable_tui.storage`` only. This module is its one public face:
every name below is imported from here, and from nowhere else.

It has three parts: the commit line (private modules here), documents
(``docs/``) and tasks (``tasks/``), each a set of private modules. They stack in
six levels; each imports only the levels listed before it, so imports run one way:

1. ``_errors``, ``_clock``: the error tree, and time;
2. ``docs/``: document definitions, diffs, drafts, fork copies, the document
   store, states and watches;
3. the commit line's middle: ``_owners`` (ownership arguments), ``_staging``
   (what a commit has staged), ``_tx`` (``Tx``, the author's handle on it),
   ``_hooks`` (``SessionHooks``, ``Report``), ``_publication`` (``CommitInfo``);
4. ``tasks/``: task definitions, the runtime, the scheduler and its parts; it
   knows the Session only as the narrow ``TaskHost`` protocol it defines;
5. the commit line's top: ``_line`` (``CommitLine``, the mutation line the parts
   run on, which satisfies ``TaskHost``) and ``_session`` (``Session``, the
   public face over it);
6. this face.
"""

from pi_durable_tui.kernel._clock import Clock, ManualClock, SystemClock
from pi_durable_tui.kernel._errors import (
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
from pi_durable_tui.kernel._hooks import Report, SessionHooks
from pi_durable_tui.kernel._line import CloseReason
from pi_durable_tui.kernel._owners import ConversationOwned, Ownerless, TaskOwned
from pi_durable_tui.kernel._publication import CommitInfo
from pi_durable_tui.kernel._session import Session
from pi_durable_tui.kernel._tx import Tx
from pi_durable_tui.kernel.docs import (
    DocChange,
    DocDefinition,
    DocumentState,
    DocumentWatch,
    WatchFrame,
    define_doc,
)
from pi_durable_tui.kernel.tasks import (
    Aborted,
    Completed,
    Continuation,
    Failed,
    Running,
    TaskDefinition,
    TaskGraphState,
    TaskRegistry,
    TaskRuntime,
    TaskState,
    Waiting,
    define_task,
)

__all__ = [
    "Aborted",
    "Clock",
    "CloseReason",
    "CommitInfo",
    "Completed",
    "Continuation",
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
    "TaskState",
    "TransactionClosed",
    "Tx",
    "WaitRejected",
    "Waiting",
    "WatchFrame",
    "define_doc",
    "define_task",
]
