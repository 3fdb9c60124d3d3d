"""The scheduler's passes: an idle pass costs no run of the commit line (R36, issue 14)."""

from __future__ import annotations

from typing import Any

import pytest

from pi_durable_tui.kernel import Tx
from tests.kernel.task_support import Gate, Kits, complete, define, gated, spin


async def test_a_pass_that_finds_nothing_due_runs_the_commit_line_no_time_but_due_work_runs(
    kits: Kits, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = define("job", {"start": complete()})
    kit = await kits.open(job)
    conv = await kit.conversation()
    await kit.finished((await kit.create(job, conversation_id=conv)).id)
    await spin()
    line = kit.session._line
    runs: list[Any] = []
    run = line.run

    async def counted(fn: Any, **kwargs: Any) -> Any:
        runs.append(fn)
        return await run(fn, **kwargs)

    monkeypatch.setattr(line, "run", counted)

    def note(tx: Tx) -> None:
        tx.append(conv, "note", data="wakes the scheduler")

    await kit.session.commit(note)  # a publication wakes the loop for a pass
    await spin()

    assert len(runs) == 1  # the note's own commit: no reconcile, no reservation
    task = await kit.create(job, conversation_id=conv)
    await kit.finished(task.id)


async def test_a_reservation_wakes_no_pass_of_its_own_but_the_next_commit_does(
    kits: Kits, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    job = define("job", {"start": gated(gate, complete())})
    kit = await kits.open(job)
    conv = await kit.conversation()
    kit.session.resume()
    await spin()
    scheduler = kit.session._scheduler
    passes: list[int] = []
    run_pass = scheduler._pass

    async def counted() -> None:
        passes.append(len(kit.commits))
        await run_pass()

    monkeypatch.setattr(scheduler, "_pass", counted)
    task = await kit.create(job, conversation_id=conv)
    await gate.wait_reached()
    await spin()

    # The creation's publication runs one pass; that pass's reservation (published
    # too) moved the task to running and started it, and needs no pass after it.
    assert len(passes) == 1
    running = kit.session._line.live.task(task.id)
    assert running is not None
    assert running.status == "running"

    def note(tx: Tx) -> None:
        tx.append(conv, "note", data="wakes the scheduler")

    await kit.session.commit(note)
    await spin()
    assert len(passes) == 2  # any other publication still wakes the loop
    gate.open()
    await kit.finished(task.id)
