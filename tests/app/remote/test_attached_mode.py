"""Every attached footer shows the permission mode in force, and follows each change at once.

The host puts the mode in ``welcome`` and sends a ``mode`` message to every
client whenever it changes: F4 in the hosting terminal (a commit to
``pi.permissions``), or an edited settings file (the host re-reads the files
while clients are attached). Before, an attached footer showed no mode at all
and learnt a change only by attaching again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pi_durable_tui.app import PermissionChoices
from pi_durable_tui.app.files import settings_sources
from tests.app.host.conftest import ServeFactory
from tests.app.remote.conftest import Attach
from tests.app.screen_support import until
from tests.harness.run_support import within


async def test_the_welcome_carries_the_mode_and_the_attached_footer_shows_it_at_once(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve()
    follower = await served.link()
    welcome = await follower.next("welcome")
    assert welcome["mode"] == "auto"  # the screen tests' --permission-mode auto
    model, _ = await attach(served.rig.app.store)
    assert model.footer.permission_mode == served.rig.model.footer.permission_mode == "auto"


async def test_f4_in_the_host_reaches_every_attached_footer_without_reattaching(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve()
    first, _ = await attach(served.rig.app.store)
    second, _ = await attach(served.rig.app.store)
    follower = await served.follower()

    assert await within(served.rig.controller.cycle_permission_mode()) == "plan"

    message = await follower.next("mode")
    assert message == {"t": "mode", "mode": "plan"}
    await until(
        lambda: first.footer.permission_mode == second.footer.permission_mode == "plan",
        what="both footers follow",
    )
    assert await within(served.rig.controller.cycle_permission_mode()) == "auto-edit"
    assert (await follower.next("mode"))["mode"] == "auto-edit"
    await until(lambda: first.footer.permission_mode == "auto-edit", what="the second change")


async def test_a_settings_file_edit_reaches_the_attached_footer_while_the_session_is_idle(
    home: Path, serve: ServeFactory, attach: Attach
) -> None:
    served = await serve(permissions=PermissionChoices())  # the settings' mode is in force
    model, _ = await attach(served.rig.app.store)
    assert model.footer.permission_mode == "auto-edit"
    user_file = settings_sources(served.rig.app.cwd)[0]
    assert user_file.is_relative_to(home)  # this test's own home: no other test reads it
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text(json.dumps({"permission_mode": "plan"}))
    os.utime(user_file, ns=(1, 1))  # a stamp no earlier read had, whatever the clock's grain

    # Nobody calls the host's screen here: the host's own re-read tells the client.
    await until(lambda: model.footer.permission_mode == "plan", what="the edited mode")
