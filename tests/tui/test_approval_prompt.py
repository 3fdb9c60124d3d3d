"""The approval prompt: a tool call that waits for the user's decision (issue 13).

Over a static model and a recording controller: the panel above the editor shows the tool, its
whole command and why it waits; ``y``, ``a``, ``p`` and Esc decide once, for
the session, for the project and deny; ``n`` opens a message line whose text
(``y`` and all) goes with the denial; a protected path offers no ``p``.
Over a real session (faux model, real ``bash``, the default ``auto-edit``
mode): the command waits, nothing ran; ``y`` runs it once; ``n`` sends the
refusal to the model, with the user's message; ``a`` lets the same command run again without asking.
Typing is never lost: keys typed while the prompt is up reach the editor, a ``y``
typed into a non-empty editor does not approve, F3 moves between the two, and
Enter sends a steer while the call still waits.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import Static

from pi_durable_tui.app import ApprovalQuestion, PermissionChoices
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._approval_prompt import ApprovalPanel
from tests.app.screen_support import ScreenFactory, ScreenRig, call, say
from tests.tui.conftest import settle, text_of
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
    panel = app.query_one(ApprovalPanel)
    return "\n".join(text_of(static.content) for static in panel.query(Static))


def asking(app: PidurableApp) -> bool:
    """Whether the approval prompt is up."""
    return app.query_one(ApprovalPanel).has_class("-asking")


async def asked(pilot: Pilot[None], model: StaticScreenModel, question: ApprovalQuestion) -> None:
    model.set(approval=question)
    await settle(pilot)
    assert asking(pilot.app)  # type: ignore[arg-type]


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
        assert not asking(app)


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
        assert app.editor.text == "pa"  # so they are text, in the editor
        await pilot.press("f3", "y")
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
        assert not asking(app)


async def test_esc_on_the_message_line_denies_without_a_message(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await asked(pilot, model, QUESTION)
        await pilot.press("n", "a", "escape")
        await settle(pilot)
        assert controller.called("decide") == [("call_1", "deny", None)]


async def test_typing_while_the_prompt_has_the_focus_reaches_the_editor(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await asked(pilot, model, QUESTION)
        assert app.approval_panel.has_focus  # an empty editor: the prompt answers
        await pilot.press("w", "a", "i", "t")  # the first key is not a decision key
        await settle(pilot)
        assert app.editor.text == "wait"  # every key, the a included
        assert app.editor.has_focus
        assert controller.called("decide") == []
        assert asking(app)  # the call still waits
        assert "F3 to answer" in prompt_text(app)
        await pilot.press("f3")
        assert app.approval_panel.has_focus
        app.post_message(events.Paste(" now y"))  # a paste is text for the editor too
        await settle(pilot)
        assert app.editor.text == "wait now y"
        assert controller.called("decide") == []


async def test_y_typed_into_a_non_empty_editor_does_not_approve(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        app.editor.text = "stop, "
        await asked(pilot, model, QUESTION)
        assert app.editor.has_focus  # mid-typing: the prompt does not take the focus
        assert "F3 to answer" in prompt_text(app)
        await pilot.press("end", "y", "a", "p", "n")
        await settle(pilot)
        assert app.editor.text == "stop, yapn"
        assert controller.called("decide") == []


async def test_f3_gives_the_prompt_the_focus_and_it_answers_y_and_n(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    second = ApprovalQuestion(
        "call_2", "bash", "make deploy", "bash in auto-edit mode", "auto-edit"
    )
    async with app.run_test() as pilot:
        app.editor.text = "half a steer"
        await asked(pilot, model, QUESTION)
        await pilot.press("f3")
        await settle(pilot)
        assert app.approval_panel.has_focus
        assert "y allow once" in prompt_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert controller.called("decide") == [("call_1", "once", None)]
        assert app.editor.has_focus
        assert app.editor.text == "half a steer"  # kept
        await asked(pilot, model, second)
        await pilot.press("f3", "n", "enter")
        await settle(pilot)
        assert controller.called("decide")[-1] == ("call_2", "deny", None)
        assert not asking(app)


DEFAULT = PermissionChoices()
"""The product's default: ``auto-edit``, a command that is not read-only waits."""

ECHO = "echo ran >> made.txt"
"""The command the real sessions wait on: each run appends one line to ``made.txt``."""


async def echo_session(open_screen: ScreenFactory, answer: str) -> ScreenRig:
    """A real session whose model runs ``ECHO`` (which waits), then says ``answer``."""
    return await open_screen(call("bash", command=ECHO), say(answer), permissions=DEFAULT)


async def ask_in_session(app: PidurableApp, pilot: Pilot[None], line: str = "make it") -> None:
    """Send ``line`` and wait for the approval prompt of the call it leads to."""
    await type_line(pilot, line)
    await until(pilot, lambda: asking(app), "the approval prompt")


async def test_a_command_waits_for_the_user_and_y_runs_it_once(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await echo_session(open_screen, "done")
    made = Path(rig.workdir) / "made.txt"
    async with pidurable(rig) as (app, pilot):
        await ask_in_session(app, pilot)
        assert ECHO in prompt_text(app)
        assert not made.exists()  # nothing runs before the decision
        await pilot.press("y")
        await until(pilot, lambda: "done" in rig.texts("assistant"), "the end of the turn")
        assert made.read_text() == "ran\n"  # once


async def test_n_sends_the_refusal_with_the_users_message_to_the_model_and_nothing_runs(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await echo_session(open_screen, "ok, not then")
    async with pidurable(rig) as (app, pilot):
        await ask_in_session(app, pilot)
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
        await ask_in_session(app, pilot, "make it twice")
        assert "a allow bash(touch made.txt) in this session" in prompt_text(app)
        await pilot.press("a")
        # The second call is not asked about: the turn ends without another prompt.
        await until(pilot, lambda: "twice" in rig.texts("assistant"), "the end of the turn")
        assert [card.tool.status for card in rig.blocks("tool") if card.tool] == ["done", "done"]
        assert (Path(rig.workdir) / "made.txt").exists()


async def test_enter_sends_a_steer_while_the_approval_still_waits(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await echo_session(open_screen, "done")
    made = Path(rig.workdir) / "made.txt"
    async with pidurable(rig) as (app, pilot):
        await ask_in_session(app, pilot)
        assert app.approval_panel.has_focus
        await pilot.press(*"hurry")  # real keys: the h moves the focus to the editor
        assert app.editor.text == "hurry"
        await pilot.press("enter")
        await until(pilot, lambda: bool(app.model.queue), "the steer queued")
        assert asking(app)  # still waiting
        assert not made.exists()  # nothing ran
        assert app.editor.text == ""
        await pilot.press("f3", "y")
        await until(pilot, lambda: "done" in rig.texts("assistant"), "the end of the turn")
        assert made.read_text() == "ran\n"
        assert "hurry" in repr(rig.faux.requests[-1].context)
