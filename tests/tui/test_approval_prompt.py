"""The approval prompt: a tool call that waits for the user's decision (issue 13).

Over a static model, a recording controller and a clock that moves when told:
the modal shows the tool, its whole command and why it waits; once settled,
``y``, ``a`` and ``p`` decide once, for the session, for the project, and Esc
aborts the turn; ``n`` opens a message line whose text (``y`` and all) goes
with the denial; a protected path offers no ``p``. Keys typed the instant it
appears (in the same burst as the editor's) are never a choice: they land in
its message line; ``m`` opens that line, Enter sends it as a steer and
Ctrl+F as a follow-up while the decision still waits; the editor's text stays
untouched, and text left in the line goes to the editor.
Over a real session (faux model, real ``bash``, the default ``auto-edit``
mode): the command waits, nothing ran; ``y`` runs it once; ``n`` sends the
refusal to the model, with the user's message; ``a`` lets the same command run again without asking.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import Input

from pi_durable_tui.app import ApprovalQuestion, PermissionChoices
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._approval_prompt import SETTLING_HINT, ApprovalScreen
from pi_durable_tui.tui._prompt_keys import SETTLE, PromptScreen
from tests.app.screen_support import ScreenFactory, ScreenRig, call, say
from tests.tui.conftest import FakeClock, prompt_settled, running, screen_name, settle
from tests.tui.conftest import prompt_text as shown_text
from tests.tui.test_real_harness import Run, notices, pidurable, type_line, until

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
    return shown_text(app, ApprovalScreen)


async def shown(pilot: Pilot[None], model: StaticScreenModel, question: ApprovalQuestion) -> None:
    """Show the prompt (painted, not yet settled)."""
    model.set(approval=question)
    await settle(pilot)
    assert type(pilot.app.screen).__name__ == "ApprovalScreen"


async def asked(
    pilot: Pilot[None], model: StaticScreenModel, question: ApprovalQuestion, clock: FakeClock
) -> None:
    """Show the prompt and let it settle: its choice keys count."""
    await shown(pilot, model, question)
    clock.advance(SETTLE)
    app = pilot.app
    assert isinstance(app, PidurableApp)
    await until(pilot, lambda: SETTLING_HINT not in prompt_text(app), "the keys armed")


def burst(app: PidurableApp, keys: str) -> None:
    """Keys that reach the app in one read, as a fast typist's or tmux's do."""
    for key in keys:
        app.post_message(events.Key("space" if key == " " else key, key))


def line(app: PidurableApp) -> Input:
    return app.screen.query_one("#approval-message", Input)


@pytest.mark.parametrize(
    ("key", "choice"),
    [("y", "once"), ("a", "session"), ("p", "project")],
)
async def test_the_prompt_shows_the_whole_command_and_decides_with_the_key_pressed(
    app: PidurableApp,
    model: StaticScreenModel,
    controller: RecordingController,
    clock: FakeClock,
    key: str,
    choice: str,
) -> None:
    async with app.run_test() as pilot:
        await asked(pilot, model, QUESTION, clock)
        shown = prompt_text(app)
        assert "Allow bash?" in shown
        assert "make test && [b]rm[/b] -rf build" in shown  # plain text, never markup
        assert "bash in auto-edit mode" in shown
        await pilot.press(key)
        await settle(pilot)
        assert controller.called("decide") == [("call_1", choice, None)]
        assert screen_name(app) != "ApprovalScreen"


async def test_a_protected_path_offers_no_project_rule(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController, clock: FakeClock
) -> None:
    protected = ApprovalQuestion(
        "call_2", "write", ".pidurable/settings.json", "pidurable's own file", "auto", True, None
    )
    async with app.run_test() as pilot:
        await asked(pilot, model, protected, clock)
        assert " p " not in prompt_text(app)
        await pilot.press("p")
        clock.advance(SETTLE)
        await pilot.press("a")
        await settle(pilot)
        assert controller.called("decide") == []  # neither key means anything here
        clock.advance(SETTLE)
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
    clock: FakeClock,
    typed: str,
    message: str | None,
) -> None:
    async with app.run_test() as pilot:
        await asked(pilot, model, QUESTION, clock)
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


@pytest.mark.parametrize("opened", [False, True])
async def test_esc_aborts_the_turn_which_ends_the_wait_from_the_choices_or_the_line(
    app: PidurableApp,
    model: StaticScreenModel,
    controller: RecordingController,
    clock: FakeClock,
    opened: bool,
) -> None:
    async with app.run_test() as pilot:
        await asked(pilot, model, QUESTION, clock)
        if opened:
            await pilot.press("n", "a")
        await pilot.press("escape")
        await settle(pilot)
        assert controller.called("abort") == [()]
        assert controller.called("decide") == []  # the abort answers the call
        assert screen_name(app) != "ApprovalScreen"


async def test_a_y_typed_the_instant_the_prompt_appears_is_text_in_its_line_not_a_choice(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        model.set(approval=QUESTION)
        burst(app, "yes")  # in the same read as the change that brings the prompt up
        await settle(pilot)
        assert screen_name(app) == "ApprovalScreen"
        assert line(app).value == "yes"
        assert controller.called("decide") == []
        # Once settled, Tab goes back to the choices and a y decides (once).
        clock.advance(SETTLE)
        await pilot.press("tab")
        clock.advance(SETTLE)
        await pilot.press("y")
        await settle(pilot)
        assert controller.called("decide") == [("call_1", "once", None)]
        assert app.editor.text == "yes"  # the unsent line is not lost


async def test_keys_typed_on_without_a_pause_never_decide(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        await shown(pilot, model, QUESTION)
        for key in "s", "a", "y":  # a typist's pauses inside a word, shorter than SETTLE
            clock.advance(SETTLE / 2)
            await pilot.press(key)
        await settle(pilot)
        assert controller.called("decide") == []
        assert line(app).value == "say"


async def test_a_prompt_waits_while_the_user_types_in_the_editor(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        await pilot.press("h", "e")
        model.set(approval=QUESTION)
        await pilot.press("y")  # typed on: still the editor's
        await settle(pilot)
        assert screen_name(app) != "ApprovalScreen"
        assert app.editor.text == "hey"
        clock.advance(SETTLE)
        await until(pilot, lambda: screen_name(app) == "ApprovalScreen", "the prompt")
        assert app.editor.text == "hey"


@pytest.mark.parametrize(("key", "follow_up"), [("enter", False), ("ctrl+f", True)])
async def test_a_message_typed_while_the_decision_waits_is_sent_and_the_decision_still_waits(
    app: PidurableApp,
    model: StaticScreenModel,
    controller: RecordingController,
    clock: FakeClock,
    key: str,
    follow_up: bool,
) -> None:
    async with app.run_test() as pilot:
        app.editor.text = "my draft"
        await asked(pilot, model, QUESTION, clock)
        await pilot.press("m")
        assert "Enter steers the agent" in prompt_text(app)
        burst(app, "use make")
        await pilot.press(key)
        await settle(pilot)
        assert controller.called("submit") == [("use make", follow_up)]
        assert controller.called("decide") == []
        assert screen_name(app) == "ApprovalScreen"  # the decision still waits
        assert app.editor.text == "my draft"  # untouched
        clock.advance(SETTLE)
        await pilot.press("y")
        await settle(pilot)
        assert controller.called("decide") == [("call_1", "once", None)]


async def test_a_paste_goes_into_the_line_and_never_decides(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        await asked(pilot, model, QUESTION, clock)
        app.post_message(events.Paste("y\nyes"))
        await settle(pilot)
        assert line(app).value == "y yes"
        assert controller.called("decide") == []


EXIT_HINT = "Press Ctrl+C again to exit."


def prompt_notices(app: PidurableApp) -> list[str]:
    """The notices the prompt on top shows at its bottom (the main bar is behind it)."""
    screen = app.screen
    assert isinstance(screen, PromptScreen)
    return [notice.text for notice in screen.notice_bar.shown_notices]


async def ctrl_c_hints_exit(pilot: Pilot[None], draft: str) -> None:
    """Ctrl+C over the prompt on top, its line empty: the exit hint, shown on the prompt.

    The prompt stays up and the editor behind it keeps ``draft``.
    """
    app = pilot.app
    assert isinstance(app, PidurableApp)
    kind = type(app.screen)
    await pilot.press("ctrl+c")
    await settle(pilot)
    assert EXIT_HINT in prompt_notices(app)  # the main bar is behind the prompt
    assert type(app.screen) is kind  # still asked
    assert app.editor.text == draft


@pytest.mark.parametrize("shut", [False, True])
async def test_ctrl_c_over_the_prompt_clears_its_message_line_and_never_the_editors_draft(
    app: PidurableApp,
    model: StaticScreenModel,
    controller: RecordingController,
    clock: FakeClock,
    shut: bool,
) -> None:
    async with app.run_test() as pilot:
        app.editor.text = "my draft"
        await asked(pilot, model, QUESTION, clock)
        await pilot.press("n")
        burst(app, "not that")
        if shut:
            await pilot.press("tab")  # back to the choices: the line keeps its text
        await settle(pilot)
        assert line(app).value == "not that"
        await pilot.press("ctrl+c")
        await settle(pilot)
        assert line(app).value == ""
        assert EXIT_HINT not in prompt_notices(app)  # something was cleared: no hint
        assert screen_name(app) == "ApprovalScreen"
        assert app.editor.text == "my draft"
        assert controller.called("decide") == []
        clock.advance(2.0)  # past the double press
        if not shut:
            await pilot.press("tab")
        clock.advance(SETTLE)
        await pilot.press("y")
        await settle(pilot)
        assert controller.called("decide") == [("call_1", "once", None)]
        assert app.editor.text == "my draft"  # nothing of the cleared line joined it
        assert running(app)


async def test_ctrl_c_over_the_prompt_with_an_empty_line_shows_the_exit_hint_and_twice_exits(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        app.editor.text = "my draft"
        await asked(pilot, model, QUESTION, clock)
        await ctrl_c_hints_exit(pilot, "my draft")
        clock.advance(0.5)
        await pilot.press("ctrl+c")
        await settle(pilot)
        assert not running(app)
    assert controller.called("decide") == []  # exiting decides nothing: the call still waits
    assert controller.called("close") == [()]


async def armed(pilot: Pilot[None]) -> None:
    """Wait (on the real clock) until the approval prompt is up and takes choices."""
    await prompt_settled(pilot, ApprovalScreen, SETTLING_HINT)


DEFAULT = PermissionChoices()
"""The product's default: ``auto-edit``, a command that is not read-only waits."""


