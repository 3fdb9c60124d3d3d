"""The trust prompt: project settings that widen powers wait for the user's y or n (issue 13).

Over a static model and a recording controller: the modal shows the question and
each widening key with its value as plain text; ``y`` answers trusted, ``n`` and
Esc not trusted, each naming the content it was about; ``y`` and ``n`` count only
once the prompt has settled (a ``y`` typed the instant it appears trusts
nothing), Esc always; a newer content replaces
the question; the screen asks the controller to re-read the settings while it
runs. Over a real session (faux model, real tools): the model writes
``.pidurable/settings.json`` itself, the prompt appears, its write outside the
workspace is refused meanwhile, and only the user's ``y`` makes the key apply.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot

from pi_durable_tui.app import TrustQuestion
from pi_durable_tui.app.files import TRUST_NAME, home
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._prompt_keys import SETTLE
from pi_durable_tui.tui._trust_prompt import SETTLING_HINT, TrustScreen
from tests.app.screen_support import ScreenFactory, call, say
from tests.tui.conftest import FakeClock, prompt_settled, screen_name, settle
from tests.tui.conftest import prompt_text as shown_text
from tests.tui.test_approval_prompt import armed, ctrl_c_hints_exit
from tests.tui.test_real_harness import Run, notices, pidurable, type_line, until

__all__ = ["pidurable"]  # the real-session fixture, shared with test_real_harness

QUESTION = TrustQuestion(
    "d1" * 32,
    "This project's settings (/p/.pidurable/settings.json) allow allow_outside_cwd = true, "
    'env_allow = ["[b]*[/b]"]: trust them?',
    (("allow_outside_cwd", "true"), ("env_allow", '["[b]*[/b]"]')),
    "This project's settings (/p/.pidurable/settings.json) allow:",
)


def prompt_text(app: PidurableApp) -> str:
    """Everything the trust prompt shows, as plain text."""
    return shown_text(app, TrustScreen)


async def asked(
    pilot: Pilot[None], model: StaticScreenModel, question: TrustQuestion, clock: FakeClock
) -> None:
    """Show the question and let the prompt settle: ``y`` and ``n`` count."""
    model.set(trust_question=question)
    await settle(pilot)
    assert type(pilot.app.screen).__name__ == "TrustScreen"
    clock.advance(SETTLE)
    app = pilot.app
    assert isinstance(app, PidurableApp)
    await until(pilot, lambda: SETTLING_HINT not in prompt_text(app), "the keys armed")


async def settled(pilot: Pilot[None]) -> None:
    """Wait (on the real clock) until the trust prompt is up and takes ``y`` and ``n``."""
    await prompt_settled(pilot, TrustScreen, SETTLING_HINT)


@pytest.mark.parametrize(("key", "trusted"), [("y", True), ("n", False), ("escape", False)])
async def test_the_prompt_shows_the_keys_and_values_and_answers_with_the_key_pressed(
    app: PidurableApp,
    model: StaticScreenModel,
    controller: RecordingController,
    clock: FakeClock,
    key: str,
    trusted: bool,
) -> None:
    async with app.run_test() as pilot:
        await asked(pilot, model, QUESTION, clock)
        shown = prompt_text(app)
        assert "This project's settings (/p/.pidurable/settings.json) allow:" in " ".join(
            shown.split()
        )
        assert "allow_outside_cwd = true" in shown
        assert "Trust them?" in shown
        assert 'env_allow = ["[b]*[/b]"]' in shown  # plain text: no markup is applied
        assert "y trust them" in shown

        await pilot.press(key)
        await settle(pilot)

        assert controller.called("answer_trust") == [(QUESTION.id, trusted)]
        assert screen_name(app) != "TrustScreen"


async def test_a_newer_content_replaces_the_question_and_only_its_answer_is_sent(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController, clock: FakeClock
) -> None:
    newer = TrustQuestion("e2" * 32, "This project's settings allow env_allow: trust them?")
    async with app.run_test() as pilot:
        await asked(pilot, model, QUESTION, clock)
        await asked(pilot, model, newer, clock)
        assert "env_allow: trust them?" in prompt_text(app)

        await pilot.press("y")
        await settle(pilot)

        assert controller.called("answer_trust") == [(newer.id, True)]
        assert screen_name(app) != "TrustScreen"


async def test_a_y_typed_the_instant_the_prompt_appears_trusts_nothing(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        model.set(trust_question=QUESTION)
        app.post_message(events.Key("y", "y"))  # in the same read as the question
        await settle(pilot)
        assert screen_name(app) == "TrustScreen"
        assert controller.called("answer_trust") == []
        clock.advance(SETTLE)
        await pilot.press("n")
        await settle(pilot)
        assert controller.called("answer_trust") == [(QUESTION.id, False)]


async def test_ctrl_c_over_the_question_answers_nothing_and_leaves_the_editors_draft(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        app.editor.text = "my draft"
        await asked(pilot, model, QUESTION, clock)
        await ctrl_c_hints_exit(pilot, "my draft")
        assert controller.called("answer_trust") == []
        clock.advance(2.0)  # past the double press
        await pilot.press("y")
        await settle(pilot)
        assert controller.called("answer_trust") == [(QUESTION.id, True)]
        assert app.editor.text == "my draft"
        assert app.is_running


async def test_the_screen_asks_the_controller_to_reread_the_settings_while_it_runs(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await until(pilot, lambda: controller.settings_refreshes > 0, "a settings re-read")


def project_settings(rig_workdir: Path) -> Path:
    return rig_workdir / ".pidurable" / "settings.json"


@pytest.mark.parametrize(("key", "trusted"), [("y", True), ("n", False)])
async def test_settings_the_model_wrote_apply_only_after_the_users_y(
    open_screen: ScreenFactory, pidurable: Run, tmp_path: Path, key: str, trusted: bool
) -> None:
    outside = tmp_path / "outside.txt"
    grant = json.dumps({"allow_outside_cwd": True})
    rig = await open_screen(
        call("write", path=".pidurable/settings.json", content=grant),
        call("write", path=str(outside), content="escaped\n"),
        say("tried"),
    )
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "widen your powers")
        # pidurable's own settings file is protected: its write waits for the user
        # in every mode, and the user lets it through here.
        await armed(pilot)
        await pilot.press("y")
        await settled(pilot)
        assert "allow_outside_cwd = true" in prompt_text(app)
        await until(pilot, lambda: "tried" in rig.texts("assistant"), "the end of the turn")
        assert not outside.exists()  # refused while the question waits
        refusal = rig.card("write").tool
        assert refusal is not None
        assert "Only the user can allow changes outside it" in refusal.error

        await pilot.press(key)
        await until(pilot, lambda: screen_name(app) != "TrustScreen", "the prompt closed")
        await until(pilot, lambda: "trusted" in notices(app).lower(), "the answer's notice")

        assert rig.app.settings.current().allow_outside_cwd is trusted
        trust_file = home() / TRUST_NAME
        remembered = (
            trust_file.exists()
            and os.path.realpath(rig.workdir) in json.loads(trust_file.read_text())["projects"]
        )
        assert remembered is trusted
        assert project_settings(rig.workdir).read_text() == grant
