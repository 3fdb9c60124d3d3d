"""Shared support for harness tests: ``HarnessKit`` and a tool that waits at a gate.

- ``kit`` (fixture): a ``HarnessKit`` over a ``MemoryStorage``; ``sqlite_kit`` the
  same over a real ``SqliteStorage`` in ``tmp_path``. Both are closed at teardown.
  A kit owns a ``FauxProvider`` (``kit.script(...)`` queues responses), a
  ``ManualClock``, a registry, the settings the harness reads at every decision
  (assign ``kit.settings``), the reports it made (``kit.reports``) and a working
  directory. ``kit.root()`` creates conversation 1 on the faux model;
  ``kit.reopen()`` closes the harness and opens a new one on the same store
  (the memory store survives: the kit lends it without closing it).
- ``kit.model_gate``: while set, the faux model stops before every streamed chunk
  at that ``Gate``, so a test can hold a generation mid-stream.
- ``GatedTool``: a tool whose calls record their ``label`` and wait at a ``Gate``,
  so a test can hold a run inside a tool round.
- ``write_note(conversation)`` appends an entry and returns its ID.
- ``hold_busy(kit, *then)`` starts a run whose first tool call waits at a
  ``GatedTool``'s gate (the conversation is busy until the test opens it);
  ``dialogue`` reads the transcript as ``kind: text`` lines, ``settled`` waits
  for submissions to settle and ``last_seq`` is the store's last sequence
  number. ``NoArgs`` is the arguments model of a tool without arguments. The
  inbox tests (``test_inbox_*``) share them.
- ``Gate``, ``within(awaitable)`` (a safety timeout, so a bug fails fast) and
  ``spin()`` (let ready callbacks run) are the kernel tests' own, re-exported.
  Nothing here sleeps for real.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from pydantic import BaseModel

from pi_durable_tui.ai import (
    AssistantMessage,
    FauxProvider,
    FauxResponse,
    ModelRef,
    Models,
    faux_response,
    faux_tool_call,
)
from pi_durable_tui.env import LocalEnv
from pi_durable_tui.harness import (
    INBOX_DOC,
    LIVE_DOC,
    AgentChange,
    Conversation,
    EntryDraft,
    Extension,
    Harness,
    Input,
    Registry,
    Settings,
    Submission,
    Tool,
    ToolApi,
    ToolResult,
    Write,
    create_registry,
    define_extension,
    define_tool,
)
from pi_durable_tui.kernel import ManualClock, Report
from pi_durable_tui.storage import (
    EntryRecord,
    JsonObject,
    MemoryStorage,
    SqliteStorage,
    Storage,
    SubmissionRecord,
)
from tests.kernel.task_support import Gate as Gate
from tests.kernel.task_support import spin as spin
from tests.kernel.task_support import within as within

FAUX_MODEL = ModelRef("faux", "faux-1")
"""The model every kit conversation uses unless a test says otherwise."""


class GateArgs(BaseModel):
    """Arguments of a ``GatedTool`` call."""

    label: str = ""


@dataclass(eq=False)
class GatedTool:
    """A tool whose calls record their label and wait at ``gate`` before answering.

    Args:
        name: The tool name.
        replay: Its replay policy.
        execution_mode: ``parallel`` or ``sequential``.
    """

    name: str = "gate"
    replay: str = "unsafe"
    execution_mode: str = "parallel"
    gate: Gate = field(default_factory=Gate)
    calls: list[str] = field(default_factory=list)
    tool: Tool[GateArgs] = field(init=False)

    def __post_init__(self) -> None:
        async def execute(args: GateArgs, api: ToolApi) -> ToolResult:
            self.calls.append(args.label)
            await self.gate.passage()
            return ToolResult(content=f"{self.name} {args.label} done")

        self.tool = define_tool(
            self.name,
            description=f"Waits at a test gate ({self.name}).",
            parameters=GateArgs,
            execute=execute,
            replay=cast(Any, self.replay),
            execution_mode=cast(Any, self.execution_mode),
        )

    def extension(self, name: str = "gate-tools") -> Extension:
        """Return an extension holding this tool."""
        return define_extension(name, tools=[self.tool])


class _LentStorage:
    """A view of a ``MemoryStorage`` whose ``close`` leaves the store open (for reopen)."""

    def __init__(self, inner: MemoryStorage) -> None:
        self._inner = inner
        self.closed = False

    async def close(self) -> None:
        self.closed = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass(eq=False)
class HarnessKit:
    """A harness on a faux model, a manual clock and a store that survives reopen."""

    workdir: Path
    open_storage: Callable[[], Awaitable[Storage]]
    faux: FauxProvider = field(init=False)
    models: Models = field(default_factory=Models)
    clock: ManualClock = field(default_factory=ManualClock)
    registry: Registry = field(default_factory=create_registry)
    settings: Settings = field(default_factory=Settings)
    """Read by the harness at every decision: assign a new value to change it (R34)."""
    reports: list[Report] = field(default_factory=list)
    model_gate: Gate | None = None
    """While set, the faux model waits at this gate before every streamed chunk."""
    _harness: Harness | None = None

    def __post_init__(self) -> None:
        self.faux = FauxProvider(tokens_per_second=1_000_000.0, sleep=self._model_sleep)
        self.models.register_faux(self.faux)

    async def _model_sleep(self, _seconds: float) -> None:
        gate = self.model_gate
        if gate is not None:
            await gate.passage()
        else:
            await asyncio.sleep(0)

    @property
    def harness(self) -> Harness:
        """The open harness."""
        assert self._harness is not None, "open the kit first"
        return self._harness

    async def open(self, **options: Any) -> Harness:
        """Open a harness on the kit's store; ``options`` go to ``Harness.open``."""
        options.setdefault("env", lambda target: LocalEnv(target.cwd or str(self.workdir)))
        self._harness = await Harness.open(
            await self.open_storage(),
            models=self.models,
            registry=self.registry,
            settings=lambda: self.settings,
            clock=self.clock,
            on_report=self.reports.append,
            **options,
        )
        return self._harness

    async def close(self) -> None:
        """Close the harness (idempotent)."""
        if self._harness is not None:
            await within(self._harness.close())

    async def reopen(self, **options: Any) -> Harness:
        """Close the harness and open a new one on the same store."""
        await self.close()
        return await self.open(**options)

    async def until(self, check: Callable[[], Awaitable[bool]]) -> None:
        """Wait (with the safety timeout) until ``check()`` holds, re-checking after commits."""
        committed = asyncio.Event()
        unsubscribe = self.harness.session.subscribe(lambda _info: committed.set())
        try:
            while not await check():
                await within(committed.wait())
                committed.clear()
        finally:
            unsubscribe()

    def script(self, *steps: FauxResponse | AssistantMessage) -> None:
        """Queue faux responses (a request takes the first one that fits)."""
        self.faux.enqueue(*steps)

    def install(self, *extensions: Extension) -> None:
        """Install extensions in the kit's registry."""
        self.registry.install(*extensions)

    async def root(self, **change: Any) -> Conversation:
        """Return conversation 1, created on the faux model in the work directory.

        Args:
            **change: ``AgentChange`` fields replacing the defaults.
        """
        fields: dict[str, Any] = {"model": FAUX_MODEL, "cwd": str(self.workdir)}
        fields.update(change)
        return await self.harness.root(agent=AgentChange(**fields))

    async def transcript(self, conversation: Conversation) -> list[EntryRecord]:
        """Every visible entry of a conversation, oldest first."""
        return list(reversed(await conversation.entries(limit=10_000)))

    async def kinds(self, conversation: Conversation) -> list[str]:
        """The kinds of a conversation's visible entries, oldest first."""
        return [entry.kind for entry in await self.transcript(conversation)]

    async def live(self, conversation: Conversation) -> JsonObject:
        """The committed ``pi.live`` of a conversation (``{}`` when absent)."""
        return await conversation.snapshot(LIVE_DOC) or {}

    async def inbox_ids(self, conversation: Conversation) -> list[int]:
        """The submission IDs queued in a conversation's inbox, in order."""
        inbox = await conversation.snapshot(INBOX_DOC) or {}
        return [item["id"] for item in inbox.get("items", [])]


