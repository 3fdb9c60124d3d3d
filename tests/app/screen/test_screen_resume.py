"""The live screen model after a reopen: a resumed turn that fails says why."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pi_durable_tui.app import AgentApp, AppOptions, LiveScreenModel
from pi_durable_tui.harness import Input
from tests.app.support import FAUX, text, write_script


async def test_a_resumed_turn_that_ends_unanswered_says_why_on_the_screen_R83(
    home: Path, project: Path
) -> None:
    # The first process leaves a turn streaming (a slow answer) when it goes away.
    script = write_script(project, text("a slow answer " * 40), tokens_per_second=5)
    store = project / "s.sqlite"
    first = await AgentApp.open(
        AppOptions(cwd=str(project), session=str(store), model=FAUX, faux_script=str(script))
    )
    await first.root.submit(Input("hello"))
    await first.close()
    # The script is gone when the session is reopened: the resumed turn has no model (R83).
    script.unlink()
    app = await AgentApp.open(AppOptions(cwd=str(project), session=str(store)))
    model = LiveScreenModel(app)
    notices = asyncio.Event()
    model.subscribe(lambda change: notices.set() if change.notices else None)
    try:
        await model.attach(app.root.id)
        app.harness.resume()
        await asyncio.wait_for(notices.wait(), 10)
    finally:
        await model.close()
        await app.close()

    (notice,) = model.notices
    assert notice.level == "error"
    assert "Model faux/faux-1 is not available" in notice.text


async def test_a_session_started_with_a_faux_script_continues_with_it_without_the_flag(
    home: Path, project: Path
) -> None:
    script = write_script(project, text("first"), text("second"))
    store = project / "s.sqlite"
    first = await AgentApp.open(
        AppOptions(cwd=str(project), session=str(store), model=FAUX, faux_script=str(script))
    )
    await (await first.root.submit(Input("one"))).wait()
    await first.close()

    again = await AgentApp.open(AppOptions(cwd=str(project), session=str(store)))
    try:
        record = await asyncio.wait_for((await again.root.submit(Input("two"))).wait(), 10)
    finally:
        await again.close()

    assert record.status == "done"
