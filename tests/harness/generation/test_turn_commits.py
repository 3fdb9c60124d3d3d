"""What a turn commits: its first request is planned before the admission (issue 14, R59, R83).

An input to an idle conversation is admitted in the commit that also appends the
planned ``pi.system`` entries and creates the run's generation at ``request``, so
a turn of one tool round stores five commits: the admission, the response with
its tool task, the intent, the result with the settlement, the final answer. A
plan that anything was committed after is not used (the generation prepares
itself), and a plan that fails to apply never costs the input. A crash right
after the admission resumes at ``request`` with nothing doubled.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.harness import (
    ASSISTANT,
    SYSTEM,
    TOOL_RESULT,
    USER,
    Input,
    define_extension,
    section,
)
from pi_durable_tui.harness.generation._preparation import Preparation
from pi_durable_tui.kernel import CommitInfo, Ownerless
from pi_durable_tui.storage import MemoryStorage, SqliteStorage
from pi_durable_tui.storage.writes import Write
from tests.harness.generation.commit_support import (
    answered,
    generation_starts,
    ledger_tool,
    snapshot,
    stored,
)
from tests.harness.run_support import RigFactory, message, within

ROLE = define_extension("role", sections=[section("role", lambda _input: "You code.")])


async def test_an_idle_input_is_admitted_with_its_planned_request_in_one_commit(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    rig = await open_rig(
        faux_response(faux_tool_call("effect")),
        faux_response("done"),
        extensions=[ROLE, ledger_tool(tmp_path / "ledger")],
    )
    before = len(stored(rig))

    assert (await rig.ask(Input("go"))).status == "done"

    commits = stored(rig)[before:]
    admission = commits[0]
    assert [e.kind for e in admission.entries] == [USER, SYSTEM]
    assert generation_starts([admission]) == ["request"]
    assert len(commits) == 5  # admission, response, intent, result + settlement, answer
    assert await rig.kinds() == [USER, SYSTEM, ASSISTANT, TOOL_RESULT, ASSISTANT]
    request = rig.faux.requests[0].context
    assert request.system_prompt == "<role>\nYou code.\n</role>"
    assert [m.role for m in request.messages] == ["user"]


async def test_the_first_input_of_an_empty_conversation_is_planned_too(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(faux_response("hello"), extensions=[ROLE])
    assert await rig.kinds() == []

    assert (await rig.ask("hi")).status == "done"

    assert generation_starts(stored(rig)) == ["request"]
    assert await rig.kinds() == [USER, SYSTEM, ASSISTANT]


async def test_a_commit_after_the_planning_makes_the_generation_prepare_itself(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(faux_response("hello"))
    renders: list[int] = []

    async def render(_input: Any) -> str:
        renders.append(1)
        if len(renders) == 1:  # a commit lands while the admission is being planned
            await rig.harness.session.commit(lambda tx: tx.create_conversation(Ownerless()))
        return "You code."

    rig.harness.registry.install(define_extension("busy", sections=[section("r", render)]))

    assert (await rig.ask("hi")).status == "done"

    assert generation_starts(stored(rig)) == ["prepare"]
    assert len(renders) == 2  # planned, found stale, prepared again
    entries = await rig.transcript()
    assert [e.kind for e in entries] == [USER, SYSTEM, ASSISTANT]
    assert message(entries[1])["sections"] == {"r": "<r>\nYou code.\n</r>"}


class SettlingStorage(MemoryStorage):
    """Returns from a commit only after ``in_window`` ran, as SqliteStorage settles a
    commit (its ``last_seq`` already moved) a loop iteration before the line takes it in."""

    in_window: Callable[[], Awaitable[None]] | None = None

    async def commit(self, writes: Sequence[Write]) -> int:
        seq = await super().commit(writes)
        hook, self.in_window = self.in_window, None
        if hook is not None:
            await hook()
        return seq


async def test_a_plan_begun_while_a_stored_commit_was_not_taken_in_yet_is_not_used(
    open_rig: RigFactory,
) -> None:
    storage = SettlingStorage()
    rig = await open_rig(faux_response("hello"), storage=storage)
    renders: list[int] = []

    async def render(_input: Any) -> str:
        renders.append(1)
        return "You code."

    rig.harness.registry.install(define_extension("busy", sections=[section("r", render)]))
    asking: list[asyncio.Future[Any]] = []

    async def plan_in_the_window() -> None:
        asking.append(asyncio.ensure_future(rig.ask("hi")))
        for _ in range(200):  # the input is planned while this commit is not taken in
            if renders:
                return
            await asyncio.sleep(0)

    storage.in_window = plan_in_the_window
    await rig.harness.session.commit(lambda tx: tx.create_conversation(Ownerless()))

    assert renders == [1]
    assert (await within(asking[0])).status == "done"
    # The plan judged the state before that commit: found stale, prepared again.
    assert generation_starts(stored(rig)) == ["prepare"]
    assert len(renders) == 2


async def test_a_plan_that_fails_to_apply_never_costs_the_input(
    open_rig: RigFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    apply = Preparation.apply

    async def broken(self: Preparation, tx: Any, tail: int | None = None) -> Any:
        if tail is not None:  # the admission's (the prepare phase passes none)
            raise RuntimeError("plan broke")
        return await apply(self, tx, tail)

    monkeypatch.setattr(Preparation, "apply", broken)
    rig = await open_rig(faux_response("hello"), extensions=[ROLE])

    assert (await rig.ask("hi")).status == "done"
    assert [r.code for r in rig.reports] == ["admission_plan_failed"]
    assert generation_starts(stored(rig)) == ["prepare"]
    assert await rig.kinds() == [USER, SYSTEM, ASSISTANT]


async def test_a_crash_right_after_the_admission_resumes_at_request_with_nothing_doubled(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    store, copy = tmp_path / "session.sqlite", tmp_path / "after-admission"

    def copy_admission(info: CommitInfo) -> None:
        if any(e.kind == USER for e in info.entries):
            snapshot(store, copy)

    rig = await open_rig(
        faux_response("hello"), storage=await SqliteStorage.open(store), extensions=[ROLE]
    )
    rig.harness.session.subscribe(copy_admission)
    assert (await rig.ask("hi")).status == "done"
    await within(rig.harness.close())

    resumed = await open_rig(
        faux_response("hello again"),
        storage=await SqliteStorage.open(copy / "session.sqlite"),
        extensions=[ROLE],
        root=False,
    )
    resumed.harness.resume()
    await within(resumed.wait_until(functools.partial(answered, resumed)))

    assert await resumed.kinds() == [USER, SYSTEM, ASSISTANT]
    assert resumed.faux.call_count == 1
    assert [m.role for m in resumed.faux.requests[0].context.messages] == ["user"]
