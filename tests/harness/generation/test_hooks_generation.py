"""Generation hooks: who runs them, in which order, what a throw does, what they hold (R117).

``before_request`` replacement and the ``on_yield`` continuation itself are
covered in ``test_generation.py`` (R65, R84); tool and compaction hooks in their
own files.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from pi_durable_tui.ai import (
    AssistantMessage,
    faux_error,
    faux_response,
    faux_tool_call,
)
from pi_durable_tui.harness import (
    Continue,
    HarnessRuntime,
    Input,
    Settings,
    ToolApi,
    ToolResult,
    define_extension,
    define_task,
    define_tool,
    hook,
)
from pi_durable_tui.kernel import Aborted, Completed, TaskOwned, Tx
from pi_durable_tui.storage import TaskRecord
from tests.harness.harness_support import Gate, HarnessKit, entry_text, within


class NoArgs(BaseModel):
    """No arguments."""


def user_text(messages: list[Any]) -> list[str]:
    return [m["content"] for m in messages if m.get("role") == "user"]


async def test_r117_before_request_hooks_chain_in_extension_order_from_selected_extensions_only(
    kit: HarnessKit,
) -> None:
    seen: list[list[str]] = []

    def appending(text: str) -> Any:
        def before_request(messages: list[Any], runtime: HarnessRuntime) -> list[Any]:
            seen.append(user_text(messages))
            return [*messages, {"role": "user", "content": text, "timestamp": 0}]

        return before_request

    kit.install(
        define_extension("first", hooks=[hook("pi.generation", before_request=appending("A"))]),
        define_extension("skipped", hooks=[hook("pi.generation", before_request=appending("X"))]),
        define_extension("second", hooks=[hook("pi.generation", before_request=appending("B"))]),
    )
    kit.script(faux_response("ok"))
    root = await kit.root(extensions=["first", "second"])

    await within((await root.submit("hi")).wait())

    assert seen == [["hi"], ["hi", "A"]]
    sent = kit.faux.requests[-1].context.messages
    assert [m.content for m in sent if m.role == "user"] == ["hi", "A", "B"]
    assert [entry_text(e) for e in await kit.transcript(root) if e.kind == "pi.user"] == ["hi"]


async def test_r117_after_response_observes_every_terminal_message_before_it_is_filed(
    kit: HarnessKit,
) -> None:
    kit.settings = Settings.model_validate({"retry": {"base_delay_ms": 0}})
    observed: list[tuple[str, int]] = []
    root_ref: list[Any] = []

    async def after_response(message: AssistantMessage, runtime: HarnessRuntime) -> None:
        filed = [e for e in await kit.transcript(root_ref[0]) if e.kind == "pi.assistant"]
        observed.append((message.stop_reason, len(filed)))

    kit.install(
        define_extension("obs", hooks=[hook("pi.generation", after_response=after_response)])
    )
    kit.script(faux_error("overloaded", status=529, retryable=True), faux_response("ok"))
    root = await kit.root()
    root_ref.append(root)

    record = await within((await root.submit("hi")).wait())

    assert record.status == "done"
    assert observed == [("error", 0), ("stop", 1)]


async def test_r117_after_tools_observes_the_calling_answer_and_the_results_in_call_order(
    kit: HarnessKit,
) -> None:
    observed: list[Any] = []

    def after_tools(assistant: Any, results: list[Any], runtime: HarnessRuntime) -> None:
        observed.append((assistant, results))

    async def echo(args: NoArgs, api: ToolApi) -> ToolResult:
        return ToolResult(content=f"from {api.call_id}")

    kit.install(
        define_extension(
            "tools",
            tools=[define_tool("echo", description="e", parameters=NoArgs, execute=echo)],
            hooks=[hook("pi.generation", after_tools=after_tools)],
        )
    )
    kit.script(
        faux_response(faux_tool_call("echo", id="c1"), faux_tool_call("echo", id="c2")),
        faux_response("done"),
    )
    root = await kit.root()

    await within((await root.submit(Input("go"))).wait())

    [(assistant, results)] = observed
    assert [block["id"] for block in assistant["content"]] == ["c1", "c2"]
    assert [r["tool_call_id"] for r in results] == ["c1", "c2"]
    assert [r["content"][0]["text"] for r in results] == ["from c1", "from c2"]


async def test_r117_observers_and_on_yield_that_raise_are_reported_and_the_run_goes_on(
    kit: HarnessKit,
) -> None:
    def broken(name: str) -> Any:
        def fail(*args: Any) -> None:
            raise RuntimeError(f"{name} broke")

        return fail

    async def echo(args: NoArgs, api: ToolApi) -> ToolResult:
        return ToolResult(content="echo")

    kit.install(
        define_extension(
            "broken",
            tools=[define_tool("echo", description="e", parameters=NoArgs, execute=echo)],
            hooks=[
                hook(
                    "pi.generation",
                    after_response=broken("after_response"),
                    after_tools=broken("after_tools"),
                    on_yield=broken("on_yield"),
                )
            ],
        )
    )
    kit.script(faux_response(faux_tool_call("echo")), faux_response("done"))
    root = await kit.root()

    record = await within((await root.submit("go")).wait())

    assert record.status == "done"
    messages = [r.message for r in kit.reports]
    for name in ("after_response", "after_tools", "on_yield"):
        assert f"{name} hook raised: {name} broke" in messages


async def test_r65_r117_the_first_continue_in_extension_order_wins(kit: HarnessKit) -> None:
    asked: list[str] = []

    def yielding(name: str) -> Any:
        def on_yield(answer: AssistantMessage, runtime: HarnessRuntime) -> Continue | None:
            asked.append(name)
            return Continue(f"continue from {name}") if len(asked) == 1 else None

        return on_yield

    kit.install(
        define_extension("one", hooks=[hook("pi.generation", on_yield=yielding("one"))]),
        define_extension("two", hooks=[hook("pi.generation", on_yield=yielding("two"))]),
    )
    kit.script(faux_response("first"), faux_response("second"))
    root = await kit.root()

    record = await within((await root.submit("go")).wait())

    assert asked == ["one", "one", "two"]  # "two" is not asked once "one" continued
    users = [entry_text(e) for e in await kit.transcript(root) if e.kind == "pi.user"]
    assert users == ["go", "continue from one"]
    assert record.status == "done"


async def test_r40_r117_hooks_share_the_generation_memos_first_writer_wins(
    kit: HarnessKit,
) -> None:
    kit.settings = Settings.model_validate({"retry": {"base_delay_ms": 0}})
    memos: list[Any] = []

    async def before_request(messages: list[Any], runtime: HarnessRuntime) -> None:
        memos.append(await runtime.memo("hooks:first-attempt", len(memos) + 1))

    async def after_response(message: AssistantMessage, runtime: HarnessRuntime) -> None:
        memos.append(await runtime.memo("hooks:first-attempt"))

    kit.install(
        define_extension(
            "memo",
            hooks=[
                hook("pi.generation", before_request=before_request, after_response=after_response)
            ],
        )
    )
    kit.script(faux_error("overloaded", status=529, retryable=True), faux_response("ok"))
    root = await kit.root()

    await within((await root.submit("go")).wait())

    assert memos == [1, 1, 1, 1]


async def test_r53_r117_work_a_hook_creates_holds_the_generation_while_the_next_turn_runs(
    kit: HarnessKit,
) -> None:
    gate = Gate()

    async def wait_at_gate(task: TaskRecord, runtime: HarnessRuntime) -> None:
        await gate.passage()
        await runtime.commit(lambda tx: Completed(None))

    async def abort(task: TaskRecord, runtime: HarnessRuntime) -> None:
        await runtime.commit(lambda tx: Aborted())

    side_job = define_task(
        "app.side-job",
        initial=lambda _input: {"phase": "run"},
        phases={"run": wait_at_gate},
        abort=abort,
    )
    started: list[int] = []

    async def after_response(message: AssistantMessage, runtime: HarnessRuntime) -> None:
        if started:
            return
        definition = runtime.definition(side_job)

        def create(tx: Tx) -> None:
            started.append(
                tx.create_task(definition, None, ownership=TaskOwned(runtime.task_id)).id
            )

        await runtime.commit(create)

    kit.install(
        define_extension(
            "side",
            tasks=[side_job],
            hooks=[hook("pi.generation", after_response=after_response)],
        )
    )
    kit.script(faux_response("first answer"), faux_response("second answer"))
    root = await kit.root()

    first = await within((await root.submit("one")).wait())
    await gate.wait_reached()

    graph = kit.harness.task_graph()["tasks"]
    generation = graph[str(first_generation(graph))]
    assert generation["state"] == {"status": "completing", "outcome": "completed"}
    assert first.status == "done"
    assert "run" not in await kit.live(root)

    second = await within((await root.submit("two")).wait())
    assert second.status == "done"
    assert str(first_generation(graph)) in kit.harness.task_graph()["tasks"]

    gate.open()
    await within(kit.harness.wait_for_idle())
    assert kit.harness.task_graph() == {"tasks": {}}


def first_generation(graph: dict[str, Any]) -> int:
    return min(int(i) for i, node in graph.items() if node["kind"] == "pi.generation")


async def test_r117_a_before_request_hook_that_changes_a_message_in_place_is_seen_by_the_request(
    kit: HarnessKit,
) -> None:
    calls: list[int] = []

    def before_request(messages: list[Any], runtime: HarnessRuntime) -> None:
        calls.append(len(calls))
        if len(calls) == 2:
            messages[0]["content"] = "changed in place"

    kit.install(
        define_extension("editor", hooks=[hook("pi.generation", before_request=before_request)])
    )
    kit.script(faux_response("one"), faux_response("two"))
    root = await kit.root(extensions=["editor"])

    await within((await root.submit("first")).wait())
    await within((await root.submit("second")).wait())

    first_sent = kit.faux.requests[-1].context.messages[0]
    assert first_sent.content == "changed in place"
