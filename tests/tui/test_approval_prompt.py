"""The approval prompt: a tool call that waits for the user's decision (issue 13).

Over a static model and a recording controller: the modal shows the tool, its
whole command and why it waits; ``y``, ``a``, ``p`` and Esc decide once, for
the session, for the project and deny; ``n`` opens a message line whose text
(``y`` and all) goes with the denial; a protected path offers no ``p``.
Over a real session (faux model, real ``bash``, the default ``auto-edit``
mode): the command waits, nothing ran; ``y`` runs it once; ``n`` sends the
refusal to the model, with the user's message; ``a`` lets the same command run again without asking.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from pi_durable_tui.app import ApprovalQuestion, PermissionChoices
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._approval_prompt import ApprovalScreen
from tests.app.screen_support import ScreenFactory, call, say
from tests.tui.conftest import screen_name, settle, text_of
from tests.tui.test_real_harness import Run, pidurable, type_line, until

__all__ = ["pidurable"]  # the real-session fixture, shared with test_real_harness

QUESTION = ApprovalQuestion(
    call_id="call_1",
    tool="bash",
    argument="make test && [b]rm[/b] -rf build",
    reason="bash in auto-edit mode",
    mode="auto-edit",
    suggestion="bash(make test && [b]rm[/b] -rf build)",
)


def prompt_text(app: PidurableApp) -> str:
    """Everything the approval prompt shows, as plain text."""
    screen = app.screen
    assert isinstance(screen, ApprovalScreen)
    return "\n".join(text_of(static.content) for static in screen.query(Static))


async def asked(pilot: Pilot[None], model: StaticScreenModel, question: ApprovalQuestion) -> None:
    model.set(approval=question)
    await settle(pilot)
    assert type(pilot.app.screen).__name__ == "ApprovalScreen"


@pytest.mark.parametrize(
    ("key", "choice"),
    [("y", "once"), ("a", "session"), ("p", "project"), ("escape", "deny")],
)
async def test_the_prompt_shows_the_whole_command_and_decides_with_the_key_pressed(
    app: PidurableApp,
    model: StaticScreenModel,
    controller: RecordingController,
    key: str,
    choice: str,
) -> None:
    async with app.run_test() as pilot:
        await asked(pilot, model, QUESTION)
        shown = prompt_text(app)
        assert "Allow bash?" in shown
        assert "make test && [b]rm[/b] -rf build" in shown  # plain text, never markup
        assert "bash in auto-edit mode" in shown
        await pilot.press(key)
        await settle(pilot)
        assert controller.called("decide") == [("call_1", choice, None)]
        assert screen_name(app) != "ApprovalScreen"


async def test_a_protected_path_offers_no_project_rule(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    protected = ApprovalQuestion(
        "call_2", "write", ".pidurable/settings.json", "pidurable's own file", "auto", True, None
    )
    async with app.run_test() as pilot:
        await asked(pilot, model, protected)
        assert " p " not in prompt_text(app)
        await pilot.press("p")
        await pilot.press("a")
        await settle(pilot)
        assert controller.called("decide") == []  # neither key means anything here
        await pilot.press("y")
        await settle(pilot)
        assert controller.called("decide") == [("call_2", "once", None)]


@pytest.mark.parametrize(
    ("typed", "message"),
    [("yes, but run make clean first", "yes, but run make clean first"), ("", None)],
)
async def test_n_opens_a_message_line_whose_text_goes_with_the_denial(
    app: PidurableApp,
    model: StaticScreenModel,
    controller: RecordingController,
    typed: str,
    message: str | None,
) -> None:
    async with app.run_test() as pilot:
        await asked(pilot, model, QUESTION)
        await pilot.press("n")
        await settle(pilot)
        assert controller.called("decide") == []  # n alone decides nothing yet
        assert "Enter denies with this message" in prompt_text(app)
        for key in typed:
            await pilot.press("space" if key == " " else "comma" if key == "," else key)
        await settle(pilot)
        assert controller.called("decide") == []  # the y, a and p typed went into the line
        await pilot.press("enter")
        await settle(pilot)
        assert controller.called("decide") == [("call_1", "deny", message)]
        assert screen_name(app) != "ApprovalScreen"


async def test_esc_on_the_message_line_denies_without_a_message(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await asked(pilot, model, QUESTION)
        await pilot.press("n", "a", "escape")
        await settle(pilot)
        assert controller.called("decide") == [("call_1", "deny", None)]


DEFAULT = PermissionChoices()
"""The product's default: ``auto-edit``, a command that is not read-only waits."""


async def test_a_command_waits_for_the_user_and_y_runs_it_once(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(
        call("bash", command="echo ran >> made.txt"), say("done"), permissions=DEFAULT
    )
    made = Path(rig.workdir) / "made.txt"
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "make it")
        await until(pilot, lambda: screen_name(app) == "ApprovalScreen", "the approval prompt")
        assert "echo ran >> made.txt" in prompt_text(app)
        assert not made.exists()  # nothing runs before the decision
        await pilot.press("y")
        await until(pilot, lambda: "done" in rig.texts("assistant"), "the end of the turn")
        assert made.read_text() == "ran\n"  # once


async def test_n_sends_the_refusal_with_the_users_message_to_the_model_and_nothing_runs(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(
        call("bash", command="echo ran >> made.txt"), say("ok, not then"), permissions=DEFAULT
    )
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "make it")
        await until(pilot, lambda: screen_name(app) == "ApprovalScreen", "the approval prompt")
        await pilot.press("n", "c", "l", "e", "a", "n", "enter")
        await until(pilot, lambda: "ok, not then" in rig.texts("assistant"), "the end of the turn")
        card = rig.card("bash").tool
        assert card is not None
        assert card.error == "Not run: the user denied this call. The user said: clean"
        # The model's next request holds the refusal with the message.
        assert "The user said: clean" in repr(rig.faux.requests[-1].context)
        assert not (Path(rig.workdir) / "made.txt").exists()


async def test_a_allows_the_same_command_for_the_rest_of_the_session(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(
        call("bash", command="touch made.txt"),
        call("bash", command="touch made.txt"),
        say("twice"),
        permissions=DEFAULT,
    )
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "make it twice")
        await until(pilot, lambda: screen_name(app) == "ApprovalScreen", "the approval prompt")
        assert "a allow bash(touch made.txt) in this session" in prompt_text(app)
        await pilot.press("a")
        # The second call is not asked about: the turn ends without another prompt.
        await until(pilot, lambda: "twice" in rig.texts("assistant"), "the end of the turn")
        assert [card.tool.status for card in rig.blocks("tool") if card.tool] == ["done", "done"]
        assert (Path(rig.workdir) / "made.txt").exists()
