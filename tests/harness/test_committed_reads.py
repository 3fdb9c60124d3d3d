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
