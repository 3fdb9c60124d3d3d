"""Reopening a session shows the conversation the user was last working in (``pi.screen``).

``--continue`` after ``/fork`` or ``/agents`` used to reopen on the main
conversation whatever was shown; the choice is now committed before each switch
and read back when the session reopens (and by ``/resume``), falling back to the
main conversation when it names none of the store's.
"""

from __future__ import annotations

from pi_durable_tui.ai import FauxMatch, faux_response, faux_text
from pi_durable_tui.app.screen._shown import SCREEN_DOC
from pi_durable_tui.kernel import Tx
from tests.app.screen_support import ScreenFactory, ScreenRig, call, say
from tests.harness.run_support import within


async def fork_before_second(rig: ScreenRig) -> int:
    """Ask ``first`` then ``second``, fork before ``second``; the fork's conversation."""
    await rig.ask("first")
    await rig.ask("second")
    second = next(b for b in rig.blocks("user") if b.text == "second")
    assert second.entry_id is not None
    await within(rig.controller.fork(second.entry_id))
    return rig.model.conversation_id


async def test_continue_after_a_fork_reopens_on_the_fork_with_its_history(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("one"), say("two"), say("forked answer"))
    fork = await fork_before_second(rig)
    await rig.ask("in the fork")
    await within(rig.controller.close())

    again = await open_screen(say("more"), continue_session=True)
    assert again.model.conversation_id == fork
    assert again.model.footer.conversation_label == "fork of first"
    assert again.texts("user") == ["first", "in the fork"]
    await again.ask("still in the fork")  # the editor talks to the shown conversation
    assert again.texts("user")[-1] == "still in the fork"
    main = await again.app.harness.session.storage.scan_entries(again.app.root.id, limit=50)
    assert "still in the fork" not in str([s.entry.data for s in main.items])


async def test_continue_after_switching_to_a_subagent_reopens_on_its_conversation(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        faux_response(faux_text("Child A."), match=FauxMatch(user="[a]")),
        call("subagent", task="[a] first job"),
        say("Done."),
    )
    await rig.ask("delegate")
    child = next(
        c.conversation_id
        for c in await within(rig.controller.conversations())
        if c.conversation_id != rig.app.root.id
    )
    await within(rig.controller.switch_conversation(child))
    await within(rig.controller.close())

    again = await open_screen(continue_session=True)
    assert again.model.conversation_id == child
    assert again.texts("assistant") == ["Child A."]
    assert again.model.footer.conversation_label == "subagent: [a] first job"


async def test_switching_back_to_main_before_quitting_reopens_on_main(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("one"), say("two"))
    await fork_before_second(rig)
    await within(rig.controller.switch_conversation(rig.app.root.id))
    await within(rig.controller.close())

    again = await open_screen(continue_session=True)
    assert again.model.conversation_id == again.app.root.id
    assert again.texts("user") == ["first", "second"]


async def test_a_shown_conversation_the_store_no_longer_has_falls_back_to_main(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("one"))
    await rig.ask("hello")

    async def gone(tx: Tx) -> None:
        (await tx.doc(SCREEN_DOC))["conversation"] = 999_999

    await within(rig.app.harness.session.commit(gone))
    await within(rig.controller.close())

    again = await open_screen(continue_session=True)
    assert again.model.conversation_id == again.app.root.id
    assert again.texts("user") == ["hello"]


async def test_resume_of_another_session_reopens_on_the_conversation_it_showed(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("one"), say("two"), say("three"))
    fork = await fork_before_second(rig)
    await within(rig.controller.new_session())
    assert rig.model.conversation_id == rig.app.root.id
    older = (await within(rig.controller.sessions()))[-1]
    await within(rig.controller.open_session(older.path))
    assert rig.model.conversation_id == fork
    assert rig.texts("user") == ["first"]
