"""``OpeningSession``: the screen's model and controller while the session opens (issue 8).

The session's own pair is the static model and recording controller of the
screen tests; the opener is a coroutine the test releases when it wants the
session to be open.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from pi_durable_tui.app import (
    Controller,
    Footer,
    OpeningSession,
    ScreenModel,
    SessionNotOpened,
    ViewChange,
)
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel, sample_blocks
from tests.harness.harness_support import within


@dataclass
class Opener:
    """An opener that waits for ``release`` (or fails with ``error``) and records its fate."""

    model: StaticScreenModel = field(default_factory=lambda: StaticScreenModel(sample_blocks(3)))
    release: asyncio.Event = field(default_factory=asyncio.Event)
    error: BaseException | None = None
    runs: int = 0
    undone: bool = False
    failures: list[BaseException] = field(default_factory=list)
    handed: list[tuple[ScreenModel, Controller]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.model.set(status="Working... (esc to abort)", footer=Footer(model="faux/faux-1"))
        self.controller = RecordingController(self.model)

    async def __call__(self) -> tuple[ScreenModel, Controller]:
        self.runs += 1
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.undone = True  # what AgentApp.open's undo does: close what was opened
            raise
        if self.error is not None:
            raise self.error
        return self.model, self.controller


@pytest.fixture
def opener() -> Opener:
    return Opener()


@pytest.fixture
async def opening(opener: Opener) -> AsyncIterator[OpeningSession]:
    session = OpeningSession(
        "/work/project",
        opener,
        opener.failures.append,
        on_open=lambda model, controller: opener.handed.append((model, controller)),
    )
    yield session
    await within(session.close())


async def opened(opening: OpeningSession, opener: Opener) -> None:
    opening.start()
    opener.release.set()
    await within(opening.wait_opened())


async def test_while_opening_the_screen_shows_an_empty_transcript_and_says_so(
    opening: OpeningSession,
) -> None:
    assert opening.status == "Opening session..."
    assert (opening.blocks, opening.has_older, opening.busy) == ((), False, False)
    assert (opening.queue, opening.tasks, opening.notices) == ((), (), ())
    assert opening.footer.cwd == "/work/project"
    assert opening.block("e1") is None
    assert (opening.models(), opening.complete_path("sr"), opening.history()) == ([], [], ())


async def test_nothing_opens_before_start_and_start_twice_opens_once(
    opening: OpeningSession, opener: Opener
) -> None:
    await asyncio.sleep(0)
    assert opener.runs == 0
    opening.start()
    opening.start()
    opener.release.set()
    await within(opening.wait_opened())
    assert opener.runs == 1


async def test_once_open_the_sessions_own_pair_is_handed_over_once_and_nothing_is_forwarded(
    opening: OpeningSession, opener: Opener
) -> None:
    heard: list[ViewChange] = []
    opening.subscribe(heard.append)
    opener.controller.prompts = ["earlier prompt"]
    await opened(opening, opener)
    opener.model.push(ViewChange(footer=True))

    assert opening.opened
    assert opener.handed == [(opener.model, opener.controller)]
    # The screen talks to the pair it was handed; the opening shows "nothing yet".
    assert (opening.blocks, opening.status, opening.history()) == ((), "Opening session...", ())
    assert heard == []


async def test_a_prompt_sent_while_opening_is_submitted_once_the_session_is_open_in_order(
    opening: OpeningSession, opener: Opener
) -> None:
    opening.start()
    first = asyncio.ensure_future(opening.submit("typed early"))
    second = asyncio.ensure_future(opening.submit("and a follow-up", follow_up=True))
    await asyncio.sleep(0.01)
    assert opener.controller.calls == []

    opener.release.set()
    await within(asyncio.gather(first, second))

    assert opener.controller.called("submit") == [
        ("typed early", False),
        ("and a follow-up", True),
    ]


async def test_esc_withdraw_and_paging_while_opening_do_nothing_and_do_not_wait(
    opening: OpeningSession,
) -> None:
    opening.start()
    assert await within(opening.abort()) == []
    assert await within(opening.withdraw(3)) is None
    assert await within(opening.load_older(50)) == 0


async def test_a_failed_opening_is_reported_once_and_waiting_actions_end_with_a_clear_error(
    opening: OpeningSession, opener: Opener
) -> None:
    opener.error = OSError("the store is locked by process 4242")
    opening.start()
    waiting = asyncio.ensure_future(opening.submit("hello"))
    opener.release.set()

    with pytest.raises(SessionNotOpened, match="not open"):
        await within(waiting)
    assert opener.failures == [opener.error]
    assert opening.status == "Opening session..."


async def test_closing_while_opening_cancels_the_opener_which_undoes_its_work(
    opening: OpeningSession, opener: Opener
) -> None:
    opening.start()
    waiting = asyncio.ensure_future(opening.compact())
    await asyncio.sleep(0.01)

    await within(opening.close())

    assert opener.undone
    assert opener.failures == []  # a cancellation is not a failure to report
    with pytest.raises(SessionNotOpened):
        await within(waiting)


async def test_closing_an_open_session_closes_its_controller_once_however_often_called(
    opening: OpeningSession, opener: Opener
) -> None:
    await opened(opening, opener)

    await within(asyncio.gather(opening.close(), opening.close()))
    await within(opening.close())

    assert opener.controller.called("close") == [()]
    with pytest.raises(SessionNotOpened):
        await within(opening.submit("after close"))


async def test_start_after_close_opens_nothing(opening: OpeningSession, opener: Opener) -> None:
    await within(opening.close())
    opening.start()
    await asyncio.sleep(0.01)
    assert opener.runs == 0


async def test_a_waiting_status_shows_until_start_then_opening_and_listeners_hear_it(
    opener: Opener,
) -> None:
    session = OpeningSession("/work/project", opener, opener.failures.append, waiting="Pick one")
    heard: list[ViewChange] = []
    session.subscribe(heard.append)

    assert session.status == "Pick one"
    session.start()

    assert session.status == "Opening session..."
    assert heard == [ViewChange(status=True)]
    await within(session.close())
