"""The screen's view model and controller over a real session, for ``tests/app`` and ``tests/tui``.

``open_screen`` (a fixture, a plugin of the root conftest) opens an ``AgentApp``
exactly as ``pidurable`` does (a real SQLite store under the test's
``PIDURABLE_HOME``, the real registry: coding tools, prompt sections, subagents)
with a ``FauxProvider`` the test scripts, a workspace in ``tmp_path``, and starts
the ``LiveScreenModel`` and ``AgentController`` with ``start_screen``. Every
``ViewChange`` the model emits is recorded (``rig.changes``); every screen it
opened is closed at teardown. Waits poll with a deadline, so a bug fails in
seconds instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.ai import (
    FauxMatch,
    FauxProvider,
    FauxResponse,
    faux_error,
    faux_response,
    faux_text,
    faux_tool_call,
)
from pi_durable_tui.app import (
    AgentApp,
    AgentController,
    AppOptions,
    Block,
    LiveScreenModel,
    PermissionChoices,
    TaskNode,
    ViewChange,
    start_screen,
)
from pi_durable_tui.kernel import ManualClock, Tx
from tests.deadlines import WAIT
from tests.harness.run_support import within


async def until(predicate: Callable[[], bool], timeout: float = WAIT, what: str = "") -> None:
    """Yield to the loop until ``predicate()`` holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not reached: {what or predicate}")
        await asyncio.sleep(0.005)


def say(text: str) -> FauxResponse:
    """A scripted answer with only text."""
    return faux_response(faux_text(text))


def summarizer_down() -> FauxResponse:
    """The compaction summarizer's request failing for good (not retried)."""
    return faux_error(
        "summarizer down",
        status=400,
        retryable=False,
        match=FauxMatch(system="You write context checkpoints"),
    )


AUTO_COMPACTING: dict[str, object] = {
    "compaction": {"keep_recent_tokens": 1, "reserve_tokens": 127_950}
}
"""Settings where faux-1 (128,000 tokens) compacts before the second prompt (R108)."""


def call(name: str, **arguments: object) -> FauxResponse:
    """A scripted answer calling one tool."""
    return faux_response(faux_tool_call(name, dict(arguments)))


FAST: dict[str, object] = {"progress": {"partial_interval_ms": 20, "output_interval_ms": 20}}
"""Project settings that commit streamed text and tool output every 20 ms (R85, R103)."""


def gate_command(name: str = "go") -> str:
    """A ``bash`` command that prints, then waits until the workspace holds ``name``."""
    return f"echo started; while [ ! -e {name} ]; do sleep 0.01; done; echo released"


FOREGROUND = FauxMatch(user="[fg]")
BACKGROUND = FauxMatch(user="[bg]")


def background_subagent(*main: FauxResponse) -> list[FauxResponse]:
    """Steps of a main turn that starts the background subagent ``[bg] review``.

    Its child runs a command gated by ``bg-go`` (``rig.release("bg-go")``), then
    answers ``Findings: fine.``, which reaches the main conversation later as a
    ``[subagent <id> report]`` follow-up. ``main`` answer the main conversation
    after the start (its answer, then whatever the test does next).
    """
    return [
        faux_response(faux_tool_call("bash", {"command": gate_command("bg-go")}), match=BACKGROUND),
        faux_response(faux_text("Findings: fine."), match=BACKGROUND),
        call("subagent", task="[bg] review", background=True),
        *main,
    ]


def walk(nodes: Sequence[TaskNode]) -> list[TaskNode]:
    """Every node of a task tree, depth first."""
    return [n for node in nodes for n in (node, *walk(node.children))]


def running_commands(rig: ScreenRig) -> list[TaskNode]:
    """The ``bash`` calls past their durable intent (phase ``execute``, R93)."""
    return [
        n
        for n in walk(rig.model.tasks)
        if n.label.startswith("bash") and (n.status, n.phase) == ("running", "execute")
    ]


