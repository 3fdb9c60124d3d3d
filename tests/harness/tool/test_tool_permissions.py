"""The permission gate of ``pi.tool`` and durable approvals (issue 13; DESIGN.md section 7).

A call that needs a decision is committed as waiting (``pi.live`` slot
``approval.request``, phase ``approval``) before anything runs; ``Harness.decide``
commits the decision before the tool starts; a close while waiting (the store
is real SQLite) resumes with the same request, and a call allowed once runs once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.harness import (
    PERMISSIONS_DOC,
    TOOL_RESULT,
    DecisionRejected,
    Input,
    PermissionSettings,
    RuleSpec,
    Settings,
    ToolAccess,
    ToolApi,
    ToolResult,
    define_extension,
    watch_events,
)
from pi_durable_tui.storage import SqliteStorage
from tests.harness.run_support import Rig, RigFactory, make_tool, message, within


class Ledger:
    """A ``shell`` tool (main argument: a command) that records each execution."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    def extension(self) -> Any:
        async def execute(args: Any, _api: ToolApi) -> ToolResult:
            self.runs.append(args.text)
            return ToolResult(content=f"ran {args.text}")

        tool = make_tool("shell", execute, access=ToolAccess("command", lambda a: a.text))
        return define_extension("probe", tools=[tool])


def settings(
    mode: str = "auto-edit", on_ask: Literal["wait", "refuse"] = "wait", **rules: tuple[str, ...]
) -> Settings:
    specs = tuple(
        RuleSpec(rule=rule, effect=effect, source="test")  # type: ignore[arg-type]
        for effect, listed in rules.items()
        for rule in listed
    )
    return Settings(
        permissions=PermissionSettings(
            mode=mode,  # type: ignore[arg-type]
            rules=specs,
            on_ask=on_ask,
            hint="rerun with --allow 'shell(RULE)'",
        )
    )


ShellRig = Any
"""``await shell(*responses, settings=, storage=, root=)``: a rig with the ledger's tool."""


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
def shell(open_rig: RigFactory, ledger: Ledger) -> ShellRig:
    """Open a rig whose one extension is ``ledger``'s ``shell`` tool."""

    async def factory(*responses: Any, **options: Any) -> Rig:
        return await open_rig(*responses, extensions=[ledger.extension()], **options)

    return factory


def calls(*commands: str) -> Any:
    return faux_response(
        *[faux_tool_call("shell", {"text": c}, id=f"call-{i}") for i, c in enumerate(commands)]
    )


async def results(rig: Rig) -> list[Any]:
    return [e for e in await rig.transcript() if e.kind == TOOL_RESULT]


def code(result: Any) -> str:
    return str(result.data["diagnostics"][0]["code"])


async def waiting(rig: Rig, count: int = 1) -> list[dict[str, Any]]:
    """Wait until ``count`` calls wait for a decision; return their slots."""
    found: list[dict[str, Any]] = []

    def ready() -> bool:
        live = rig.live_changes()
        if not live:
            return False
        slots = live[-1][1].get("tools") or []
        found[:] = [
            s
            for s in slots
            if "request" in (s.get("approval") or {}) and "decision" not in s["approval"]
        ]
        return len(found) >= count

    await within(rig.wait_until(ready))
    return found


async def test_a_call_the_mode_allows_runs_without_a_request(
    shell: ShellRig, ledger: Ledger
) -> None:
    rig = await shell(
        calls("make"),
        faux_response("done"),
        settings=settings("auto"),
    )
    assert (await rig.ask("go")).status == "done"
    assert ledger.runs == ["make"]
    assert not any("approval" in str(v) for _, v, _ in rig.live_changes())


@pytest.mark.parametrize(
    ("command", "chosen", "reason"),
    [
        ("curl x", settings("auto", deny=("shell(curl:*)",)), "shell(curl:*) (test)"),
        ("make", settings("plan"), "plan mode"),
    ],
    ids=["deny-rule", "plan-mode"],
)
async def test_a_refused_call_says_why_a_rule_or_the_mode_and_nothing_runs(
    shell: ShellRig, ledger: Ledger, command: str, chosen: Settings, reason: str
) -> None:
    rig = await shell(calls(command), faux_response("done"), settings=chosen)
    assert (await rig.ask("go")).status == "done"
    [result] = await results(rig)
    assert code(result) == "permission_denied"
    assert reason in str(message(result)["content"])
    assert ledger.runs == []


async def test_headless_a_call_that_would_wait_is_refused_at_once_with_how_to_allow_it(
    shell: ShellRig, ledger: Ledger
) -> None:
    rig = await shell(
        calls("make test"),
        faux_response("done"),
        settings=settings(on_ask="refuse"),
    )
    stream = await watch_events(rig.harness, 1, tail=0)
    record = await rig.ask("go")
    await stream.stop(drain=True)
    events = [event async for batch in stream for event in batch]

    assert record.status == "done"
    [result] = await results(rig)
    assert code(result) == "permission_required"
    text = str(message(result)["content"])
    assert "needs the user's approval" in text
    assert "--allow 'shell(RULE)'" in text
    assert "Do not try to change the permission settings yourself" in text
    assert ledger.runs == []
    types = [e["type"] for e in events]
    assert types.index("permission_request") < types.index("permission_decision")
    [decision] = [e for e in events if e["type"] == "permission_decision"]
    assert decision["decision"] == {"choice": "deny", "by": "headless"}


