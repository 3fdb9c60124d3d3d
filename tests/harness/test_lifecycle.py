"""Harness lifecycle: open, scheduling, root, creation, forks, close, inspect (R21-R28)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from pi_durable_tui.ai import Models, faux_response, faux_tool_call
from pi_durable_tui.harness import (
    AGENT_DOC,
    INBOX_DOC,
    LIVE_DOC,
    PROVIDER_DOC,
    USAGE_DOC,
    AgentChange,
    Conversation,
    Harness,
    HarnessClosed,
    HarnessRuntime,
    Input,
    Registry,
    RegistryIncomplete,
    define_extension,
    define_task,
)
from pi_durable_tui.kernel import (
    Aborted,
    Completed,
    ConversationOwned,
    KernelError,
    Ownerless,
    ReadAfterWrite,
    TaskOwned,
    Tx,
)
from pi_durable_tui.storage import MemoryStorage, TaskRecord
from tests.harness.harness_support import (
    FAUX_MODEL,
    GatedTool,
    HarnessKit,
    spin,
    within,
    write_note,
)

# -- a task that records when it runs --


class Probe:
    """A harness task kind whose phase records that it ran, then completes."""

    def __init__(self, name: str = "test.probe") -> None:
        self.ran = asyncio.Event()

        async def run(task: TaskRecord, runtime: HarnessRuntime) -> None:
            self.ran.set()
            await runtime.commit(lambda tx: Completed(None))

        async def abort(task: TaskRecord, runtime: HarnessRuntime) -> None:
            await runtime.commit(lambda tx: Aborted())

        self.task = define_task(
            name, initial=lambda _input: {"phase": "run"}, phases={"run": run}, abort=abort
        )

    def install(self, kit: HarnessKit) -> None:
        kit.install(define_extension("probe", tasks=[self.task]))

    async def create(self, kit: HarnessKit, conversation: Conversation) -> int:
        definition = kit.harness.definition(self.task)

        def create(tx: Tx) -> int:
            return tx.create_task(
                definition, None, ownership=ConversationOwned(), conversation_id=conversation.id
            ).id

        task_id: int = await conversation.commit(create)
        return task_id


async def pending_probe(kit: HarnessKit) -> tuple[Probe, Conversation, int]:
    """A probe task created (not started) in a second conversation, and the root."""
    probe = Probe()
    probe.install(kit)
    root = await kit.root()
    other = await kit.harness.create_conversation()
    return probe, root, await probe.create(kit, other)


async def _last_seq(kit: HarnessKit) -> int:
    seq: int = kit.harness.session.storage.last_seq
    return seq


async def test_an_extensions_task_sees_only_the_runtime_surface_and_nothing_behind_it(
    kit: HarnessKit,
) -> None:
    seen: list[set[str]] = []

    async def run(task: TaskRecord, runtime: HarnessRuntime) -> None:
        seen.append({name for name in dir(runtime) if not name.startswith("_")})
        await runtime.commit(lambda tx: Completed(None))

    async def abort(task: TaskRecord, runtime: HarnessRuntime) -> None:
        await runtime.commit(lambda tx: Aborted())

    probe = Probe("test.surface")
    probe.task = define_task(
        "test.surface", initial=lambda _input: {"phase": "run"}, phases={"run": run}, abort=abort
    )
    probe.install(kit)
    task_id = await probe.create(kit, await kit.root())
    kit.harness.resume()
    await within(kit.harness.wait_for_task(task_id))

    # The harness services (session, redactor, report, ...) are the built-in tasks'
    # alone (issue 14): an extension author sees this list and nothing more.
    assert seen == [
        {
            "aborted",
            "agent",
            "commit",
            "continuation",
            "conversation",
            "conversation_id",
            "definition",
            "env",
            "memo",
            "models",
            "now",
            "offer_continuation",
            "outcomes",
            "settings",
            "sleep",
            "task_id",
            "wait_for_task",
        }
    ]


# -- R21 --


async def test_r21_open_rejects_a_registry_without_the_builtin_tasks_and_says_how_to_fix_it() -> (
    None
):
    storage = MemoryStorage()
    with pytest.raises(RegistryIncomplete) as caught:
        await Harness.open(storage, models=Models(), registry=Registry())
    assert str(caught.value) == (
        "Registry lacks built-in tasks pi.generation, pi.tool, pi.compaction; "
        "create it with create_registry()"
    )
    assert storage.last_seq == 0


# -- R23 --


async def test_r23_open_dispatches_nothing_and_reads_never_start_scheduling(
    kit: HarnessKit,
) -> None:
    probe, root, task_id = await pending_probe(kit)
    queued = await root.commit(lambda tx: tx.create_submission(root.id, "input"))
    harness = kit.harness

    await harness.inspect()
    harness.task_graph()
    harness.watch_task_graph().close()
    await harness.usage()
    handle = await harness.submission(queued.id)
    assert handle is not None
    await handle.status()
    await root.snapshot(LIVE_DOC)
    await root.entries()
    await spin()

    assert not probe.ran.is_set()
    assert (await harness.inspect())["scheduling"] == "paused"
    assert harness.task_graph()["tasks"][str(task_id)]["state"]["status"] == "pending"


Progress = Callable[[HarnessKit, Conversation, int], Awaitable[Any]]


async def _resume(kit: HarnessKit, root: Conversation, task_id: int) -> None:
    kit.harness.resume()


async def _submit(kit: HarnessKit, root: Conversation, task_id: int) -> None:
    kit.script(faux_response("ok"))
    await root.submit(Input("hello"))


async def _compact(kit: HarnessKit, root: Conversation, task_id: int) -> None:
    await root.compact()


async def _abort(kit: HarnessKit, root: Conversation, task_id: int) -> None:
    await root.abort()


async def _conversation_idle(kit: HarnessKit, root: Conversation, task_id: int) -> None:
    await root.wait_for_idle()


async def _submission_wait(kit: HarnessKit, root: Conversation, task_id: int) -> None:
    record = await root.commit(lambda tx: tx.create_submission(root.id, "input"))
    handle = await kit.harness.submission(record.id)
    assert handle is not None
    waiting = asyncio.ensure_future(handle.wait())
    await spin()
    waiting.cancel()


async def _wait_for_task(kit: HarnessKit, root: Conversation, task_id: int) -> None:
    await kit.harness.wait_for_task(task_id)


async def _harness_idle(kit: HarnessKit, root: Conversation, task_id: int) -> None:
    await kit.harness.wait_for_idle()


@pytest.mark.parametrize(
    "progress",
    [
        _resume,
        _submit,
        _compact,
        _abort,
        _conversation_idle,
        _submission_wait,
        _wait_for_task,
        _harness_idle,
    ],
)
async def test_r23_every_progress_call_starts_scheduling(
    kit: HarnessKit, progress: Progress
) -> None:
    probe, root, task_id = await pending_probe(kit)

    await within(progress(kit, root, task_id))

    await within(probe.ran.wait())
    assert (await kit.harness.inspect())["scheduling"] == "running"


async def test_r23_resume_is_idempotent_and_raises_after_close(kit: HarnessKit) -> None:
    kit.harness.resume()
    kit.harness.resume()
    await kit.close()
    with pytest.raises(HarnessClosed, match="Harness is closed"):
        kit.harness.resume()


async def test_r22_r23_a_reopened_store_keeps_its_run_pending_until_a_progress_call(
    sqlite_kit: HarnessKit,
) -> None:
    kit = sqlite_kit
    gated = GatedTool(replay="safe")
    kit.install(gated.extension())
    kit.script(faux_response(faux_tool_call("gate", {"label": "a"})))
    root = await kit.root()
    submission = await root.submit(Input("go"))
    await gated.gate.wait_reached()

    harness = await kit.reopen()

    graph = harness.task_graph()["tasks"]
    states = {node["kind"]: node["state"] for node in graph.values()}
    assert states["pi.tool"] == {"status": "pending", "phase": "execute"}
    assert states["pi.generation"]["status"] == "waiting"
    await spin()
    assert gated.calls == ["a"]
    kit.script(faux_response("finished"))
    gated.gate.open()
    handle = await harness.submission(submission.id)
    assert handle is not None
    record = await within(handle.wait())
    assert record.status == "done"
    assert gated.calls == ["a", "a"]  # replay-safe: ran again after the reopen (R95)


# -- R24 --


async def test_r24_root_is_created_once_with_its_agent_and_init(kit: HarnessKit) -> None:
    inits: list[int] = []

    async def init(tx: Tx, conversation_id: int) -> None:
        inits.append(conversation_id)
        tx.append(conversation_id, "app.note", data={"n": 1})

    root = await kit.harness.root(agent=AgentChange(model=FAUX_MODEL), init=init)
    assert root.id == 1
    assert inits == [1]
    assert await root.snapshot(AGENT_DOC) == {"model": {"provider": "faux", "model_id": "faux-1"}}
    seq = await _last_seq(kit)

    again = await kit.harness.root(agent=AgentChange(thinking_level="high"), init=init)

    assert again.id == 1
    assert inits == [1]
    assert await _last_seq(kit) == seq  # nothing written
    assert await again.snapshot(AGENT_DOC) == {"model": {"provider": "faux", "model_id": "faux-1"}}
    assert [e.kind for e in await again.entries()] == ["app.note"]


async def test_r24_reopen_finds_the_same_root(sqlite_kit: HarnessKit) -> None:
    root = await sqlite_kit.root(instructions="be brief")
    provider = await root.snapshot(PROVIDER_DOC)
    harness = await sqlite_kit.reopen()

    found = await harness.root(agent=AgentChange(instructions="other"))

    assert found.id == root.id
    assert (await found.snapshot(AGENT_DOC) or {})["instructions"] == "be brief"
    assert await found.snapshot(PROVIDER_DOC) == provider


# -- R25 --


async def _builtin_docs(conversation: Conversation) -> dict[str, Any]:
    return {
        definition.kind: await conversation.snapshot(definition)
        for definition in (AGENT_DOC, PROVIDER_DOC, LIVE_DOC, INBOX_DOC, USAGE_DOC)
    }


def _is_uuid7(text: Any) -> bool:
    return isinstance(text, str) and uuid.UUID(text).version == 7


async def test_r25_a_new_ownerless_conversation_gets_the_builtin_documents_and_an_empty_agent(
    kit: HarnessKit,
) -> None:
    await kit.root(thinking_level="high")

    created = await kit.harness.create_conversation()

    docs = await _builtin_docs(created)
    assert docs["pi.agent"] == {}
    assert docs["pi.live"] == {}
    assert docs["pi.inbox"] == {"items": []}
    assert docs["pi.usage"] == {"models": {}, "tools": {}}
    assert _is_uuid7(docs["pi.provider"]["session_id"])


async def test_r25_a_raw_tx_create_conversation_inside_a_commit_gets_the_builtin_documents(
    kit: HarnessKit,
) -> None:
    root = await kit.root()

    record = await root.commit(lambda tx: tx.create_conversation(Ownerless()))

    docs = await _builtin_docs(kit.harness.conversation(record.id))
    assert docs["pi.agent"] == {}
    assert docs["pi.inbox"] == {"items": []}
    assert _is_uuid7(docs["pi.provider"]["session_id"])
    assert docs["pi.provider"] != await root.snapshot(PROVIDER_DOC)


async def test_r25_a_raw_tx_fork_conversation_gets_fresh_documents_and_the_as_of_agent(
    kit: HarnessKit,
) -> None:
    root = await kit.root(instructions="kept")
    note = await write_note(root)

    record = await root.commit(lambda tx: tx.fork_conversation(root.id, note, Ownerless()))

    docs = await _builtin_docs(kit.harness.conversation(record.id))
    assert docs["pi.agent"] == await root.snapshot(AGENT_DOC)
    assert docs["pi.live"] == {}
    assert docs["pi.inbox"] == {"items": []}
    assert docs["pi.usage"] == {"models": {}, "tools": {}}
    assert _is_uuid7(docs["pi.provider"]["session_id"])
    assert docs["pi.provider"] != await root.snapshot(PROVIDER_DOC)


async def test_r25_a_task_owned_conversation_copies_the_owner_agent_leaving_unset_fields_unset(
    kit: HarnessKit,
) -> None:
    probe = Probe()  # never runs: nothing here starts scheduling
    probe.install(kit)
    root = await kit.root(instructions="parent rules")
    task_id = await probe.create(kit, root)

    child = await root.commit(lambda tx: tx.create_conversation(TaskOwned(task_id)))

    agent = await kit.harness.conversation(child.id).snapshot(AGENT_DOC)
    assert agent == await root.snapshot(AGENT_DOC)
    assert agent is not None
    assert "thinking_level" not in agent


async def test_r25_the_host_hook_runs_after_the_builtin_documents_then_the_agent_change_then_init(
    kit: HarnessKit,
) -> None:
    order: list[str] = []

    async def created(tx: Tx, record: Any) -> None:
        live = await tx.doc(LIVE_DOC, record.id)
        order.append(f"host sees live={live}")
        agent = await tx.doc(AGENT_DOC, record.id)
        agent["instructions"] = "from host"

    async def init(tx: Tx, conversation_id: int) -> None:
        agent = await tx.doc(AGENT_DOC, conversation_id)
        order.append(f"init sees {agent['instructions']}")

    harness = await kit.reopen(conversation_created=created)

    conversation = await harness.create_conversation(
        agent=AgentChange(instructions="from change"), init=init
    )

    assert order == ["host sees live={}", "init sees from change"]
    assert (await conversation.snapshot(AGENT_DOC) or {})["instructions"] == "from change"


async def test_r25_a_host_hook_that_raises_or_reads_a_table_fails_the_creating_commit(
    kit: HarnessKit,
) -> None:
    async def reads_a_table(tx: Tx, record: Any) -> None:
        await tx.conversation(1)

    harness = await kit.reopen(conversation_created=reads_a_table)
    seq = await _last_seq(kit)
    with pytest.raises(ReadAfterWrite):
        await harness.create_conversation()
    assert await _last_seq(kit) == seq


async def test_r17_r25_a_fork_keeps_the_agent_as_of_the_fork_entry_and_starts_fresh_elsewhere(
    kit: HarnessKit,
) -> None:
    root = await kit.root()
    first = await write_note(root)
    await root.configure(AgentChange(thinking_level="high"))
    second = await write_note(root)

    early = await root.fork(first)
    late = await root.fork(second, agent=AgentChange(instructions="forked"))

    assert await early.snapshot(AGENT_DOC) == {
        "model": {"provider": "faux", "model_id": "faux-1"},
        "cwd": str(kit.workdir),
    }
    late_agent = await late.snapshot(AGENT_DOC) or {}
    assert late_agent["thinking_level"] == "high"
    assert late_agent["instructions"] == "forked"
    assert "instructions" not in (await root.snapshot(AGENT_DOC) or {})
    docs = await _builtin_docs(late)
    assert docs["pi.live"] == {}
    assert docs["pi.inbox"] == {"items": []}
    assert docs["pi.usage"] == {"models": {}, "tools": {}}
    assert docs["pi.provider"] != await root.snapshot(PROVIDER_DOC)


# -- R26 --


async def test_r26_create_conversation_is_atomic_when_init_raises(kit: HarnessKit) -> None:
    await kit.root()
    seq = await _last_seq(kit)

    def init(tx: Tx, conversation_id: int) -> None:
        raise ValueError("init failed")

    with pytest.raises(ValueError, match="init failed"):
        await kit.harness.create_conversation(agent=AgentChange(instructions="x"), init=init)
    assert await _last_seq(kit) == seq


async def test_r26_fork_is_atomic_and_requires_a_visible_entry(kit: HarnessKit) -> None:
    root = await kit.root()
    note = await write_note(root)
    other = await kit.harness.create_conversation()
    foreign = await write_note(other)
    seq = await _last_seq(kit)

    with pytest.raises(KernelError):
        await root.fork(foreign)
    with pytest.raises(KernelError):
        await root.fork(note + 1000)

    def init(tx: Tx, conversation_id: int) -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        await root.fork(note, init=init)
    assert await _last_seq(kit) == seq


# -- R27 --


async def test_r27_close_seals_admission_and_later_operations_and_reads_raise_harness_closed(
    kit: HarnessKit,
) -> None:
    root = await kit.root()
    kit.script(faux_response("answer"))
    settled = await within((await root.submit("hi")).wait())
    handle = await kit.harness.submission(settled.id)
    assert handle is not None
    await handle.wait()

    await kit.close()

    assert (await within(handle.wait())).status == "done"  # already settled: still resolves
    for operation in (
        lambda: kit.harness.inspect(),
        lambda: kit.harness.usage(),
        lambda: kit.harness.submission(settled.id),
        lambda: handle.status(),
        lambda: root.snapshot(LIVE_DOC),
        lambda: root.entries(),
        lambda: root.context(),
        lambda: root.submit("again"),
        lambda: root.abort(),
        lambda: root.configure(AgentChange(thinking_level="low")),
        lambda: root.wait_for_idle(),
        lambda: kit.harness.root(),
        lambda: kit.harness.create_conversation(),
        lambda: kit.harness.wait_for_idle(),
    ):
        with pytest.raises(HarnessClosed, match="Harness is closed"):
            await operation()


async def test_r27_close_joins_a_running_tool_writes_no_outcome_and_later_calls_share_it(
    sqlite_kit: HarnessKit,
) -> None:
    kit = sqlite_kit
    gated = GatedTool()
    kit.install(gated.extension())
    kit.script(faux_response(faux_tool_call("gate", {"label": "a"})))
    root = await kit.root()
    await root.submit(Input("go"))
    await gated.gate.wait_reached()
    seq = await _last_seq(kit)

    first = asyncio.ensure_future(kit.harness.close())
    second = asyncio.ensure_future(kit.harness.close())
    await within(asyncio.gather(first, second))
    assert await _last_seq(kit) == seq  # close wrote nothing

    harness = await kit.reopen()
    kinds = {node["kind"] for node in harness.task_graph()["tasks"].values()}
    assert kinds == {"pi.generation", "pi.tool"}


async def test_r27_cancelling_a_close_wait_does_not_stop_the_shutdown(kit: HarnessKit) -> None:
    await kit.root()
    closing = asyncio.ensure_future(kit.harness.close())
    await asyncio.sleep(0)
    closing.cancel()
    await within(kit.harness.closed)
    assert kit.harness.closed.result().reason == "closed"


# -- R28 --


async def test_r28_inspect_reports_scheduling_tasks_and_queued_and_placed_submissions(
    kit: HarnessKit,
) -> None:
    gated = GatedTool()
    kit.install(gated.extension())
    kit.script(faux_response(faux_tool_call("gate", {"label": "a"})))
    root = await kit.root()
    assert (await kit.harness.inspect())["scheduling"] == "paused"
    placed = await root.submit(Input("go"))
    await gated.gate.wait_reached()
    steer = await root.submit(Input("also", when_busy="steer"))
    seq = await _last_seq(kit)

    report = await kit.harness.inspect()

    assert await _last_seq(kit) == seq
    assert report["scheduling"] == "running"
    activity = {task["kind"]: task["activity"] for task in report["tasks"]}
    tool_id = next(task["id"] for task in report["tasks"] if task["kind"] == "pi.tool")
    assert activity == {
        "pi.generation": {"waiting": {"on": [tool_id]}},
        "pi.tool": {"running": True},
    }
    assert [(s["id"], s["status"]) for s in report["submissions"]] == [
        (placed.id, "placed"),
        (steer.id, "queued"),
    ]
    gated.gate.open()
    kit.script(faux_response("done"), faux_response("done again"))
    await within(placed.wait())


async def test_r27_r68_a_handle_that_saw_its_submission_placed_resolves_wait_after_close(
    kit: HarnessKit,
) -> None:
    root = await kit.root()
    kit.script(faux_response("answer"))
    submission = await root.submit("hi")
    assert submission.record.status == "placed"
    await within(root.wait_for_idle())

    await kit.close()

    record = await within(submission.wait())
    assert record.status == "done"
    assert record.answer is not None


async def test_r27_a_wait_pending_when_the_harness_closes_rejects_with_harness_closed(
    kit: HarnessKit,
) -> None:
    gated = GatedTool()
    kit.install(gated.extension())
    kit.script(faux_response(faux_tool_call("gate")))
    root = await kit.root()
    submission = await root.submit(Input("go"))
    waiting = asyncio.ensure_future(submission.wait())
    await gated.gate.wait_reached()

    await kit.close()

    with pytest.raises(HarnessClosed):
        await within(waiting)