@dataclass(eq=False)
class ScreenRig:
    """An open session with its screen model, controller, faux provider and workspace."""

    model: LiveScreenModel
    controller: AgentController
    faux: FauxProvider
    workdir: Path
    clock: ManualClock | None
    changes: list[ViewChange] = field(default_factory=list)

    @property
    def app(self) -> AgentApp:
        """The open session (the controller's: ``/new`` and ``/resume`` replace it)."""
        return self.controller.app

    def blocks(self, kind: str | None = None) -> list[Block]:
        """The loaded blocks (of one kind), oldest first."""
        return [b for b in self.model.blocks if kind is None or b.kind == kind]

    def texts(self, kind: str) -> list[str]:
        """The texts of the loaded blocks of one kind."""
        return [b.text for b in self.blocks(kind)]

    def card(self, name: str, index: int = -1) -> Block:
        """A loaded tool-card block by tool name (the newest by default)."""
        cards = [b for b in self.blocks("tool") if b.tool is not None and b.tool.name == name]
        assert cards, f"no {name} card in {[b.key for b in self.model.blocks]}"
        return cards[index]

    def card_output(self, name: str) -> str:
        """The output on the newest card of a tool, or empty while there is none."""
        cards = [b.tool for b in self.blocks("tool") if b.tool is not None and b.tool.name == name]
        return cards[-1].output if cards else ""

    def task(self, kind: str) -> TaskNode | None:
        """The first node of the task tree of this kind, at any depth."""
        return next((n for n in walk(self.model.tasks) if n.kind == kind), None)

    def release(self, name: str = "go") -> None:
        """Let ``gate_command`` commands finish."""
        (self.workdir / name).touch()

    async def until(self, predicate: Callable[[], bool], what: str = "") -> None:
        """Wait until ``predicate()`` holds (checked as the loop turns)."""
        await until(predicate, what=what)

    async def idle(self) -> None:
        """Wait until the harness has no ordinary work left."""
        await within(self.app.harness.wait_for_idle())

    async def ask(self, text: str) -> None:
        """Submit through the controller and wait until the session is idle."""
        await within(self.controller.submit(text))
        await self.idle()


ScreenFactory = Callable[..., Awaitable["ScreenRig"]]
"""``await open_screen(*responses, faux=, clock=, continue_session=, demo=, demo_pace=,
model="faux/faux-1", settings=, verbose=, permissions=)``: see ``open_screen``."""
AUTO = PermissionChoices(mode="auto")
"""The screen tests' default: their scripted commands run without asking (issue 13)."""


@pytest.fixture
async def open_screen(tmp_path: Path) -> AsyncIterator[ScreenFactory]:
    """A factory of started screens over one workspace; each is closed at teardown.

    ``continue_session=True`` reopens the newest session of the workspace, as
    ``pidurable --continue`` does (with the recovery report); ``settings`` is
    written to the workspace's ``.pidurable/settings.json`` first.
    ``permissions`` defaults to ``--permission-mode auto``: these tests are about
    the screen of commands that run; the approval tests pass the product's
    default (``PermissionChoices()``, ``auto-edit``) or another mode.
    """
    opened: list[ScreenRig] = []
    workdir = tmp_path / "work"
    workdir.mkdir()

    async def factory(
        *responses: FauxResponse,
        faux: FauxProvider | None = None,
        clock: ManualClock | None = None,
        continue_session: bool = False,
        demo: str | None = None,
        demo_pace: float = 1.0,
        model: str | None = "faux/faux-1",
        settings: dict[str, object] | None = None,
        verbose: bool = False,
        permissions: PermissionChoices = AUTO,
    ) -> ScreenRig:
        if settings is not None:
            (workdir / ".pidurable").mkdir(exist_ok=True)
            (workdir / ".pidurable" / "settings.json").write_text(json.dumps(settings))
        provider = faux if faux is not None else FauxProvider(list(responses))
        options = AppOptions(
            cwd=str(workdir),
            continue_session=continue_session,
            model=model if demo is None else None,
            demo=demo,
            demo_pace=demo_pace,
            permissions=permissions,
        )
        app = await within(AgentApp.open(options, faux=None if demo else provider, clock=clock))
        screen_model, controller = await within(
            start_screen(app, reopened=continue_session, verbose=verbose)
        )
        rig = ScreenRig(screen_model, controller, provider, Path(app.cwd), clock)
        screen_model.subscribe(rig.changes.append)
        opened.append(rig)
        return rig

    yield factory
    for rig in opened:
        await within(rig.controller.close())


