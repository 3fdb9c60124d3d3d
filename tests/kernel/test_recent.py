"""What a Session serves from memory about tasks it committed, against a reopened store.

``RecentTasks`` (kernel/_recent.py) answers two questions without storage: the
record of a task that just ended (R52) and whether an ending task owns documents
to retire (R56). Each test compares what memory served with what a fresh Session
on the same store reads.
"""

from __future__ import annotations

from pi_durable_tui.kernel import Completed, Running, TaskRuntime, Tx, define_doc
from pi_durable_tui.storage.records import TaskRecord
from tests.kernel.task_support import Gate, Kits, complete, define, gated

NOTE = define_doc("note", scope="task", initial=lambda: {"n": 0})


async def test_an_ended_task_read_from_memory_equals_the_reopened_store(kits: Kits) -> None:
    job = define("job", {"run": complete("ok")})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    await kit.finished(task.id)
    asked: list[int] = []
    storage_task = kit.storage.task

    async def counted(task_id: int) -> TaskRecord | None:
        asked.append(task_id)
        return await storage_task(task_id)

    kit.storage.task = counted  # type: ignore[method-assign]
    served = await kit.session.read_task(task.id)
    assert asked == []
    del kit.storage.task
    kit = await kits.reopen(kit)
    assert await kit.storage.task(task.id) == served
    assert await kit.session.read_task(task.id) == served


async def test_a_task_from_before_the_reopen_still_retires_the_documents_it_wrote(
    kits: Kits,
) -> None:
    gate = Gate()

    async def first(task: TaskRecord, runtime: TaskRuntime) -> None:
        async def fn(tx: Tx) -> Running:
            (await tx.doc(NOTE, task.id))["n"] = 1
            return Running({"phase": "last"})

        await runtime.commit(fn)

    job = define("job", {"first": first, "last": gated(gate, complete("done"))})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    kit.session.resume()
    await gate.wait_reached()
    kit = await kits.reopen(kit)  # the task was born in the Session that crashed
    gate.open()
    await kit.finished(task.id)

    assert await kit.session.snapshot(NOTE, task.id) is None
    page = await kit.storage.scan_documents(NOTE.address(task.id, None).scope)
    assert page.items == []


async def test_a_task_born_here_without_documents_ends_without_a_document_scan(
    kits: Kits,
) -> None:
    async def run(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Completed("ok"))

    job = define("job", {"run": run})
    kit = await kits.open(job)
    conv = await kit.conversation()
    scans: list[object] = []
    scan_documents = kit.storage.scan_documents

    async def counted(*args: object, **kwargs: object) -> object:
        scans.append(args)
        return await scan_documents(*args, **kwargs)  # type: ignore[arg-type]

    kit.storage.scan_documents = counted  # type: ignore[method-assign,assignment]
    task = await kit.create(job, conversation_id=conv)
    await kit.finished(task.id)

    assert scans == []
    del kit.storage.scan_documents
    kit = await kits.reopen(kit)
    page = await kit.storage.scan_documents(NOTE.address(task.id, None).scope)
    assert page.items == []
