"""A real harness for the view, event and task-graph tests, and replicas that apply frames.

``open_view_rig`` opens a ``Harness`` over ``MemoryStorage`` (or the store given)
with a ``FauxProvider`` (paced when ``tokens_per_second`` is set), the coding
tools on ``LocalEnv`` in a working directory, and conversation 1 on the faux
model. ``view_rig`` (a fixture) is a factory of them in ``tmp_path``, closing
every harness it opened at teardown.

``Replica`` is what a remote client does with frames: it starts from a view's
value and applies each frame's operations with ``apply_ops``. Every await of
these tests goes through ``within``, so a bug fails in seconds instead of hanging.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pi_durable_tui.ai import FauxProvider, FauxResponse, ModelRef, Models
from pi_durable_tui.env import LocalEnv
from pi_durable_tui.harness import (
    AgentChange,
    Conversation,
    Extension,
    Harness,
    Settings,
    ViewState,
    create_registry,
)
from pi_durable_tui.kernel import ManualClock
from pi_durable_tui.storage import JsonObject, MemoryStorage, Storage
from pi_durable_tui.storage.json_ops import Op, apply_ops
from pi_durable_tui.tools import CodingTools
from tests.deadlines import WAIT

T = TypeVar("T")


async def within(awaitable: Awaitable[T], timeout: float = WAIT) -> T:
    """Await with a deadline, so a bug fails fast instead of hanging."""
    return await asyncio.wait_for(awaitable, timeout)


async def collect(frames: AsyncIterable[T]) -> list[T]:
    """Everything an iterator yields until it ends, within the deadline."""

    async def gather() -> list[T]:
        return [frame async for frame in frames]

    return await within(gather())


async def until(predicate: Callable[[], bool], timeout: float = WAIT) -> None:
    """Yield to the loop until ``predicate()`` holds."""

    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.005)

    await within(poll(), timeout)


@dataclass(eq=False)
class Replica:
    """A client-side copy of a view, kept by applying every frame's operations."""

    value: JsonObject
    frames: int = 0
    mismatches: list[tuple[list[Op], JsonObject, JsonObject]] = field(default_factory=list)

    def apply(self, value: JsonObject, ops: list[Op]) -> None:
        """Apply a frame; remember it when the result differs from the frame's value."""
        replicated = apply_ops(self.value, ops)
        assert isinstance(replicated, dict)
        self.value = replicated
        self.frames += 1
        if replicated != value:
            self.mismatches.append((ops, replicated, value))

    @classmethod
    def of(cls, view: ViewState) -> Replica:
        """A replica following a view from its current value."""
        replica = cls(view.value)
        view.subscribe(replica.apply)
        return replica


@dataclass(eq=False)
class ViewRig:
    """An open harness with its faux provider and working directory."""

    harness: Harness
    faux: FauxProvider
    workdir: Path

    @property
    def root(self) -> Conversation:
        """Conversation 1."""
        return self.harness.conversation(1)

    async def fresh(self, tail: int | None = None, conversation_id: int = 1) -> JsonObject:
        """A fresh mount's value (the view a late joiner gets now)."""
        view = await within(self.harness.conversation(conversation_id).view_state(tail))
        value = view.value
        view.close()
        return value

    async def aclose(self) -> None:
        """Close the harness."""
        await within(self.harness.close())


async def open_view_rig(
    workdir: Path,
    *responses: FauxResponse,
    tokens_per_second: float = 0.0,
    settings: Settings | None = None,
    clock: ManualClock | None = None,
    storage: Storage | None = None,
    extensions: Sequence[Extension] = (),
    root: bool = True,
) -> ViewRig:
    """Open a harness on the faux provider and the coding tools, working in ``workdir``."""
    faux = FauxProvider(list(responses), tokens_per_second=tokens_per_second)
    models = Models()
    models.register_faux(faux)
    workdir.mkdir(exist_ok=True)
    harness = await within(
        Harness.open(
            storage if storage is not None else MemoryStorage(),
            models=models,
            registry=create_registry(CodingTools, *extensions),
            settings=settings,
            env=lambda target: LocalEnv(target.cwd or str(workdir)),
            clock=clock,
        )
    )
    if root:
        agent = AgentChange(model=ModelRef("faux", "faux-1"), cwd=str(workdir))
        await within(harness.root(agent=agent))
    return ViewRig(harness, faux, workdir)


RigFactory = Callable[..., Awaitable[ViewRig]]


@pytest.fixture
async def view_rig(tmp_path: Path) -> AsyncIterator[RigFactory]:
    """A factory of open harnesses (``open_view_rig`` in ``tmp_path``); each closed at teardown."""
    opened: list[ViewRig] = []

    async def factory(*responses: FauxResponse, **options: Any) -> ViewRig:
        rig = await open_view_rig(tmp_path / "work", *responses, **options)
        opened.append(rig)
        return rig

    yield factory
    for rig in opened:
        await rig.aclose()


def entry_ids(view: JsonObject) -> list[int]:
    """The IDs of a view's entries, in list order."""
    return [entry["id"] for entry in view["entries"]]


def text_of(message: Any) -> str:
    """The text blocks of a stored message, joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [] if block.get("type") == "text")
