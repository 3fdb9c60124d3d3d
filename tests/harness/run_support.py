"""Running a real harness in tests: the faux provider, a store, LocalEnv in ``tmp_path``.

``open_rig`` (a fixture) opens a ``Harness`` over ``MemoryStorage`` (or a store the
test gives, such as a real ``SqliteStorage``), registers a ``FauxProvider``,
installs the extensions the test names and creates conversation 1 with the faux
model and the test's working directory. Every rig it opened is closed at teardown.

``Rig`` records every commit's publication (``rig.commits``), so tests can count
partial and progress commits and read ``pi.live`` as a screen saw it. Every await
goes through ``within`` so a bug fails the test in seconds instead of hanging.

The tool-task tests (``test_tool_*``) share a probe tool on a rig: ``make_tool``
defines a tool over an ``execute`` body (``returns(text)`` answers with a text),
``one_call`` runs one round calling it and returns the result entry,
``start_gate`` holds a run inside a call to a ``ToolBodyGate`` (which writes
``working`` and waits until the test opens it), ``slot_outputs`` lists every
committed change of the first slot's output and ``harness_block`` builds the
``<harness>`` content item that diagnostics render in.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from pi_durable_tui.ai import (
    FauxProvider,
    FauxResponse,
    Model,
    ModelRef,
    Models,
    faux_response,
    faux_tool_call,
)
from pi_durable_tui.env import LocalEnv
from pi_durable_tui.harness import (
    LIVE_DOC,
    TOOL_RESULT,
    AgentChange,
    Conversation,
    Extension,
    Harness,
    Input,
    Settings,
    Tool,
    ToolApi,
    ToolResult,
    create_registry,
    define_extension,
    define_tool,
)
from pi_durable_tui.kernel import CommitInfo, ManualClock, Report
from pi_durable_tui.storage import EntryRecord, JsonObject, MemoryStorage, Storage
from pi_durable_tui.storage.records import SubmissionRecord, TaskRecord
from tests.deadlines import WAIT

T = TypeVar("T")


async def within(awaitable: Awaitable[T], timeout: float = WAIT) -> T:
    """Await with a deadline, so a bug fails fast instead of hanging."""
    return await asyncio.wait_for(awaitable, timeout)


@dataclass(frozen=True, slots=True)
class Published:
    """One commit as a listener saw it, with the monotonic time it was published."""

    info: CommitInfo
    at: float

    def live(self, conversation_id: int = 1) -> tuple[JsonObject, list[JsonObject]] | None:
        """``(value, ops)`` of this commit's ``pi.live`` change, if it changed it."""
        for change in self.info.documents:
            address = change.address
            if address.kind == LIVE_DOC.kind and address.scope.id == conversation_id:
                return change.value, list(change.ops)
        return None


@dataclass(eq=False)
class Rig:
    """An open harness with its faux provider, clock, working directory and commit log."""

    harness: Harness
    faux: FauxProvider
    clock: ManualClock | None
    workdir: Path
    commits: list[Published] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)

    @property
    def root(self) -> Conversation:
        """Conversation 1."""
        return self.harness.conversation(1)

    async def ask(self, prompt: str | Input, conversation: int = 1) -> SubmissionRecord:
        """Submit an input and wait until it settles."""
        handle = await within(self.harness.conversation(conversation).submit(prompt))
        return await within(handle.wait())

    async def transcript(self, conversation_id: int = 1) -> list[EntryRecord]:
        """Every visible entry, oldest first."""
        page = await self.harness.session.storage.scan_entries(
            conversation_id, order="asc", limit=10_000
        )
        return [stored.entry for stored in page.items]

    async def kinds(self, conversation_id: int = 1) -> list[str]:
        """The kinds of the visible entries, oldest first."""
        return [entry.kind for entry in await self.transcript(conversation_id)]

    async def live(self, conversation_id: int = 1) -> JsonObject:
        """The committed ``pi.live``."""
        return await self.harness.conversation(conversation_id).snapshot(LIVE_DOC) or {}

    async def tasks(self, kind: str | None = None) -> list[TaskRecord]:
        """Every task (of a kind), in ID order."""
        page = await self.harness.session.storage.scan_tasks(kind=kind, limit=10_000)
        return list(page.items)

    def live_changes(self, conversation_id: int = 1) -> list[tuple[Published, JsonObject, list]]:
        """Every committed change of ``pi.live``: ``(commit, value, ops)``."""
        out: list[tuple[Published, JsonObject, list]] = []
        for published in self.commits:
            change = published.live(conversation_id)
            if change is not None:
                out.append((published, *change))
        return out

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = WAIT) -> None:
        """Yield to the loop until ``predicate()`` holds (checked after each commit)."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError("condition not reached")
            await asyncio.sleep(0.002)


RigFactory = Callable[..., Awaitable[Rig]]


@pytest.fixture
async def open_rig(tmp_path: Path) -> AsyncIterator[RigFactory]:
    """A factory of open harnesses; each is closed at teardown.

    Call it as ``await open_rig(*responses, extensions=..., settings=...,
    clock=..., storage=..., env=True, model=None, agent=None, root=True)``.
    """
    opened: list[Rig] = []

    async def factory(
        *responses: FauxResponse,
        extensions: Sequence[Extension] = (),
        settings: Settings | Callable[[], Settings] | None = None,
        clock: ManualClock | None = None,
        storage: Storage | None = None,
        env: bool = True,
        models: Sequence[Model] = (),
        faux: FauxProvider | None = None,
        agent: AgentChange | None = None,
        root: bool = True,
        workdir: Path | None = None,
    ) -> Rig:
        provider = faux if faux is not None else FauxProvider(list(responses))
        for model in models:
            provider.add_model(model)
        registry = Models()
        registry.register_faux(provider)
        cwd = workdir or tmp_path / "work"
        cwd.mkdir(exist_ok=True)
        reports: list[Report] = []
        harness = await within(
            Harness.open(
                storage if storage is not None else MemoryStorage(),
                models=registry,
                registry=create_registry(*extensions),
                settings=settings,
                env=(lambda target: LocalEnv(target.cwd or str(cwd))) if env else None,
                clock=clock,
                on_report=reports.append,
            )
        )
        rig = Rig(harness, provider, clock, cwd, reports=reports)
        harness.session.subscribe(
            lambda info: rig.commits.append(Published(info, time.monotonic()))
        )
        opened.append(rig)
        if root:
            change = agent or AgentChange(model=ModelRef("faux", "faux-1"), cwd=str(cwd))
            await within(harness.root(agent=change))
        return rig

    yield factory
    for rig in opened:
        await within(rig.harness.close())


def texts(entry: EntryRecord) -> str:
    """The text of an entry's first message (string content or its text blocks)."""
    message: Any = (entry.model or [{}])[0]
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def message(entry: EntryRecord) -> JsonObject:
    """An entry's first message."""
    assert entry.model, f"entry {entry.id} ({entry.kind}) has no message"
    first = entry.model[0]
    assert isinstance(first, dict)
    return first


