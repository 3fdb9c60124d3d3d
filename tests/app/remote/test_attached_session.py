"""``/session`` and ``/name`` on an attached screen: the host answers from its store.

An attached screen never opens the store: its ``session`` call is answered by
the host with the same facts the host's own screen lists, and its ``/name``
is committed by the host, so the host's screen and the resume picker see it.
"""

from __future__ import annotations

import pytest

from pi_durable_tui.app import ActionRefused
from tests.app.host.conftest import ServeFactory
from tests.app.remote.conftest import Attach
from tests.app.screen_support import say
from tests.harness.run_support import within


async def test_an_attached_session_lists_the_hosts_facts_with_its_own_footer(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve(say("hello back"))
    await served.rig.ask("hello")
    model, controller = await attach(served.rig.app.store)
    here = await within(controller.session_details())
    there = await within(served.rig.controller.session_details())
    assert here.store == there.store == str(served.rig.app.store)
    assert here.session_id == there.session_id != ""
    assert (here.entries, here.tokens_in, here.cost) == (there.entries, there.tokens_in, there.cost)
    assert here.model == model.footer.model == "faux/faux-1"
    assert here.permission_mode == "auto"


async def test_a_name_given_on_an_attached_screen_is_committed_by_the_host(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve()
    _, controller = await attach(served.rig.app.store)
    assert await within(controller.name_session("shared \x1b[31mreview")) == "shared review"
    assert await within(served.rig.controller.session_name()) == "shared review"
    assert await within(controller.session_name()) == "shared review"
    (listed,) = await within(served.rig.controller.sessions())
    assert listed.name == "shared review"
    with pytest.raises(ActionRefused, match="Usage: /name NAME"):
        await within(controller.name_session("\x07"))