async def crash_mid_run(open_screen: ScreenFactory) -> ScreenRig:
    """Leave a store mid-run, as ``kill -9`` would, and return the closed rig.

    The main turn runs three calls at once: a command gated by ``go``, a
    foreground subagent ``[fg] check the tests`` and a background subagent ``[bg]
    review the docs``, whose children each run a command (gated by ``fg-go`` and
    ``bg-go``). Once the three commands run and the main one committed output,
    the session closes (``Harness.close()`` writes no outcome, R27: the tasks are as
    ``kill -9`` leaves them; only the stop marker the close commits, which words the
    report "cut when the session was closed", differs). Reopen with
    ``continue_session=True``; the children then answer to ``[fg]`` and ``[bg]``.
    """
    rig = await open_screen(
        faux_response(faux_tool_call("bash", {"command": gate_command("fg-go")}), match=FOREGROUND),
        faux_response(faux_tool_call("bash", {"command": gate_command("bg-go")}), match=BACKGROUND),
        faux_response(
            faux_text("Working on three fronts."),
            faux_tool_call("bash", {"command": gate_command()}),
            faux_tool_call("subagent", {"task": "[fg] check the tests"}),
            faux_tool_call("subagent", {"task": "[bg] review the docs", "background": True}),
        ),
        settings={"progress": {"output_interval_ms": 10}},
    )
    await within(rig.controller.submit("go"))
    await rig.until(lambda: len(running_commands(rig)) == 3, "three commands run")
    await rig.until(lambda: "started" in rig.card_output("bash"), "committed output")
    await within(rig.controller.close())
    return rig


async def crash_mid_stream(open_screen: ScreenFactory, answer: str) -> None:
    """Leave a store while ``answer`` streams, as ``kill -9`` would (R27).

    The prompt ``talk`` is answered slowly with ``answer``; once a partial of
    a few words is committed, the session closes. Reopen with
    ``continue_session=True``: the next attempt keeps the partial as an aborted
    entry (R84) and streams the answer again.
    """
    rig = await open_screen(faux=FauxProvider([say(answer)], tokens_per_second=200), settings=FAST)
    await within(rig.controller.submit("talk"))
    await rig.until(lambda: len(getattr(rig.model.block("live"), "text", "")) > 20, "a partial")
    await within(rig.controller.close())


def user(text: str) -> list[Any]:
    return [{"role": "user", "content": text, "timestamp": 0}]


async def seed_history(rig: ScreenRig, count: int, *, call_at: int | None = None) -> None:
    """Append ``count`` user entries to the main conversation, in commits of 1,000.

    With ``call_at``, the entry at that position is an assistant tool call followed
    by its result (two entries, so the history holds ``count + 1``).
    """
    root = rig.app.root.id
    for start in range(0, count, 1000):

        def append(tx: Tx, start: int = start) -> None:
            for n in range(start, min(count, start + 1000)):
                if n == call_at:
                    tx.append(root, "pi.assistant", model=[_call_message("c1")])
                    tx.append(
                        root, "pi.tool-result", model=[_result("c1")], data={"diagnostics": []}
                    )
                else:
                    tx.append(root, "pi.user", model=user(f"message {n}"))

        await within(rig.app.root.commit(append))


def _call_message(call_id: str) -> dict[str, Any]:
    block = {"type": "tool_call", "id": call_id, "name": "bash", "arguments": {"command": "ls"}}
    return {"role": "assistant", "content": [block], "stop_reason": "toolUse", "timestamp": 0}


def _result(call_id: str) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "tool_call_id": call_id,
        "tool_name": "bash",
        "content": [{"type": "text", "text": "README.md\n"}],
        "is_error": False,
        "details": {"exit_code": 0},
        "timestamp": 0,
    }