async def made_waits(open_screen: ScreenFactory) -> tuple[ScreenRig, Path]:
    """A session whose model calls ``bash`` to append to ``made.txt``, then says done."""
    rig = await open_screen(
        call("bash", command="echo ran >> made.txt"), say("done"), permissions=DEFAULT
    )
    return rig, Path(rig.workdir) / "made.txt"


async def test_a_command_waits_for_the_user_and_y_runs_it_once(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig, made = await made_waits(open_screen)
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "make it")
        await armed(pilot)
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
    async with pidurable(rig) as (_app, pilot):
        await type_line(pilot, "make it")
        await armed(pilot)
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
        await armed(pilot)
        assert "a allow bash(touch made.txt) in this session" in prompt_text(app)
        await pilot.press("a")
        # The second call is not asked about: the turn ends without another prompt.
        await until(pilot, lambda: "twice" in rig.texts("assistant"), "the end of the turn")
        assert [card.tool.status for card in rig.blocks("tool") if card.tool] == ["done", "done"]
        assert (Path(rig.workdir) / "made.txt").exists()


async def test_a_steer_typed_while_a_call_waits_reaches_the_model_and_the_call_runs_after(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig, made = await made_waits(open_screen)
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "make it")
        await armed(pilot)
        await pilot.press("m", *"also run lint", "enter")
        await until(pilot, lambda: "Sent as a steer" in prompt_text(app), "the steer sent")
        assert screen_name(app) == "ApprovalScreen"  # the decision still waits
        assert not made.exists()
        await armed(pilot)
        await pilot.press("y")
        await until(pilot, lambda: "done" in rig.texts("assistant"), "the end of the turn")
        assert made.read_text() == "ran\n"
        # The model's request after the call holds the steer, as a user message.
        assert "also run lint" in repr(rig.faux.requests[-1].context)


async def test_ctrl_c_while_a_real_call_waits_keeps_the_draft_and_the_call_runs_once_on_y(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig, made = await made_waits(open_screen)
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "make it")
        app.editor.text = "my next prompt"  # drafted while the agent works
        await armed(pilot)
        await pilot.press("ctrl+c")
        await until(pilot, lambda: EXIT_HINT in notices(app), "the exit hint")
        assert screen_name(app) == "ApprovalScreen"
        assert app.editor.text == "my next prompt"
        assert not made.exists()
        await armed(pilot)  # the Ctrl+C was a key: the choices settle again
        await pilot.press("y")
        await until(pilot, lambda: "done" in rig.texts("assistant"), "the end of the turn")
        assert made.read_text() == "ran\n"
        assert app.editor.text == "my next prompt"
