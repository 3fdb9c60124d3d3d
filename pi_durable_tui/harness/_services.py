"""What the harness's parts share: the session, models, registry, settings and environments.

One ``HarnessServices`` belongs to one open Harness. The built-in tasks, the
conversation handles and the session hooks reach everything through it, so none
of them imports the ``Harness`` class (the parts run one way:
services <- tasks and handles <- harness).

- ``settings()`` reads the settings source again at every call (R34);
- ``agent(conversation_id)`` resolves the conversation's stored agent against the
  registry as it is now (R30, R33);
- ``build_env(conversation_id, cwd)`` builds an environment at each use, never on
  the line (R118);
- ``task_definition(name)`` is the kernel definition the session runs for a task
  name (the harness wraps its tasks once per definition object, R35);
- ``submissions`` keeps submission handles current and resolves
  ``Submission.wait()`` from commit publications;
- ``entry(entry_id)`` reads an entry by ID, recently read or committed ones from
  memory (entries never change once stored; a tool round reads its assistant
  entry from each of its tasks, R127);
- ``request_planner`` plans a first request before the commit that admits the
  input (the generation part installs it; conversations sit below it), so the
  admission creates the generation at ``request`` (issue 14, R83).
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pi_durable_tui.ai import Models
from pi_durable_tui.env import SecretRedactor
from pi_durable_tui.harness._errors import HarnessClosed
from pi_durable_tui.harness._settings import Settings, SettingsSource, read_settings
from pi_durable_tui.harness.context import RangeCache, ValidatedMessages
from pi_durable_tui.harness.extensions import Registry
from pi_durable_tui.harness.state import AGENT_DOC, ResolvedAgent, resolve_agent
from pi_durable_tui.kernel import CommitInfo, Report, Session, TaskDefinition, Tx
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import StoredEntry, SubmissionRecord

if TYPE_CHECKING:
    from pi_durable_tui.env import ExecutionEnv


@dataclass(frozen=True, slots=True)
class EnvTarget:
    """What an environment is built for: a conversation and its working directory."""

    conversation_id: int
    cwd: str | None


EnvFactory = Callable[[EnvTarget], "ExecutionEnv | None"]
"""Builds the execution environment of a conversation, at each use (R118)."""


class TaskDefinitions(Protocol):
    """The kernel definitions the harness installed, by task name."""

    def definition(self, name: str) -> TaskDefinition:
        """Return the kernel definition of a task (raises ``KeyError`` when unknown)."""
        ...


class RequestPlan(Protocol):
    """A request planned outside the line: ``apply`` stages it in a commit (R83)."""

    async def apply(self, tx: Tx, tail: int | None = None) -> JsonObject:
        """Stage the planned system entries and status; return the ``request`` checkpoint.

        Args:
            tx: The commit.
            tail: The newest entry when the commit appended entries after the planned
                view (an admitted user message, a tool result).
        """
        ...


class RequestPlanner(Protocol):
    """Plans a conversation's next request before the commit that starts its generation."""

    async def __call__(
        self, services: HarnessServices, conversation_id: int, coming: Sequence[JsonObject]
    ) -> RequestPlan | None:
        """The plan, or ``None`` when the generation must prepare itself (R83, R108).

        Args:
            services: The harness services.
            conversation_id: The conversation.
            coming: Messages the commit appends before the planned entries.
        """
        ...


class SubmissionHandle(Protocol):
    """What ``SubmissionWaiters`` keeps current: a handle's view of its record."""

    @property
    def id(self) -> int:
        """The submission ID."""
        ...

    def observe(self, record: SubmissionRecord) -> None:
        """Take a newly committed version of the record."""
        ...


class SubmissionWaiters:
    """Keeps submission handles current and resolves ``Submission.wait()`` (R68).

    Both follow commit publications, never storage reads: a handle learns every
    committed version of its record (so a handle whose submission settled before
    ``close()`` still resolves ``wait()`` afterwards, R27), and a waiter's future
    resolves with the commit that settles its submission.
    """

    def __init__(self) -> None:
        self._waiters: dict[int, list[asyncio.Future[SubmissionRecord]]] = {}
        self._handles: weakref.WeakSet[SubmissionHandle] = weakref.WeakSet()

    def track(self, handle: SubmissionHandle) -> None:
        """Keep ``handle`` current for as long as it lives."""
        self._handles.add(handle)

    def register(self, submission_id: int) -> asyncio.Future[SubmissionRecord]:
        """Return a future resolved when the submission settles."""
        future: asyncio.Future[SubmissionRecord] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(submission_id, []).append(future)
        return future

    def discard(self, submission_id: int, future: asyncio.Future[SubmissionRecord]) -> None:
        """Forget a future (its waiter was cancelled)."""
        futures = self._waiters.get(submission_id)
        if futures and future in futures:
            futures.remove(future)
            if not futures:
                del self._waiters[submission_id]

    def on_commit(self, info: CommitInfo) -> None:
        """Update handles and resolve the waiters of every submission the commit settled."""
        if not info.submissions:
            return
        committed = {record.id: record for record in info.submissions}
        for handle in list(self._handles):
            record = committed.get(handle.id)
            if record is not None:
                handle.observe(record)
        for record in committed.values():
            if record.status in ("done", "unanswered"):
                for future in self._waiters.pop(record.id, []):
                    if not future.done():
                        future.set_result(record)

    def fail_all(self, error: BaseException) -> None:
        """Fail every pending waiter (the harness closed or the session failed, R8, R27)."""
        for futures in self._waiters.values():
            for future in futures:
                if not future.done():
                    future.set_exception(error)
        self._waiters.clear()


