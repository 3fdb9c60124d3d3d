"""A tool round reads what this session committed from memory, and memory matches the store.

The tool task reads its assistant entry, and the settlement its result entries,
from the entries the session's own commits published
(``HarnessServices.remember_entries``); the generation reads its tool tasks'
outcomes from the records the session adopted (``kernel/_recent.py``). Both rest
on the single-writer lock; each test compares what memory served with what a
reopened store holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.harness import define_extension
from pi_durable_tui.harness.context import load_context
from pi_durable_tui.storage import SqliteStorage
from pi_durable_tui.storage.records import StoredEntry
from tests.harness.run_support import RigFactory, make_tool, returns, within


async def test_a_tool_round_reads_no_entry_or_task_it_committed_from_storage(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    path = tmp_path / "session.sqlite"
    storage = await SqliteStorage.open(path)
    asked: list[tuple[str, Any]] = []
    for name in ("entry", "task"):
        method = getattr(storage, name)

        async def counted(*args: Any, _m: Any = method, _n: str = name, **kwargs: Any) -> Any:
            asked.append((_n, args))
            return await _m(*args, **kwargs)

        setattr(storage, name, counted)
    probe = make_tool("probe", lambda _args, _api: returns("the probe's answer"))
    rig = await open_rig(
        faux_response(faux_tool_call("probe", {"text": "x"})),
        faux_response("done"),
        extensions=[define_extension("probe", tools=[probe])],
        storage=storage,
    )
    record = await rig.ask("go")
    assert record.status == "done", record
    assert asked == []

    services = rig.harness._services  # what memory served
    served: dict[int, StoredEntry] = dict(services._entries)
    tasks = {t.id: await rig.harness.session.read_task(t.id) for t in await rig.tasks()}
    assert served
    assert tasks
    await within(rig.harness.close())

    reopened = await SqliteStorage.open(path)
    try:
        for entry_id, stored in served.items():
            assert await reopened.entry(entry_id) == stored
        for task_id, task in tasks.items():
            assert await reopened.task(task_id) == task
    finally:
        await reopened.close()


async def test_tool_rounds_derive_their_contexts_from_memory_and_a_reopened_store_agrees(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    path = tmp_path / "session.sqlite"
    storage = await SqliteStorage.open(path)
    scans: list[Any] = []
    scan = storage.scan_entries

    async def counted(*args: Any, **kwargs: Any) -> Any:
        scans.append(kwargs)
        return await scan(*args, **kwargs)

    storage.scan_entries = counted  # type: ignore[method-assign]
    probe = make_tool("probe", lambda _args, _api: returns("the probe's answer"))
    rig = await open_rig(
        *(faux_response(faux_tool_call("probe", {"text": str(i)})) for i in range(4)),
        faux_response("done"),
        extensions=[define_extension("probe", tools=[probe])],
        storage=storage,
    )
    scans.clear()  # opening reads what it reads; the run itself is counted
    assert (await rig.ask("go")).status == "done"
    assert len(scans) <= 1  # the first read of the range; every later one from memory

    cached = rig.harness._services.contexts.latest(1)
    assert cached is not None
    assert cached.current
    served = cached.derived.view.messages
    await within(rig.harness.close())

    reopened = await SqliteStorage.open(path)
    try:
        assert (await load_context(reopened, 1)).messages == served
    finally:
        await reopened.close()