async def write_note(conversation: Conversation, data: JsonObject | None = None) -> int:
    """Append an ``app.note`` entry to an idle conversation; return its ID."""
    submission = await conversation.submit(Write(EntryDraft("app.note", data=data)))
    entry = submission.record.entry
    assert entry is not None, f"the note was not placed at once: {submission.record}"
    return entry


def entry_text(entry: EntryRecord) -> str:
    """The text of an entry's first message (string content or text blocks)."""
    message = entry.model[0] if entry.model else None
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


class NoArgs(BaseModel):
    """No arguments."""


async def hold_busy(
    kit: HarnessKit, *then: FauxResponse
) -> tuple[Conversation, GatedTool, Submission]:
    """Start a run whose first tool call waits at a gate; ``then`` answers afterwards."""
    gated = GatedTool()
    kit.install(gated.extension())
    kit.script(faux_response(faux_tool_call("gate", {"label": "first"})), *then)
    root = await kit.root()
    first = await root.submit(Input("go"))
    await gated.gate.wait_reached()
    return root, gated, first


async def dialogue(kit: HarnessKit, conversation: Conversation) -> list[str]:
    """The transcript without system entries, as ``kind: text`` lines."""
    short = {"pi.user": "user", "pi.assistant": "assistant", "pi.tool-result": "result"}
    lines = []
    for entry in await kit.transcript(conversation):
        if entry.kind == "pi.system":
            continue
        kind = short.get(entry.kind, entry.kind)
        if entry.kind == "pi.assistant" and not entry_text(entry):
            lines.append(f"{kind}: <tool call>")
        else:
            lines.append(f"{kind}: {entry_text(entry)}")
    return lines


async def settled(*submissions: Submission) -> list[SubmissionRecord]:
    return [await within(s.wait()) for s in submissions]


async def last_seq(kit: HarnessKit) -> int:
    seq: int = kit.harness.session.storage.last_seq
    return seq


@pytest.fixture
async def kit(tmp_path: Path) -> AsyncIterator[HarnessKit]:
    """An open ``HarnessKit`` over a memory store."""
    store = MemoryStorage()

    async def lend() -> Storage:
        return cast(Storage, _LentStorage(store))

    harness_kit = HarnessKit(tmp_path, lend)
    await harness_kit.open()
    yield harness_kit
    await harness_kit.close()


@pytest.fixture
async def sqlite_kit(tmp_path: Path) -> AsyncIterator[HarnessKit]:
    """An open ``HarnessKit`` over a real SQLite store in ``tmp_path``."""
    path = tmp_path / "session.sqlite"
    workdir = tmp_path / "work"
    workdir.mkdir()

    async def open_sqlite() -> Storage:
        return await SqliteStorage.open(path)

    harness_kit = HarnessKit(workdir, open_sqlite)
    await harness_kit.open()
    yield harness_kit
    await harness_kit.close()
