"""Usage and cost: the per-conversation ledger and the session total (R115, R116)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from pi_durable_tui.ai import (
    Cost,
    FauxUsage,
    ModelCost,
    ModelRef,
    Usage,
    faux_error,
    faux_model,
    faux_response,
    faux_tool_call,
)
from pi_durable_tui.harness import (
    USAGE_DOC,
    AgentChange,
    Conversation,
    Input,
    Settings,
    ToolApi,
    ToolResult,
    define_extension,
    define_tool,
)
from pi_durable_tui.storage import JsonObject
from tests.harness.harness_support import FAUX_MODEL, Gate, HarnessKit, within, write_note


class NoArgs(BaseModel):
    """No arguments."""


def usage(
    input: int = 0, output: int = 0, cost_input: float = 0.0, cost_output: float = 0.0
) -> JsonObject:
    """A stored usage record."""
    return {
        "input": input,
        "output": output,
        "cache_read": 0,
        "cache_write": 0,
        "total_tokens": input + output,
        "cost": {
            "input": cost_input,
            "output": cost_output,
            "cache_read": 0.0,
            "cache_write": 0.0,
            "total": cost_input + cost_output,
        },
    }


def summed(*records: Any) -> JsonObject:
    """Sum stored usage records field by field."""
    total = usage()
    for record in records:
        for key in ("input", "output", "cache_read", "cache_write", "total_tokens"):
            total[key] += record[key]
        for key in total["cost"]:
            total["cost"][key] += record["cost"][key]
    return total


async def ledger(conversation: Conversation) -> JsonObject:
    return await conversation.snapshot(USAGE_DOC) or {}


async def assistant_messages(kit: HarnessKit, conversation: Conversation) -> list[Any]:
    return [
        entry.model[0] if entry.model else None
        for entry in await kit.transcript(conversation)
        if entry.kind == "pi.assistant"
    ]


async def assistant_usages(kit: HarnessKit, conversation: Conversation) -> list[Any]:
    return [message["usage"] for message in await assistant_messages(kit, conversation)]


def priced(kit: HarnessKit) -> ModelRef:
    """Serve a faux model priced at $2 / $4 per million input / output tokens."""
    model = kit.faux.add_model(faux_model("priced", cost=ModelCost(input=2.0, output=4.0)))
    kit.models.add(model)
    return ModelRef("faux", "priced")


async def test_r115_an_answer_adds_its_usage_and_cost_under_provider_and_model(
    kit: HarnessKit,
) -> None:
    root = await kit.root(model=priced(kit))
    kit.script(faux_response("ok", usage=FauxUsage(input=500_000, output=250_000)))

    await within((await root.submit("hi")).wait())

    assert await ledger(root) == {
        "models": {"faux/priced": usage(500_000, 250_000, cost_input=1.0, cost_output=1.0)},
        "tools": {},
    }


async def test_r115_failed_attempts_and_the_answer_all_count(kit: HarnessKit) -> None:
    kit.settings = Settings.model_validate({"retry": {"base_delay_ms": 0}})
    root = await kit.root()
    kit.script(
        faux_error("overloaded", "partial text", status=529, retryable=True),
        faux_response("ok", usage=FauxUsage(input=10, output=2)),
    )

    record = await within((await root.submit("hi")).wait())

    assert record.status == "done"
    usages = await assistant_usages(kit, root)
    assert len(usages) == 2
    assert usages[0]["input"] > 0
    assert (await ledger(root))["models"] == {"faux/faux-1": summed(*usages)}


async def test_r115_a_converted_aborted_partial_counts(kit: HarnessKit) -> None:
    kit.model_gate = Gate()
    root = await kit.root()
    kit.script(faux_response("a long answer that will be cut", usage=FauxUsage(input=40)))
    await root.submit("hi")

    async def partial_committed() -> bool:
        generation = (await kit.live(root)).get("generation") or {}
        return "message" in generation

    await kit.until(partial_committed)
    await within(root.abort())

    [message] = await assistant_messages(kit, root)
    assert message["stop_reason"] == "aborted"
    assert message["usage"]["input"] > 0
    assert (await ledger(root))["models"] == {"faux/faux-1": summed(message["usage"])}


async def test_r115_a_tool_result_with_usage_adds_it_under_the_tool_name(kit: HarnessKit) -> None:
    async def execute(args: NoArgs, api: ToolApi) -> ToolResult:
        spent = Usage(input=3, output=4, total_tokens=7, cost=Cost(input=0.5, total=0.5))
        return ToolResult(content="looked it up", usage=spent)

    kit.install(
        define_extension(
            "search",
            tools=[define_tool("search", description="s", parameters=NoArgs, execute=execute)],
        )
    )
    kit.script(faux_response(faux_tool_call("search")), faux_response("found"))
    root = await kit.root()

    await within((await root.submit(Input("find"))).wait())

    tools = (await ledger(root))["tools"]
    assert tools == {"search": usage(3, 4, cost_input=0.5)}


async def test_r116_a_fork_starts_with_an_empty_ledger(kit: HarnessKit) -> None:
    root = await kit.root()
    kit.script(faux_response("ok", usage=FauxUsage(input=5, output=5)))
    await within((await root.submit("hi")).wait())
    note = await write_note(root)

    fork = await root.fork(note)

    assert await ledger(fork) == {"models": {}, "tools": {}}
    assert (await ledger(root))["models"] != {}


async def test_r116_harness_usage_sums_every_conversation_models_and_tools(
    kit: HarnessKit,
) -> None:
    async def execute(args: NoArgs, api: ToolApi) -> ToolResult:
        return ToolResult(content="t", usage=Usage(input=1, output=1, total_tokens=2))

    kit.install(
        define_extension(
            "t", tools=[define_tool("t", description="t", parameters=NoArgs, execute=execute)]
        )
    )
    root = await kit.root()
    other = await kit.harness.create_conversation(agent=AgentChange(model=FAUX_MODEL))
    kit.script(
        faux_response(faux_tool_call("t"), usage=FauxUsage(input=10, output=1)),
        faux_response("a", usage=FauxUsage(input=20, output=2)),
        faux_response("b", usage=FauxUsage(input=300, output=3)),
    )
    await within((await root.submit("one")).wait())
    await within((await other.submit("two")).wait())

    total = await kit.harness.usage()

    assert total == usage(10 + 20 + 300 + 1, 1 + 2 + 3 + 1)
    before = dict(total)
    assert await kit.harness.usage() == before  # a read: nothing stored, nothing changed