class TextArgs(BaseModel):
    text: str = "x"


Execute = Callable[[Any, ToolApi], Awaitable[ToolResult | None]]


def make_tool(name: str, execute: Execute, **options: Any) -> Tool[Any]:
    options.setdefault("parameters", TextArgs)
    return define_tool(name, description=f"The {name} tool.", execute=execute, **options)


async def returns(text: str) -> ToolResult:
    return ToolResult(content=text)


@dataclass
class ToolBodyGate:
    """A tool body that writes a line, then waits until the test opens it."""

    opened: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    apis: list[ToolApi] = field(default_factory=list)

    async def __call__(self, _args: Any, api: ToolApi) -> ToolResult:
        self.apis.append(api)
        api.output("working\n")
        self.started.set()
        await self.opened.wait()
        return ToolResult(content="opened")


def slot_outputs(rig: Rig) -> list[tuple[float, str]]:
    """``(publication time, output)`` of every commit that changed the first slot's output."""
    out: list[tuple[float, str]] = []
    last: str | None = None
    for published, value, _ops in rig.live_changes():
        slots = value.get("tools") or []
        output = slots[0].get("output") if slots else None
        if output is not None and output != last:
            out.append((published.at, output))
            last = output
    return out


async def start_gate(
    open_rig: RigFactory, answer: str = "done", hooks: list[Any] | None = None
) -> tuple[Rig, ToolBodyGate, Any]:
    """Start a run whose one call (to ``gate``) has committed ``working`` and waits."""
    gate = ToolBodyGate()
    extension = define_extension("probe", tools=[make_tool("gate", gate)], hooks=hooks or [])
    rig = await open_rig(
        faux_response(faux_tool_call("gate", {"text": "a"})),
        faux_response(answer),
        extensions=[extension],
    )
    handle = await within(rig.root.submit(Input("go")))
    await within(rig.wait_until(lambda: any(o == "working\n" for _, o in slot_outputs(rig))))
    return rig, gate, handle


async def one_call(
    open_rig: RigFactory,
    tools: list[Tool[Any]],
    arguments: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    hooks: list[Any] | None = None,
    settings: Settings | None = None,
) -> tuple[Rig, EntryRecord]:
    """Run one round calling ``name`` (the first tool by default); return its result entry."""
    extension = define_extension("probe", tools=tools, hooks=hooks or [])
    rig = await open_rig(
        faux_response(faux_tool_call(name or tools[0].name, arguments or {})),
        faux_response("done"),
        extensions=[extension],
        settings=settings,
    )
    record = await rig.ask("go")
    assert record.status == "done", record
    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    return rig, result


def harness_block(*lines: str) -> dict[str, str]:
    return {"type": "text", "text": "<harness>\n" + "\n".join(lines) + "\n</harness>"}
