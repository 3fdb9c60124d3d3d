"""An attached screen refuses what acts on the host's process, in one line (issue 15).

The real app runs headless over ``attach_screen``'s model and controller, joined
over the real socket to a served session (``tests.app.host.conftest.serve``).
``/fork``, ``/new``, ``/resume``, ``/export``, ``!cmd`` and F4 each say why and what to do
instead, open no picker, and leave the host's session as it was; ``/copy``,
which needs only the shared transcript, works there as on the host.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Protocol

import pytest
from textual.pilot import Pilot

from pi_durable_tui.app import attach_screen
from pi_durable_tui.tui import PidurableApp
from tests.app.host.conftest import Served, ServeFactory, serve
from tests.app.screen_support import say
from tests.harness.run_support import within
from tests.tui.conftest import screen_name
from tests.tui.test_real_harness import notices, transcript, type_line, until

__all__ = ["serve"]

SIZE = (120, 40)
WHY = "acts on the host's process"
WHAT_TO_DO = "run it in the hosting terminal, or quit that one, leave here (Ctrl+D)"


class Attached(Protocol):
    def __call__(
        self, served: Served
    ) -> AbstractAsyncContextManager[tuple[PidurableApp, Pilot[None]]]: ...


@pytest.fixture
def attached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Attached:
    """Run the app headless on a screen attached to ``served``'s host."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    themes = tmp_path / "themes"
    themes.mkdir()

    @asynccontextmanager
    async def run(served: Served) -> AsyncIterator[tuple[PidurableApp, Pilot[None]]]:
        model, controller = await within(attach_screen(str(served.rig.app.store)))
        app = PidurableApp(model, controller, log_path=tmp_path / "attached.log", themes_dir=themes)
        try:
            async with app.run_test(size=SIZE) as pilot:
                yield app, pilot
        finally:
            await within(controller.close())

    return run


def refusals(app: PidurableApp) -> list[str]:
    return [line for line in notices(app).splitlines() if WHY in line]


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("/fork", "/fork"),
        ("/new", "/new"),
        ("/resume", "/resume"),
        ("/export markdown {target}", "/export"),
        ("!touch {target}", "A shell command (!cmd)"),
    ],
)
async def test_a_command_that_acts_on_the_hosts_process_is_refused_in_one_line(
    serve: ServeFactory, attached: Attached, line: str, named: str
) -> None:
    served = await serve(say("One."))
    await served.rig.ask("first question")
    target = served.rig.workdir / "notes.md"
    host_app, root = served.rig.app, served.rig.model.conversation_id
    async with attached(served) as (app, pilot):
        await until(pilot, lambda: "first question" in transcript(app), "the shared transcript")
        await type_line(pilot, line.format(target=target))
        await until(pilot, lambda: bool(refusals(app)), "the refusal")
        [said] = refusals(app)
        assert said.startswith(f"{named} {WHY} (pid ")
        assert WHAT_TO_DO in said
        assert "failed" not in notices(app)
        assert screen_name(app) != "PickerScreen"
    assert served.rig.app is host_app  # no other session was opened on the host
    assert served.rig.model.conversation_id == root
    assert not target.exists()


async def test_f4_and_esc_esc_are_refused_and_the_hosts_permission_mode_stays(
    serve: ServeFactory, attached: Attached
) -> None:
    served = await serve(say("One."))
    await served.rig.ask("first question")
    harness = served.rig.app.harness
    mode = (await harness.permission_policy()).mode
    async with attached(served) as (app, pilot):
        await until(pilot, lambda: "first question" in transcript(app), "the shared transcript")
        await pilot.press("f4")
        await until(pilot, lambda: bool(refusals(app)), "the refusal of F4")
        assert refusals(app)[0].startswith(f"Changing the permission mode (F4) {WHY}")
        await pilot.press("escape", "escape")  # idle and empty: the fork picker, elsewhere
        await until(pilot, lambda: len(refusals(app)) == 2, "the refusal of Esc Esc")
        assert refusals(app)[1].startswith(f"/fork {WHY}")
        assert screen_name(app) != "PickerScreen"
    assert (await harness.permission_policy()).mode == mode
    assert served.rig.model.conversation_id == served.rig.app.root.id


async def test_copy_on_an_attached_screen_copies_the_hosts_last_answer(
    serve: ServeFactory, attached: Attached
) -> None:
    served = await serve(say("The **shared** answer."))
    await served.rig.ask("first question")
    async with attached(served) as (app, pilot):
        await until(pilot, lambda: "shared" in transcript(app), "the shared answer")
        await type_line(pilot, "/copy")
        await until(pilot, lambda: "Copied" in notices(app), "the copy notice")
        assert app.clipboard == "The **shared** answer."
        assert "(22 characters)" in notices(app)
        assert not refusals(app)
