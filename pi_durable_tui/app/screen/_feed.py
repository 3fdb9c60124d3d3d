"""Where the view model's committed state comes from: the session itself, or its host (issue 15).

``LiveScreenModel`` derives everything it shows from a mount (the newest page
of a conversation's entries and its documents, read at one commit) and then
one ``Frame`` per commit. ``ScreenFeed`` is that narrow need, so ONE view model
serves both ways a terminal can show a session:

- ``LocalFeed``: this process holds the store; the mount is read on the line
  and frames come from commit publications (``CommitInfo``);
- the remote feed (``app.remote``): another process hosts the session; the
  mount is a wire ``snapshot`` and frames come from wire ``commit`` messages,
  applied to a ``Mirror``.

Both give the view model the same records (``EntryRecord``) and document
values, so the blocks, cards, queue, footer, status line and approval question
of an attached terminal are computed by the same code as the host's own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pi_durable_tui.app._view import TaskNode, TrustQuestion
from pi_durable_tui.app.screen._compaction_notices import CompactionFailure, compaction_failures
from pi_durable_tui.app.screen._names import conversation_title
from pi_durable_tui.app.screen._task_tree import TaskTree
from pi_durable_tui.harness import AGENT_DOC, INBOX_DOC, LIVE_DOC, USAGE_DOC
from pi_durable_tui.kernel import CommitInfo, Tx
from pi_durable_tui.storage import EntryRecord

if TYPE_CHECKING:
    from pi_durable_tui.app.agent import AgentApp

DOC_KINDS = (LIVE_DOC.kind, INBOX_DOC.kind, USAGE_DOC.kind, AGENT_DOC.kind)
"""The documents the view model reads, by kind."""


@dataclass(frozen=True, slots=True)
class Settled:
    """A submission's new state, as a notice needs it."""

    id: int
    status: str
    reason: str | None = None
    detail: Any = None


@dataclass(frozen=True, slots=True)
class Mounted:
    """A conversation as one commit left it."""

    owned: bool
    """Whether a task owns it (a subagent's)."""
    title: str
    newest_first: list[EntryRecord]
    """The newest page, newest first."""
    has_older: bool
    docs: Mapping[str, Any]
    pending: list[int]
    """Its open submissions (watched for their notices)."""


@dataclass(frozen=True, slots=True)
class Frame:
    """What one commit changed in the shown conversation."""

    entries: tuple[EntryRecord, ...] = ()
    docs: Mapping[str, Any] = field(default_factory=dict)
    """Each changed document's new value by kind (``None`` when retired)."""
    submissions: tuple[Settled, ...] = ()
    tasks: bool = False
    """The commit touched tasks (the tree refreshes)."""
    compaction_failures: tuple[CompactionFailure, ...] = ()
    """Compactions of the conversation this commit ended failed (issue 12)."""
    remount: Mounted | None = None
    """The feed had to start over (a remote client that fell behind got a fresh
    snapshot): the transcript is rebuilt from this mount instead."""


class TaskSource(Protocol):
    """The task tree, kept current."""

    @property
    def nodes(self) -> Sequence[TaskNode]:
        """The roots, in task ID order."""
        ...

    def schedule(self) -> None:
        """A commit touched tasks: refresh soon."""

    async def close(self) -> None:
        """Stop refreshing."""


class ScreenFeed(Protocol):
    """Committed state for the view model, from the session or from its host."""

    root_id: int
    workspace: str

    def where(self, path: str) -> str:
        """A working directory as the user reads it."""
        ...

    def now(self) -> float:
        """The harness clock in ms (retry countdowns)."""
        ...

    async def sleep_until(self, at_ms: float) -> None:
        """Sleep on that clock."""
        ...

    def context_window(self, ref: str) -> int:
        """The context window of ``provider/model-id`` (0 when unknown)."""
        ...

    def trust_question(self) -> TrustQuestion | None:
        """Project settings waiting for the user's trust (only where they are read)."""
        ...

    def tree(self, changed: Callable[[], None]) -> TaskSource:
        """The session's task tree; ``changed`` is called after each refresh."""
        ...

    async def mount(
        self,
        conversation_id: int,
        page: int,
        on_mounted: Callable[[Mounted], None],
        on_frame: Callable[[Frame], None],
    ) -> None:
        """Read a conversation and follow it: no frame is missed or applied twice.

        ``on_mounted`` runs before the first frame, with no commit in between.

        Raises:
            ValueError: The conversation does not exist.
        """
        ...

    def unmount(self) -> None:
        """Stop following."""
        ...

    async def older(self, conversation_id: int, before: int, limit: int) -> list[EntryRecord]:
        """Up to ``limit`` entries before entry ``before``, newest first."""
        ...


