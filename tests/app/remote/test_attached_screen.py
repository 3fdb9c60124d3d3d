"""An attached screen: the host's own view model over the wire, and its controller (issue 15).

Each test runs a real host (a session with its own screen, serving
``<store>.sock``) and attaches a second screen with ``attach_screen`` over the
real socket: both screens must show the same thing, derived by the same code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.ai import FauxMatch, FauxProvider, faux_response, faux_text
from pi_durable_tui.app import (
    ActionRefused,
    LiveScreenModel,
    PermissionChoices,
)
from pi_durable_tui.app._wire import MAX_PENDING
from pi_durable_tui.app.remote._attach import HOST_GONE, host_gone
from pi_durable_tui.app.screen._store_failure import STOPPED
from pi_durable_tui.kernel import Tx
from tests.app.conftest import BIG
from tests.app.host.conftest import ServeFactory
from tests.app.remote.conftest import Attach
from tests.app.screen_support import (
    AUTO_COMPACTING,
    FAST,
    call,
    gate_command,
    say,
    seed_history,
    summarizer_down,
    until,
    user,
)
from tests.harness.run_support import within


def shown(model: LiveScreenModel) -> list[tuple[str, str, str]]:
    return [
        (b.kind, b.text, b.tool.status if b.tool is not None else "")
        for b in model.blocks
        if b.kind != "resumed"
    ]


async def test_an_attached_screen_shows_what_the_hosts_screen_shows_at_once(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve(call("bash", command="echo hi"), say("All done."))
    await seed_history(served.rig, 500)
    await served.rig.ask("run it")
    model, _ = await attach(served.rig.app.store)
    window = shown(model)
    assert window == shown(served.rig.model)[-len(window) :]  # the host followed all 500
    assert window[-1] == ("assistant", "All done.", "")
    assert model.has_older
    assert model.footer.model == served.rig.model.footer.model
    assert model.footer.tokens_out == served.rig.model.footer.tokens_out
    assert model.footer.context_window == served.rig.model.footer.context_window > 0
    assert await within(model.load_older(30)) == 30


async def test_a_prompt_typed_in_the_attached_screen_is_answered_on_both_with_streamed_text(
    serve: ServeFactory, attach: Attach
) -> None:
    text = "streamed " * 100
    served = await serve(faux=FauxProvider([say(text)], tokens_per_second=1500), settings=FAST)
    model, controller = await attach(served.rig.app.store)
    lengths: list[int] = []

    def seen(_change: object) -> None:
        live = model.block("live")
        if live is not None:
            lengths.append(len(live.text))

    model.subscribe(seen)
    await within(controller.submit("tell me"))
    await until(lambda: any(b.kind == "assistant" and not b.streaming for b in model.blocks))
    await served.rig.idle()
    await until(lambda: shown(model) == shown(served.rig.model), what="both screens agree")
    assert [b.text for b in model.blocks if b.kind == "user"] == ["tell me"]
    assert len(set(lengths)) > 3, "the live block grew in steps"


async def test_the_attached_screen_lists_the_sessions_conversations_and_follows_a_subagent(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve(
        faux_response(faux_text("Child A."), match=FauxMatch(user="[a]")),
        call("subagent", task="[a] first job"),
        say("Delegated."),
    )
    await served.rig.ask("delegate")
    model, controller = await attach(served.rig.app.store)
    found = await within(controller.conversations())
    assert found == await within(served.rig.controller.conversations())
    assert [(c.label.split()[0], c.title, c.shown) for c in found] == [
        ("main", "delegate", True),
        ("subagent", "[a] first job", False),
    ]

    await within(controller.switch_conversation(found[1].conversation_id))
    await until(lambda: [b.text for b in model.blocks if b.kind == "assistant"] == ["Child A."])
    assert model.footer.conversation_label == "subagent: [a] first job"
    assert [c.shown for c in await within(controller.conversations())] == [False, True]
    assert served.rig.model.conversation_id == found[0].conversation_id  # the host stays

    await within(controller.switch_conversation(found[0].conversation_id))
    await until(lambda: [b.text for b in model.blocks if b.kind == "assistant"] == ["Delegated."])


async def test_tasks_stop_and_ctrl_b_from_the_attached_screen_reach_the_hosts_harness(
    serve: ServeFactory, attach: Attach
) -> None:
    # Both were once refused by the wire's check as unknown methods.
    served = await serve(say("hi"))
    _, controller = await attach(served.rig.app.store)
    with pytest.raises(ValueError, match="No live task 999: /tasks lists"):
        await within(controller.stop_task(999))
    assert await within(controller.background_command()) == (
        "No command is running in the foreground: nothing to move to the background."
    )


async def test_model_from_the_attached_screen_refused_by_the_host_is_its_words_for_the_user(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve(say("hi"))
    model, controller = await attach(served.rig.app.store)

    with pytest.raises(ActionRefused, match=r"^Unknown model nowhere/x: no provider 'nowhere'"):
        await within(controller.set_model("nowhere/x"))

    assert model.footer.model == "faux/faux-1"


async def test_esc_in_the_attached_screen_aborts_for_both(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve(call("bash", command=gate_command()), say("never"))
    model, controller = await attach(served.rig.app.store)
    await within(controller.submit("run"))
    await until(lambda: model.status.startswith("Running bash"), what="the attached screen runs")
    await within(controller.submit("a steer"))
    await until(lambda: len(model.queue) == 1, what="queued on the attached screen")
    assert await within(controller.abort()) == ["a steer"]
    await until(lambda: not model.busy and not served.rig.model.busy, what="both idle")
    cards = [b.tool.status for b in model.blocks if b.tool is not None]
    assert cards == ["aborted"]
    assert shown(model) == shown(served.rig.model)


async def test_an_approval_shows_on_the_attached_screen_and_is_answered_there(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve(
        call("bash", command="touch made && echo done-it"),
        say("ran it"),
        permissions=PermissionChoices(),
    )
    model, controller = await attach(served.rig.app.store)
    await within(controller.submit("make it"))
    await until(lambda: model.approval is not None, what="the question on the attached screen")
    question = model.approval
    assert question is not None
    assert question == served.rig.model.approval
    await within(controller.decide(question.call_id, "once"))
    await served.rig.idle()
    await until(lambda: shown(model) == shown(served.rig.model), what="both screens agree")
    assert model.approval is None
    assert (served.rig.workdir / "made").exists()


async def test_an_attached_screen_that_fell_behind_is_rebuilt_from_a_fresh_snapshot(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve()
    model, controller = await attach(served.rig.app.store)
    transport = controller.feed.link._writer.transport
    transport.pause_reading()  # type: ignore[attr-defined]  # a stuck client
    root = served.rig.app.root
    for n in range(MAX_PENDING * 3):

        def append(tx: Tx, n: int = n) -> None:
            tx.append(root.id, "pi.user", model=user(f"{n} " + "x" * 20_000))

        await within(root.commit(append))
    transport.resume_reading()  # type: ignore[attr-defined]
    last = f"{MAX_PENDING * 3 - 1} "
    await until(
        lambda: bool(model.blocks) and model.blocks[-1].text.startswith(last), what="caught up"
    )
    window = shown(model)
    assert window == shown(served.rig.model)[-len(window) :]
    assert len(window) < MAX_PENDING * 3  # a fresh window, not the backlog


async def test_when_the_host_stops_the_attached_screen_says_so_and_how_to_take_over(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve()
    model, _ = await attach(served.rig.app.store)
    await served.host.close()
    await until(lambda: any("--continue" in n.text for n in model.notices), what="the notice")
    assert "stopped serving" in model.notices[-1].text


async def test_a_screen_whose_host_is_gone_stops_saying_the_agent_works(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve(call("bash", command=gate_command()), say("ran"), settings=FAST)
    model, controller = await attach(served.rig.app.store)
    await within(controller.submit("run"))
    await until(lambda: model.status.startswith("Running bash"), what="the command runs")
    assert model.footer.attached == 1  # the host's own screen
    await served.host.close()
    await until(lambda: model.status == HOST_GONE, what="the stopped status line")
    assert not model.busy
    assert {(n.status, n.elapsed_s) for n in model.tasks} == {("stopped", None)}
    assert model.footer.attached == 0
    assert "--continue" in [n.text for n in model.notices if n.level == "error"][-1]
    with pytest.raises(
        ValueError, match=r"^the session's host is gone \(see the notice\); ctrl\+c twice quits"
    ):
        await within(controller.submit("anyone?"))
    served.rig.release()


async def test_an_approval_shown_when_the_host_goes_is_taken_down_nobody_can_decide_it_here(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve(
        call("bash", command="touch made"), say("ran"), permissions=PermissionChoices()
    )
    model, controller = await attach(served.rig.app.store)
    await within(controller.submit("make it"))
    await until(lambda: model.approval is not None, what="the question on the attached screen")
    await served.host.close()
    await until(lambda: model.status == HOST_GONE, what="the stop")
    assert model.approval is None  # `pidurable --continue` asks it again
    assert not (served.rig.workdir / "made").exists()


def test_a_host_gone_without_a_word_is_said_as_killed_or_crashed() -> None:
    assert host_gone("gone").startswith("The session's host is gone (killed, or it crashed); quit")


async def test_a_host_action_refused_once_the_hosting_terminal_left_says_to_stop_its_process(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve()
    _, controller = await attach(served.rig.app.store)
    assert "run it in the hosting terminal" in (controller.refusal("export") or "")
    served.host.screen_left()  # it quit and keeps serving: no terminal to run it in
    await until(lambda: not any(c.get("host") for c in controller.feed.clients), what="left")
    said = controller.refusal("export") or ""
    assert said.startswith("/export acts on the host's process (pid ")
    assert f"stop the host (kill {controller.feed.host_pid})" in said
    with pytest.raises(ValueError, match="stop the host"):
        await controller.export("markdown")


async def test_an_automatic_compaction_that_fails_is_noticed_on_the_attached_screen_too(
    serve: ServeFactory, attach: Attach
) -> None:
    served = await serve(
        say("A long answer. " * 60), summarizer_down(), say("sent anyway"), settings=AUTO_COMPACTING
    )
    await served.rig.ask("first")
    model, _ = await attach(served.rig.app.store)
    await served.rig.ask("second")
    await until(
        lambda: any(n.text.startswith("Automatic compaction failed") for n in model.notices),
        what="the attached screen's notice",
    )
    assert [n.text for n in model.notices if "compaction" in n.text] == [
        "Automatic compaction failed: Summarization failed: summarizer down. The conversation"
        " goes on uncompacted; /compact retries, /new starts fresh."
    ]


async def test_an_attached_screen_is_told_of_the_hosts_store_failure_and_stops_too(
    serve: ServeFactory, attach: Attach, small_disk: Path
) -> None:
    served = await serve(say("short"), say(BIG))
    model, controller = await attach(served.rig.app.store)
    await served.rig.ask("hello")
    (small_disk / "filler").write_bytes(b"\0" * (15 * 1024 * 1024))  # about 1 MiB left

    await within(controller.submit("big please"))
    await until(lambda: model.status == STOPPED, what="the attached screen's stop")
    await until(lambda: served.rig.model.status == STOPPED, what="the host's stop")
    host_notice = [n.text for n in served.rig.model.notices if n.level == "error"]
    assert [n.text for n in model.notices if n.level == "error"] == host_notice != []
    assert not model.busy
    assert [(n.status, n.elapsed_s) for n in model.tasks] == [("stopped", None)]
    with pytest.raises(Exception, match=r"^the session store cannot be written \(see the notice"):
        await within(controller.submit("more"))  # the host's words, not SessionFailed's
