"""SVG snapshots of the main screens in the dark and light themes (pytest-textual-snapshot).

Update after an intended change of the look with ``pytest tests/tui/test_snapshots.py
--snapshot-update`` and review the SVGs under ``__snapshots__``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from pi_durable_tui.app import Block, Footer, QueueItem, TaskNode, ThinkingPart, ToolCard
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel, sample_blocks
from pi_durable_tui.tui import PidurableApp
from tests.tui.conftest import FakeClock

SnapCompare = Callable[..., bool]


def working_session(theme: str) -> PidurableApp:
    """A session mid-turn: history, a streamed answer, a running command, tasks and a queue."""
    blocks = [
        *sample_blocks(4),
        Block(
            "e10",
            "assistant",
            10,
            text="The test fails because `check` compares the wrong way. Running the suite:",
            thinking=(ThinkingPart("Check the comparison first, then run the tests."),),
        ),
        Block(
            "e10/c1",
            "tool",
            10,
            tool=ToolCard(
                "c1",
                "bash",
                "running",
                command="pytest -q",
                output="\n".join(f"tests/test_{n}.py ." for n in range(8)),
            ),
        ),
    ]
    footer = Footer(
        tokens_in=48_200,
        tokens_out=3_100,
        cache_read=120_000,
        cost=0.0842,
        context_tokens=61_000,
        context_window=200_000,
        cwd="~/work/checker",
        model="anthropic/claude-x",
        thinking_level="medium",
    )
    model = StaticScreenModel(blocks, footer=footer)
    model.tasks = [
        TaskNode(
            1,
            "pi.generation",
            "turn",
            "waiting",
            elapsed_s=42.0,
            children=(TaskNode(2, "pi.tool", "bash: pytest -q", "running", "exec", 7.0),),
        ),
        TaskNode(
            5,
            "pi.tool",
            "subagent 12",
            "running",
            elapsed_s=95.0,
            background=True,
            subagent_conversation_id=12,
        ),
    ]
    model.queue = [QueueItem(31, "steer", "Also run ruff afterwards.")]
    model.status = "Running bash... (esc to abort)"
    model.busy = True
    return PidurableApp(model, RecordingController(model), theme=theme, clock=FakeClock())


def continued_session(theme: str) -> PidurableApp:
    """A session reopened with ``--continue``: an interrupted command and the recovery report."""
    blocks = [
        *sample_blocks(4),
        Block(
            "e10/c1",
            "tool",
            10,
            tool=ToolCard(
                "c1",
                "bash",
                "interrupted",
                command="./migrate.sh --apply",
                output="step 1/4 done\nstep 2/4 done",
                error="Tool bash was interrupted and may have partially run",
            ),
        ),
        Block(
            "resumed/1",
            "resumed",
            None,
            text="\n".join(
                [
                    "The turn in the main conversation resumes (task 9, phase tools).",
                    "bash `./migrate.sh --apply` was cut by the crash while running; it is not "
                    "replay-safe, so it does not run again: the model gets it as interrupted, "
                    "with the output it had committed.",
                    "Background task 14 (subagent: review the README) is still running.",
                ]
            ),
        ),
    ]
    model = StaticScreenModel(blocks, footer=Footer(cwd="~/work/checker", model="faux/faux-1"))
    model.tasks = [
        TaskNode(
            14,
            "pi.tool",
            "subagent 15",
            "running",
            elapsed_s=12.0,
            background=True,
            subagent_conversation_id=15,
        ),
    ]
    return PidurableApp(model, RecordingController(model), theme=theme, clock=FakeClock())


async def _steady(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, PidurableApp)
    app.editor.cursor_blink = False
    await pilot.pause()


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_main_screen_while_the_agent_works(snap_compare: SnapCompare, theme: str) -> None:
    assert snap_compare(working_session(theme), terminal_size=(100, 36), run_before=_steady)


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_help_screen(snap_compare: SnapCompare, theme: str) -> None:
    assert snap_compare(
        working_session(theme), terminal_size=(100, 36), press=["f1"], run_before=_steady
    )


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_a_continued_session_with_its_recovery_report(
    snap_compare: SnapCompare, theme: str
) -> None:
    assert snap_compare(continued_session(theme), terminal_size=(100, 36), run_before=_steady)
