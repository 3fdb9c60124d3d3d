"""Every screen over the main one shows the app's notices, on the main bar's clock.

The help, a picker and the jobs question at exit cover the main screen and its
notice bar; each shows the notices at its own bottom: one raised while it is up
appears at once, a notice expires ``LIFETIME_S`` after any bar first saw it
(not again on each screen), and closing the screen leaves the main bar showing
what still lives. A screen that comes back on top shows what arrived while
another covered it. Over a static model, a recording controller and a clock
that moves when told.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Awaitable, Callable

import pytest
from textual.pilot import Pilot
from textual.screen import ModalScreen

import pi_durable_tui.tui
from pi_durable_tui.app import ConversationInfo
from pi_durable_tui.bench.tui_model import RecordingController
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._notices import LIFETIME_S
from pi_durable_tui.tui._overlay import OverlayScreen
from tests.tui.conftest import FakeClock, screen_name, settle, shown, text_of

EXIT_HINT = "Press Ctrl+C again to exit."
FAILURE = "submit failed: the session store cannot be written"

Opener = Callable[[Pilot[None], RecordingController], Awaitable[None]]


async def open_help(pilot: Pilot[None], controller: RecordingController) -> None:
    await pilot.press("f1")


def app_of(pilot: Pilot[None]) -> PidurableApp:
    app = pilot.app
    assert isinstance(app, PidurableApp)
    return app


async def open_picker(pilot: Pilot[None], controller: RecordingController) -> None:
    controller.conversation_list = [ConversationInfo(1, "main", "x")]
    app_of(pilot).editor.text = "/agents"
    await pilot.press("end", "escape", "enter")


async def open_jobs_question(pilot: Pilot[None], controller: RecordingController) -> None:
    controller.jobs_running = 2
    await pilot.press("ctrl+d")


SCREENS = {
    "HelpScreen": open_help,
    "PickerScreen": open_picker,
    "JobsExitScreen": open_jobs_question,
}


@pytest.fixture(params=sorted(SCREENS))
def kind(request: pytest.FixtureRequest) -> str:
    """The name of the screen over the main one that a test opens."""
    name: str = request.param
    return name


async def opened(pilot: Pilot[None], controller: RecordingController, kind: str) -> None:
    """Open the ``kind`` screen over the main one."""
    await SCREENS[kind](pilot, controller)
    await settle(pilot)
    assert screen_name(app_of(pilot)) == kind


async def closed(pilot: Pilot[None]) -> None:
    """Close the screen on top (Esc closes each of them without a choice)."""
    await pilot.press("escape")
    await settle(pilot)
    assert screen_name(app_of(pilot)) == "MainScreen"


def top_bar_texts(app: PidurableApp) -> list[str]:
    """The notices the screen on top shows at its bottom."""
    screen = app.screen
    assert isinstance(screen, OverlayScreen)
    return [notice.text for notice in screen.notice_bar.shown_notices]


def main_bar_texts(app: PidurableApp) -> list[str]:
    return [notice.text for notice in app.notice_bar.shown_notices]


def painted_on_top(app: PidurableApp) -> str:
    """What the top screen's bar paints, if it is displayed and has room on the screen."""
    screen = app.screen
    assert isinstance(screen, OverlayScreen)
    bar = screen.notice_bar
    if not shown(bar) or bar.region.height == 0 or not screen.region.contains_region(bar.region):
        return ""
    return " ".join(text_of(bar.render(), width=bar.region.width).split())


async def test_a_notice_raised_while_a_screen_is_up_is_painted_on_it(
    app: PidurableApp, controller: RecordingController, kind: str
) -> None:
    async with app.run_test() as pilot:
        await opened(pilot, controller, kind)
        assert painted_on_top(app) == ""  # no notice yet: the bar takes no room
        app.notice("error", FAILURE)
        assert top_bar_texts(app) == [FAILURE]  # at once, not at the next tick
        await pilot.pause()
        assert painted_on_top(app) == FAILURE
        assert screen_name(app) == kind  # the screen stays up


async def test_ctrl_c_over_a_screen_shows_the_exit_hint_on_it(
    app: PidurableApp, controller: RecordingController, kind: str
) -> None:
    async with app.run_test() as pilot:
        await opened(pilot, controller, kind)
        app.editor.text = "my draft"  # behind the screen
        await pilot.press("ctrl+c")
        await settle(pilot)
        assert painted_on_top(app) == EXIT_HINT
        assert screen_name(app) == kind
        assert app.editor.text == "my draft"  # the hidden draft is never cleared


async def test_a_notice_seen_before_the_screen_opened_expires_on_it_on_the_first_clock(
    app: PidurableApp, controller: RecordingController, clock: FakeClock, kind: str
) -> None:
    async with app.run_test() as pilot:
        app.notice("error", FAILURE)
        clock.advance(LIFETIME_S - 2)
        await opened(pilot, controller, kind)
        assert painted_on_top(app) == FAILURE  # shown as the screen appears
        clock.advance(2)  # LIFETIME_S since the main bar saw it, 2 s since the screen did
        assert top_bar_texts(app) == []
        assert main_bar_texts(app) == []


async def test_a_notice_raised_over_a_screen_is_not_timed_again_on_the_main_bar(
    app: PidurableApp, controller: RecordingController, clock: FakeClock, kind: str
) -> None:
    async with app.run_test() as pilot:
        await opened(pilot, controller, kind)
        app.notice("error", FAILURE)
        clock.advance(LIFETIME_S - 1)
        assert top_bar_texts(app) == [FAILURE]
        await closed(pilot)
        assert main_bar_texts(app) == [FAILURE]
        clock.advance(1)
        assert main_bar_texts(app) == []


async def test_closing_a_screen_leaves_the_main_bar_showing_a_notice_still_alive(
    app: PidurableApp, controller: RecordingController, clock: FakeClock, kind: str
) -> None:
    async with app.run_test() as pilot:
        await opened(pilot, controller, kind)
        app.notice("warning", "Theme 'solarized' is not available; keeping 'dark'.")
        clock.advance(3)
        await closed(pilot)
        await pilot.pause()
        painted = " ".join(text_of(app.notice_bar.render(), width=98).split())
        assert painted == "Theme 'solarized' is not available; keeping 'dark'."
        assert shown(app.notice_bar)


async def test_a_screen_back_on_top_shows_the_notices_raised_while_another_covered_it(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await opened(pilot, controller, "PickerScreen")
        await pilot.press("f1")
        await settle(pilot)
        assert screen_name(app) == "HelpScreen"
        app.notice("error", FAILURE)
        assert top_bar_texts(app) == [FAILURE]
        await pilot.press("escape")
        await settle(pilot)
        assert screen_name(app) == "PickerScreen"
        assert painted_on_top(app) == FAILURE


def test_every_modal_screen_of_the_tui_is_an_overlay_screen() -> None:
    # A modal that is not one would hide the notices again while it is up.
    modals = []
    for info in pkgutil.iter_modules(pi_durable_tui.tui.__path__, "pi_durable_tui.tui."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, ModalScreen) and cls.__module__ == module.__name__:
                modals.append(cls)
    assert {cls.__name__ for cls in modals} >= set(SCREENS) | {"ApprovalScreen", "TrustScreen"}
    assert [cls for cls in modals if not issubclass(cls, OverlayScreen)] == []
