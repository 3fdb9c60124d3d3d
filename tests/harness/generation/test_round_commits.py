"""What a tool round commits, and a crash after each of its commits (issue 14, R83, R90, R95).

A round stores three commits, counted through the Session's publications: the
model's response with its tool task (R89), the tool's intent (R93), and its result
(R106) with the round's settlement, which also prepares the successor generation,
created at ``request`` (R83, R90). ``after_tools`` observers see committed results
first, so such a round settles in a fourth commit; a steer placed by the round's
boundary changes the context, so the successor then prepares itself.

The crash tests copy the SQLite store (database and WAL) the moment each commit
of the first round is published, as a ``kill -9`` right after that commit would
leave it, reopen each copy and run it to the end: an unsafe tool never runs again
once its intent is stored, the round ends with exactly one result, and the run
is answered.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.harness import (
    TOOL_RESULT,
    Input,
    define_extension,
    hook,
)
from pi_durable_tui.harness.generation._preparation import Preparation
from pi_durable_tui.kernel import CommitInfo
from pi_durable_tui.storage import SqliteStorage
from tests.harness.generation.commit_support import (
    answered,
    generation_starts,
    ledger_tool,
    snapshot,
    stored,
)
from tests.harness.run_support import RigFactory, message, start_gate, within


def round_commits(commits: list[CommitInfo]) -> list[CommitInfo]:
    """The stored commits from the first tool-calling answer up to the next one."""
    starts = [i for i, c in enumerate(commits) if any(e.kind == "pi.assistant" for e in c.entries)]
    return commits[starts[0] : starts[1]]


async def test_a_tool_round_stores_three_commits_the_result_settling_the_round(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    rig = await open_rig(
        faux_response(faux_tool_call("effect")),
        faux_response(faux_tool_call("effect")),
        faux_response("done"),
        extensions=[ledger_tool(tmp_path / "ledger")],
    )
    assert (await rig.ask(Input("go"))).status == "done"

    commits = round_commits(stored(rig))
    assert len(commits) == 3
    response, intent, result = commits
    assert [t.kind for t in response.tasks] == ["pi.tool", "pi.generation"]
    assert [(t.kind, t.state["checkpoint"]["phase"]) for t in intent.tasks] == [
        ("pi.tool", "execute")
    ]
    assert [e.kind for e in result.entries] == [TOOL_RESULT]
    ended = sorted(t.kind for t in result.tasks if not t.is_live)
    assert ended == ["pi.generation", "pi.tool"]  # the tool, and the round's generation
    assert generation_starts([result]) == ["request"]


async def test_a_parallel_round_settles_with_its_last_result(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    rig = await open_rig(
        faux_response(faux_tool_call("effect", id="a"), faux_tool_call("effect", id="b")),
        faux_response(faux_tool_call("effect")),
        faux_response("done"),
        extensions=[ledger_tool(tmp_path / "ledger")],
    )
    assert (await rig.ask(Input("go"))).status == "done"

    commits = round_commits(stored(rig))
    results = [c for c in commits if any(e.kind == TOOL_RESULT for e in c.entries)]
    assert len(commits) == 5  # response, two intents, two results
    assert [generation_starts([c]) for c in results] == [[], ["request"]]


async def test_a_round_observed_by_after_tools_settles_in_a_commit_of_its_own_r90(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    seen: list[int] = []

    def observe(assistant: Any, results: list[Any], runtime: Any) -> None:
        seen.extend(result.entry_id for result in results)

    rig = await open_rig(
        faux_response(faux_tool_call("effect")),
        faux_response(faux_tool_call("effect")),
        faux_response("done"),
        extensions=[
            ledger_tool(tmp_path / "ledger"),
            define_extension("observer", hooks=[hook("pi.generation", after_tools=observe)]),
        ],
    )
    assert (await rig.ask(Input("go"))).status == "done"

    commits = round_commits(stored(rig))
    assert len(commits) == 4
    assert generation_starts([commits[2]]) == []
    assert generation_starts([commits[3]]) == ["request"]
    results = [e.id for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert seen == results  # the observer saw each committed result


async def test_a_steer_placed_by_the_round_makes_the_successor_prepare_itself_r64(
    open_rig: RigFactory,
) -> None:
    rig, gate, first = await start_gate(open_rig, "both done")
    steer = await within(rig.root.submit(Input("also this", when_busy="steer")))
    gate.opened.set()
    assert (await within(first.wait())).status == "done"
    assert (await within(steer.wait())).status == "done"

    assert generation_starts(stored(rig))[-1] == "prepare"
    kinds = [e.kind for e in await rig.transcript()]
    assert kinds[-3:] == [TOOL_RESULT, "pi.user", "pi.assistant"]


async def test_a_crash_after_each_commit_of_a_round_never_repeats_the_effect_nor_loses_its_result(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    store, ledger = tmp_path / "session.sqlite", tmp_path / "ledger"
    copies: list[Path] = []
    seen = {"round": 0, "stored": 0}

    def copy_each(info: CommitInfo) -> None:
        if not info.stored:
            return
        if any(e.kind == "pi.assistant" for e in info.entries):
            seen["round"] += 1
        if seen["round"] == 1:
            copies.append(tmp_path / f"after-{len(copies) + 1}")
            snapshot(store, copies[-1])

    rig = await open_rig(
        faux_response(faux_tool_call("effect")),
        faux_response("done"),
        storage=await SqliteStorage.open(store),
        extensions=[ledger_tool(ledger)],
    )
    rig.harness.session.subscribe(copy_each)
    assert (await rig.ask(Input("go"))).status == "done"
    await within(rig.harness.close())
    assert len(copies) == 3  # response, intent, result with the settlement

    outcomes = []
    for index, copy in enumerate(copies, start=1):
        ledger.unlink(missing_ok=True)
        resumed = await open_rig(
            faux_response("done"),
            storage=await SqliteStorage.open(copy / "session.sqlite"),
            extensions=[ledger_tool(ledger)],
            root=False,
        )
        resumed.harness.resume()
        await within(resumed.wait_until(functools.partial(answered, resumed)))
        results = [e for e in await resumed.transcript() if e.kind == TOOL_RESULT]
        runs = ledger.read_text().count("ran") if ledger.exists() else 0
        outcomes.append((index, runs, len(results), _codes(results[0])))
        await within(resumed.harness.close())

    assert outcomes == [
        (1, 1, 1, []),  # the intent was not stored: the call runs now, once
        (2, 0, 1, ["interrupted"]),  # intent stored, no result: never run again (R95)
        (3, 0, 1, []),  # the result and the settlement are kept
    ]


def _codes(entry: Any) -> list[str]:
    data = entry.data if isinstance(entry.data, dict) else {}
    return [d.get("code") for d in data.get("diagnostics") or [] if d.get("severity") == "error"]


async def test_a_settlement_that_fails_in_the_result_commit_never_costs_the_result(
    open_rig: RigFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    apply = Preparation.apply

    async def broken(self: Preparation, tx: Any, tail: int | None = None) -> Any:
        # Only the settlement riding on a result: its planned view holds the
        # round's response (the admission's, of a first input, is empty).
        if tail is not None and self.view.entries:
            raise RuntimeError("settlement broke")
        return await apply(self, tx, tail)

    monkeypatch.setattr(Preparation, "apply", broken)
    rig = await open_rig(
        faux_response(faux_tool_call("effect")),
        faux_response("done"),
        extensions=[ledger_tool(tmp_path / "ledger")],
    )
    assert (await rig.ask(Input("go"))).status == "done"

    results = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert [message(e)["content"] for e in results] == [[{"type": "text", "text": "effect done"}]]
    assert [r.code for r in rig.reports] == ["settlement_failed"]
    assert (tmp_path / "ledger").read_text() == "ran\n"
