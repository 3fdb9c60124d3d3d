"""A store that fails under a running screen: one line, the status stops, quitting works (issue 12).

The failure is real: the session's home is a small tmpfs (mounted for the test:
it needs root, and is skipped without it) that a file fills while the screen
works, so SQLite's commit fails with ``SQLITE_FULL`` from the kernel's
``ENOSPC``. The store keeps its last commit; freed space lets ``--continue``
carry the turn on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.app.screen._store_failure import STOPPED, StoreStopped
from tests.app.conftest import BIG
from tests.app.screen_support import ScreenFactory, say
from tests.harness.run_support import within


async def test_a_disk_filling_under_the_screen_is_one_notice_the_status_stops_and_it_goes_on_after(
    open_screen: ScreenFactory, small_disk: Path
) -> None:
    rig = await open_screen(say("short"), say(BIG))
    await rig.ask("hello")
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (15 * 1024 * 1024))  # about 1 MiB left
    store = rig.controller.app.store

    await within(rig.controller.submit("big please"))
    await rig.until(lambda: rig.model.status == STOPPED, "the stopped status")

    assert not rig.model.busy  # pi.live still says the turn runs: no commit can land
    assert [(n.label, n.status, n.elapsed_s) for n in rig.model.tasks] == [
        ("turn", "stopped", None)  # its clock no longer runs on either
    ]
    assert [(n.level, n.text) for n in rig.model.notices if n.level == "error"] == [
        (
            "error",
            f"the disk holding the session store {store} is full; nothing committed was "
            "lost: quit, free some space, then `pidurable -c` continues the session",
        )
    ]
    for n in range(25):  # the status line points at it for the session's life
        rig.model.add_notice("info", f"later notice {n}")
    assert [n.lasting for n in rig.model.notices if n.level == "error"] == [True]
    for action in (lambda: rig.controller.submit("more"), rig.controller.abort):
        with pytest.raises(StoreStopped, match=r"cannot be written \(see the notice\)"):
            await within(action())  # one line pointing at the notice, not SessionFailed's
    await within(rig.controller.close())  # quitting a failed session does not wait

    filler.unlink()
    again = await open_screen(say(BIG), continue_session=True)
    await again.until(lambda: BIG in again.texts("assistant"), "the answer after --continue")
    assert again.texts("user") == ["hello", "big please"]
    assert again.model.status != STOPPED