def frame_of(info: CommitInfo, conversation: int) -> Frame:
    """The part of a published commit that concerns ``conversation``."""
    docs = {
        change.address.kind: None if change.retired else change.value
        for change in info.documents
        if change.address.scope.kind == "conversation"
        and change.address.scope.id == conversation
        and change.address.kind in DOC_KINDS
    }
    return Frame(
        entries=tuple(e for e in info.entries if e.conversation_id == conversation),
        docs=docs,
        submissions=tuple(Settled(r.id, r.status, r.reason, r.detail) for r in info.submissions),
        tasks=bool(info.tasks),
        compaction_failures=compaction_failures(info.tasks, conversation),
    )


class LocalFeed:
    """The feed of a session this process holds (``AgentApp``).

    Args:
        app: The open session.
    """

    def __init__(self, app: AgentApp) -> None:
        self.app = app
        self.root_id = app.root.id
        self.workspace = app.workspace
        self._unsubscribe: Callable[[], None] | None = None

    def where(self, path: str) -> str:
        """``user@host:/path`` for a remote workspace, else the path."""
        return self.app.where(path)

    def now(self) -> float:
        """The harness clock."""
        return self.app.harness.session.clock.now()

    async def sleep_until(self, at_ms: float) -> None:
        """Sleep on the harness clock (tests drive it)."""
        await self.app.harness.session.clock.sleep_until(at_ms)

    def context_window(self, ref: str) -> int:
        """From the app's models."""
        found = self.app.models.get(ref)
        return found.context_window if found is not None else 0

    def trust_question(self) -> TrustQuestion | None:
        """The project settings content that waits for the user's trust (issue 13)."""
        request = self.app.settings.waiting
        if request is None:
            return None
        return TrustQuestion(
            request.digest, request.question(), request.shown_values(), request.heading()
        )

    def tree(self, changed: Callable[[], None]) -> TaskSource:
        """The task tree from the harness's task graph (R126)."""
        return TaskTree(self.app.harness.session, self.root_id, changed)

    async def mount(
        self,
        conversation_id: int,
        page: int,
        on_mounted: Callable[[Mounted], None],
        on_frame: Callable[[Frame], None],
    ) -> None:
        """Read the conversation ON THE LINE, then subscribe before the line moves on."""
        self.unmount()
        session = self.app.harness.session
        storage = session.storage
        root = conversation_id == self.root_id  # "main" needs no words
        title = "" if root else await conversation_title(storage, conversation_id)

        async def mount(tx: Tx) -> None:
            record = await tx.conversation(conversation_id)
            if record is None:
                raise ValueError(f"Conversation {conversation_id} does not exist")
            newest = await storage.scan_entries(conversation_id, order="desc", limit=page + 1)
            docs = {
                definition.kind: await session.snapshot(definition, conversation_id) or {}
                for definition in (LIVE_DOC, INBOX_DOC, USAGE_DOC, AGENT_DOC)
            }
            pending = await storage.scan_submissions(
                conversation_id=conversation_id, status=("queued", "placed"), limit=page
            )
            # REMINDER: nothing awaits from here on: the state is rebuilt and the
            # subscription starts while this commit holds the line, so no later commit
            # is lost or applied to the old mount.
            on_mounted(
                Mounted(
                    record.owner is not None,
                    title,
                    [stored.entry for stored in newest.items[:page]],
                    len(newest.items) > page,
                    docs,
                    [submission.id for submission in pending.items],
                )
            )
            self._unsubscribe = session.subscribe(
                lambda info: on_frame(frame_of(info, conversation_id))
            )

        await session.commit(mount)

    def unmount(self) -> None:
        """Stop following commits."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    async def older(self, conversation_id: int, before: int, limit: int) -> list[EntryRecord]:
        """A page of the store, newest first."""
        page = await self.app.harness.session.storage.scan_entries(
            conversation_id, max_entry_id=before - 1, order="desc", limit=limit
        )
        return [stored.entry for stored in page.items]