async def test_a_request_is_committed_before_anything_runs_and_allow_once_runs_it_once(
    shell: ShellRig, ledger: Ledger
) -> None:
    rig = await shell(
        calls("make test"),
        faux_response("done"),
        settings=settings(),
    )
    handle = await within(rig.root.submit(Input("go")))
    [slot] = await waiting(rig)

    assert slot["approval"]["request"]["argument"] == "make test"
    assert slot["approval"]["request"]["suggestion"] == "shell(make test)"
    [task] = await rig.tasks("pi.tool")
    assert task.state["checkpoint"]["phase"] == "approval"
    assert ledger.runs == []

    await within(rig.harness.decide(1, slot["call_id"], "once"))
    record = await within(handle.wait())
    assert record.status == "done"
    assert ledger.runs == ["make test"]
    with pytest.raises(DecisionRejected):
        await rig.harness.decide(1, slot["call_id"], "once")


async def test_a_denial_tells_the_model_what_the_user_said(shell: ShellRig, ledger: Ledger) -> None:
    rig = await shell(
        calls("rm -rf build"),
        faux_response("ok"),
        settings=settings(),
    )
    handle = await within(rig.root.submit(Input("go")))
    [slot] = await waiting(rig)
    await within(rig.harness.decide(1, slot["call_id"], "deny", message="use make clean"))
    await within(handle.wait())

    [result] = await results(rig)
    assert code(result) == "permission_denied"
    assert "The user said: use make clean" in str(message(result)["content"])
    assert ledger.runs == []


async def test_allow_always_in_the_session_adds_a_rule_that_later_calls_match(
    shell: ShellRig, ledger: Ledger
) -> None:
    rig = await shell(
        calls("make test"),
        calls("make test"),
        faux_response("done"),
        settings=settings(),
    )
    handle = await within(rig.root.submit(Input("go")))
    [slot] = await waiting(rig)
    await within(rig.harness.decide(1, slot["call_id"], "session"))
    assert (await within(handle.wait())).status == "done"

    assert ledger.runs == ["make test", "make test"]
    chosen = await rig.harness.session.snapshot(PERMISSIONS_DOC)
    assert chosen == {"allow": ["shell(make test)"]}
    policy = await rig.harness.permission_policy()
    assert [(r.text, r.source) for r in policy.rules] == [("shell(make test)", "session")]


async def test_several_calls_of_one_round_each_wait_for_their_own_decision(
    shell: ShellRig, ledger: Ledger
) -> None:
    rig = await shell(
        calls("one", "two", "three"),
        faux_response("done"),
        settings=settings(),
    )
    handle = await within(rig.root.submit(Input("go")))
    slots = await waiting(rig, 3)
    assert [s["approval"]["request"]["argument"] for s in slots] == ["one", "two", "three"]
    await within(rig.harness.decide(1, "call-1", "deny"))
    await within(rig.harness.decide(1, "call-2", "once"))
    await within(rig.harness.decide(1, "call-0", "once"))
    await within(handle.wait())

    assert sorted(ledger.runs) == ["one", "three"]
    outcomes = {
        message(r)["tool_call_id"]: code(r) if message(r)["is_error"] else "ran"
        for r in await results(rig)
    }
    assert outcomes == {"call-0": "ran", "call-1": "permission_denied", "call-2": "ran"}


async def test_aborting_the_turn_ends_the_wait_and_nothing_runs(
    shell: ShellRig, ledger: Ledger
) -> None:
    rig = await shell(calls("make"), settings=settings())
    handle = await within(rig.root.submit(Input("go")))
    await waiting(rig)
    await within(rig.root.abort())
    await within(handle.wait())

    [result] = await results(rig)
    assert code(result) == "aborted"
    assert "stopped the turn before deciding" in str(message(result)["content"])
    assert ledger.runs == []


async def test_a_close_while_waiting_shows_the_same_request_again_and_it_runs_once(
    shell: ShellRig, ledger: Ledger, tmp_path: Path
) -> None:
    path = tmp_path / "session.sqlite"
    rig = await shell(
        calls("make test"),
        storage=await SqliteStorage.open(path),
        settings=settings(),
    )
    handle = await within(rig.root.submit(Input("go")))
    [before] = await waiting(rig)
    await within(rig.harness.close())

    again = await shell(
        faux_response("done"),
        storage=await SqliteStorage.open(path),
        root=False,
        settings=settings(),
    )
    again.harness.resume()
    live = await again.live()
    [slot] = live["tools"]
    assert slot["approval"] == before["approval"]
    assert ledger.runs == []

    await within(again.harness.decide(1, slot["call_id"], "once"))
    record = await within((await again.harness.submission(handle.id)).wait())
    assert record.status == "done"
    assert ledger.runs == ["make test"]


async def test_a_waiting_request_resumed_headless_is_refused(
    shell: ShellRig, ledger: Ledger, tmp_path: Path
) -> None:
    path = tmp_path / "session.sqlite"
    rig = await shell(
        calls("make test"),
        storage=await SqliteStorage.open(path),
        settings=settings(),
    )
    handle = await within(rig.root.submit(Input("go")))
    await waiting(rig)
    await within(rig.harness.close())

    again = await shell(
        faux_response("done"),
        storage=await SqliteStorage.open(path),
        root=False,
        settings=settings(on_ask="refuse"),
    )
    again.harness.resume()
    record = await within((await again.harness.submission(handle.id)).wait())
    assert record.status == "done"
    [result] = await results(again)
    assert code(result) == "permission_required"
    assert ledger.runs == []