RECENT_ENTRIES = 256
"""How many entries read by ID ``HarnessServices.entry`` keeps."""


@dataclass(eq=False)
class HarnessServices:
    """Everything the harness's parts share; one per open Harness."""

    session: Session
    models: Models
    registry: Registry
    settings_source: SettingsSource
    env_factory: EnvFactory | None
    tasks: TaskDefinitions
    on_report: Callable[[Report], None] | None = None
    redactor: SecretRedactor = field(default_factory=SecretRedactor)
    """Hides secret values: every commit (the session's filter), and the streams
    (partials, live tool output) that must withhold a secret's possible start."""
    submissions: SubmissionWaiters = field(default_factory=SubmissionWaiters)
    contexts: RangeCache = field(default_factory=lambda: RangeCache(observed=True))
    """The newest active range read per conversation (R127): later reads scan only newer
    entries, none while the commits since the read grew it (``remember_entries``)."""
    validated: ValidatedMessages = field(default_factory=ValidatedMessages)
    """Stored messages already validated for a request (R127): later requests reuse them."""
    request_planner: RequestPlanner | None = None
    """Plans a first request before the admission commit (the generation part's)."""
    approvals: dict[int, asyncio.Event] = field(default_factory=dict)
    """Per tool task waiting for a permission decision: set when one is committed."""
    closing: bool = False
    """Set by ``Harness.close()``: new operations raise ``HarnessClosed`` (R27)."""
    _entries: OrderedDict[int, StoredEntry] = field(default_factory=OrderedDict)
    _built_envs: dict[int, ExecutionEnv] = field(default_factory=dict)

    def remember_entries(self, info: CommitInfo) -> None:
        """Keep the entries a commit of this session stored, as ``entry`` and contexts read them.

        # REMINDER: the published entry is the stored one (filtered before the
        # write, never changed after) only because this process is the store's one
        # writer (the single-writer lock); tests/harness/test_committed_reads.py
        # compares what memory served with a reopened store. Subscribed when the
        # harness opens, before any read: ``contexts`` must see every stored commit.
        """
        if not info.stored:
            return
        for record in info.entries:
            self._keep(StoredEntry(record, info.seq))
        self.contexts.observe(info.entries)

    def _keep(self, found: StoredEntry) -> None:
        self._entries[found.entry.id] = found
        self._entries.move_to_end(found.entry.id)
        while len(self._entries) > RECENT_ENTRIES:
            self._entries.popitem(last=False)

    async def entry(self, entry_id: int) -> StoredEntry | None:
        """Read an entry by ID; one read recently comes from memory (entries never change)."""
        found = self._entries.get(entry_id)
        if found is not None:
            self._entries.move_to_end(entry_id)
            return found
        found = await self.session.storage.entry(entry_id)
        # REMINDER: an absent ID is not remembered: it may be committed later.
        if found is not None:
            self._keep(found)
        return found

    def check_open(self) -> None:
        """Raise ``HarnessClosed`` once ``close()`` started (R23, R27)."""
        if self.closing or self.session.closing:
            raise HarnessClosed()

    def settings(self) -> Settings:
        """Return the settings as they are now (R34)."""
        return read_settings(self.settings_source)

    def report(self, report: Report) -> None:
        """Hand a problem to ``on_report``; never raises."""
        if self.on_report is not None:
            with contextlib.suppress(Exception):  # REMINDER: a reporter must not break callers.
                self.on_report(report)

    def task_definition(self, name: str) -> TaskDefinition:
        """Return the kernel definition the session runs for ``name``."""
        return self.tasks.definition(name)

    def resolve(self, stored: JsonObject | None) -> ResolvedAgent:
        """Resolve a stored ``pi.agent`` value against the registry as it is now (R30)."""
        return resolve_agent(
            stored,
            self.registry.snapshot().extensions,
            self.settings().extensions,
            self.report,
        )

    async def agent(self, conversation_id: int) -> ResolvedAgent:
        """Resolve a conversation's committed agent (R30, R33)."""
        return self.resolve(await self.session.snapshot(AGENT_DOC, conversation_id))

    def build_env(self, conversation_id: int, cwd: str | None) -> ExecutionEnv | None:
        """Build the environment of a conversation now (R118); the factory may raise.

        The environment is remembered so that ``cleanup_envs`` reaches it.
        """
        if self.env_factory is None:
            return None
        env = self.env_factory(EnvTarget(conversation_id, cwd))
        if env is not None:
            # REMINDER: held strongly: a factory that builds an environment per call
            # drops it when the call ends, and its spill files and background
            # processes would never be cleaned up. Such environments are small.
            self._built_envs.setdefault(id(env), env)
        return env

    async def cleanup_envs(self) -> None:
        """Clean up every environment built and still held (issue 13), when the harness closes.

        Each one ends the processes its commands left and deletes their spill files;
        a failing cleanup is reported, never raised.
        """
        envs, self._built_envs = list(self._built_envs.values()), {}
        for env in envs:
            try:
                await env.cleanup()
            except Exception as error:
                self.report(Report("env_cleanup_failed", f"Environment cleanup failed: {error}"))
