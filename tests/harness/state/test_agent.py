"""Agent configuration, resolution, the registry and settings (R29-R35).

Resolution order is checked on ``resolve_agent`` directly (a pure function);
what reaches the model (tools offered, the system prompt, stream options) and
hot reload are checked end to end through the faux provider's requests.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from pi_durable_tui.ai import ModelRef, faux_response, faux_tool_call
from pi_durable_tui.harness import (
    AGENT_DOC,
    UNSET,
    AgentChange,
    Extension,
    ExtensionEdit,
    HarnessRuntime,
    Input,
    Section,
    Settings,
    Tool,
    ToolApi,
    ToolRemoval,
    ToolResult,
    create_registry,
    define_extension,
    define_task,
    define_tool,
    hook,
    section,
    wrap_section,
    wrap_tool,
)
from pi_durable_tui.harness.state._agent import ResolvedAgent, resolve_agent
from pi_durable_tui.kernel import Aborted, Completed, ConversationOwned, Report, Running, Tx
from pi_durable_tui.storage import TaskRecord
from tests.harness.harness_support import Gate, GatedTool, HarnessKit, entry_text, within


class NoArgs(BaseModel):
    """No arguments."""


def tool(name: str, answer: str | None = None) -> Tool[NoArgs]:
    """A tool answering ``answer`` (its name by default)."""

    async def execute(args: NoArgs, api: ToolApi) -> ToolResult:
        return ToolResult(content=answer if answer is not None else name)

    return define_tool(name, description=f"The {name} tool.", parameters=NoArgs, execute=execute)


def text_section(key: str, text: str) -> Section:
    return section(key, lambda _input: text)


def resolve(
    stored: dict[str, Any] | None,
    *installed: Extension,
    default: list[str] | None = None,
) -> tuple[ResolvedAgent, list[Report]]:
    reports: list[Report] = []
    return resolve_agent(stored, installed, default, reports.append), reports


def names(agent: ResolvedAgent) -> dict[str, list[str]]:
    return {
        "extensions": [e.name for e in agent.extensions],
        "tools": [t.name for t in agent.tools],
        "sections": [s.key for s in agent.sections],
    }


# -- R29: configure --


async def test_r29_configure_replaces_given_fields_clears_none_and_leaves_unset(
    kit: HarnessKit,
) -> None:
    root = await kit.root(thinking_level="high", instructions="first")

    await root.configure(
        AgentChange(instructions="second", thinking_level=None, cwd=UNSET, model=UNSET)
    )

    assert await root.snapshot(AGENT_DOC) == {
        "model": {"provider": "faux", "model_id": "faux-1"},
        "cwd": str(kit.workdir),
        "instructions": "second",
    }


async def test_r29_extensions_and_tools_are_stored_as_names_and_never_checked_installed(
    kit: HarnessKit,
) -> None:
    extension = define_extension("ext", tools=[tool("alpha")])
    root = await kit.root()

    await root.configure(AgentChange(extensions=[extension, "missing"], tools=[tool("alpha")]))
    stored = await root.snapshot(AGENT_DOC) or {}
    assert stored["extensions"] == ["ext", "missing"]
    assert stored["tools"] == ["alpha"]

    await root.configure(
        AgentChange(extensions=ExtensionEdit(add=("b",), remove=("a",)), tools=ToolRemoval(("x",)))
    )
    stored = await root.snapshot(AGENT_DOC) or {}
    assert stored["extensions"] == {"add": ["b"], "remove": ["a"]}
    assert stored["tools"] == {"remove": ["x"]}


# -- R30: resolution --


def test_r30_the_base_selection_is_every_installed_extension_or_the_settings_default() -> None:
    a, b, c = (define_extension(n) for n in "abc")

    assert names(resolve(None, a, b, c)[0])["extensions"] == ["a", "b", "c"]
    assert names(resolve({}, a, b, c, default=["c", "a"])[0])["extensions"] == ["c", "a"]


def test_r30_an_array_selects_exactly_those_in_array_order_skipping_uninstalled_and_repeats() -> (
    None
):
    a, b, c = (define_extension(n) for n in "abc")

    agent, _ = resolve({"extensions": ["c", "gone", "a", "c"]}, a, b, c)

    assert names(agent)["extensions"] == ["c", "a"]


def test_r29_r30_an_extension_edit_always_edits_the_host_default_selection() -> None:
    a, b, c = (define_extension(n) for n in "abc")
    edit = {"extensions": {"add": ["c", "a"], "remove": ["b"]}}

    assert names(resolve(edit, a, b, c)[0])["extensions"] == ["a", "c"]
    assert names(resolve(edit, a, b, c, default=["b"])[0])["extensions"] == ["c", "a"]


def test_r30_a_later_same_name_tool_replaces_an_earlier_one_in_place() -> None:
    first = define_extension("first", tools=[tool("read"), tool("bash")])
    second = define_extension("second", tools=[tool("grep"), tool("read", "second read")])

    agent, _ = resolve(None, first, second)

    assert names(agent)["tools"] == ["read", "bash", "grep"]
    assert agent.tool("read") is second.tools[1]


def test_r30_tool_filters_keep_exact_names_in_array_order_or_drop_removed_names() -> None:
    extension = define_extension("e", tools=[tool("a"), tool("b"), tool("c")])

    assert names(resolve({"tools": ["c", "a", "c", "zz"]}, extension)[0])["tools"] == ["c", "a"]
    assert names(resolve({"tools": {"remove": ["b"]}}, extension)[0])["tools"] == ["a", "c"]


def test_r30_wrappers_run_in_extension_then_declaration_order_before_the_filter() -> None:
    def describe(suffix: str) -> Any:
        def wrap(target: Tool[Any]) -> Tool[Any]:
            return define_tool(
                target.name,
                description=target.description + suffix,
                parameters=target.parameters,
                execute=target.execute,
            )

        return wrap

    base = define_extension("base", tools=[tool("read")])
    one = define_extension(
        "one", wraps=[wrap_tool("read", describe(" 1a")), wrap_tool("read", describe(" 1b"))]
    )
    two = define_extension("two", wraps=[wrap_tool("read", describe(" 2"))])

    agent, reports = resolve({"tools": ["read"]}, base, two, one)

    read = agent.tool("read")
    assert read is not None
    assert read.description == "The read tool. 2 1a 1b"
    assert reports == []


def test_r30_sections_replace_same_keys_in_place_and_section_wrappers_apply() -> None:
    first = define_extension("first", sections=[text_section("a", "a1"), text_section("b", "b1")])
    second = define_extension(
        "second",
        sections=[text_section("c", "c2"), text_section("a", "a2")],
        wraps=[wrap_section("b", lambda s: section("b", lambda _input: "b wrapped"))],
    )

    agent, _ = resolve(None, first, second)

    assert names(agent)["sections"] == ["a", "b", "c"]
    assert agent.sections[0] is second.sections[1]
    assert agent.sections[1].render(None) == "b wrapped"  # type: ignore[arg-type]


def test_r30_hooks_come_from_the_selected_extensions_by_task_name_in_extension_order() -> None:
    def one(*args: Any) -> None: ...
    def two(*args: Any) -> None: ...
    def other(*args: Any) -> None: ...

    first = define_extension("first", hooks=[hook("pi.generation", before_request=one)])
    second = define_extension(
        "second",
        hooks=[hook("pi.generation", before_request=two), hook("pi.tool", before_tool=other)],
    )
    skipped = define_extension("skipped", hooks=[hook("pi.generation", before_request=other)])

    agent, _ = resolve({"extensions": ["second", "first"]}, first, skipped, second)

    assert agent.hooks("pi.generation", "before_request") == [two, one]
    assert agent.hooks("pi.tool", "before_tool") == [other]
    assert agent.hooks("pi.compaction", "before_compact") == []


def test_r30_model_thinking_level_and_cwd_default_to_none_off_and_none() -> None:
    empty, _ = resolve(None)
    stored, _ = resolve(
        {"model": {"provider": "p", "model_id": "m"}, "thinking_level": "low", "cwd": "/w"}
    )

    assert (empty.model, empty.thinking_level, empty.cwd) == (None, "off", None)
    assert (stored.model, stored.thinking_level, stored.cwd) == (ModelRef("p", "m"), "low", "/w")


# -- R31: wrappers that fail --


def test_r31_a_wrapper_that_raises_or_renames_drops_its_target_and_is_reported() -> None:
    def boom(target: Any) -> Any:
        raise RuntimeError("boom")

    base = define_extension(
        "base", tools=[tool("read"), tool("bash")], sections=[text_section("a", "a")]
    )
    wrappers = define_extension(
        "wrappers",
        wraps=[
            wrap_tool("read", boom),
            wrap_tool("bash", lambda t: tool("shell")),
            wrap_section("a", boom),
            wrap_tool("absent", boom),
        ],
    )

    agent, reports = resolve(None, base, wrappers)

    assert names(agent)["tools"] == []
    assert names(agent)["sections"] == []
    assert [(r.code, r.message) for r in reports] == [
        ("wrapper_failed", "Wrapper of read in wrappers raised: boom"),
        ("wrapper_failed", "Wrapper of bash in wrappers returned another name"),
        ("wrapper_failed", "Wrapper of a in wrappers raised: boom"),
    ]


# -- R32: the registry --


def test_r32_an_extension_needs_unique_tool_names_and_section_keys() -> None:
    with pytest.raises(ValueError, match="two tools named 'a'"):
        define_extension("e", tools=[tool("a"), tool("a")])
    with pytest.raises(ValueError, match="two sections keyed 'k'"):
        define_extension("e", sections=[text_section("k", "1"), text_section("k", "2")])


@pytest.mark.parametrize("key", ["Upper", "1st", "with space", ""])
def test_r32_section_keys_must_match_the_key_pattern(key: str) -> None:
    with pytest.raises(ValueError, match=r"must match \^\[a-z\]"):
        section(key, lambda _input: "x")


def test_r32_the_instructions_section_key_is_reserved() -> None:
    with pytest.raises(ValueError, match="reserved"):
        section("instructions", lambda _input: "x")


def test_r32_install_validates_what_define_extension_checks_even_for_hand_built_extensions() -> (
    None
):
    registry = create_registry()
    cases = [
        (Extension("e", tools=(tool("a"), tool("a"))), "two tools named 'a'"),
        (Extension("e", sections=(Section("k", str), Section("k", str))), "two sections keyed"),
        (Extension("e", sections=(Section("Bad", str),)), "must match"),
        (Extension("e", sections=(Section("instructions", str),)), "reserved"),
    ]
    for extension, message in cases:
        with pytest.raises(ValueError, match=message):
            registry.install(extension)
    assert registry.snapshot().extensions == ()


def _task(name: str) -> Any:
    async def run(task: TaskRecord, runtime: HarnessRuntime) -> None:
        await runtime.commit(lambda tx: Completed(None))

    async def abort(task: TaskRecord, runtime: HarnessRuntime) -> None:
        await runtime.commit(lambda tx: Aborted())

    return define_task(name, initial=lambda _: {"phase": "run"}, phases={"run": run}, abort=abort)


def test_r32_task_names_are_unique_and_an_invalid_install_publishes_nothing() -> None:
    registry = create_registry(define_extension("first", tasks=[_task("app.job")]))
    published: list[int] = []
    registry.subscribe(lambda: published.append(1))
    before = registry.snapshot()

    with pytest.raises(ValueError, match=r"Task app\.job of extension second is already defined"):
        registry.install(define_extension("second", tasks=[_task("app.job")]))
    with pytest.raises(ValueError, match=r"Task pi\.tool of extension third is already defined"):
        registry.install(define_extension("third", tasks=[_task("pi.tool")]))

    assert registry.snapshot() is before
    assert published == []


def test_r32_install_replaces_a_same_name_extension_in_place_and_uninstall_is_by_name() -> None:
    a1, b, c = define_extension("a"), define_extension("b"), define_extension("c")
    a2 = define_extension("a", tools=[tool("t")])
    registry = create_registry(a1, b, c)
    published: list[tuple[str, ...]] = []
    registry.subscribe(
        lambda: published.append(tuple(e.name for e in registry.snapshot().extensions))
    )

    registry.install(a2)
    assert registry.snapshot().extensions == (a2, b, c)
    registry.uninstall(define_extension("a"))  # another object with the same name
    registry.install(a1)

    assert registry.snapshot().extensions == (b, c, a1)
    assert published == [("a", "b", "c"), ("b", "c"), ("b", "c", "a")]
    assert set(registry.snapshot().tasks) >= {"pi.generation", "pi.tool", "pi.compaction"}


def test_r32_builtin_tasks_cannot_be_uninstalled() -> None:
    registry = create_registry()

    registry.uninstall("pi.generation", "pi.tool", "pi.compaction")

    assert set(registry.snapshot().tasks) == {"pi.generation", "pi.tool", "pi.compaction"}


async def test_r32_r44_a_task_blocked_on_a_missing_definition_runs_once_an_install_publishes_it(
    kit: HarnessKit,
) -> None:
    job = _task("app.job")
    extension = define_extension("jobs", tasks=[job])
    kit.install(extension)
    root = await kit.root()
    definition = kit.harness.definition(job)
    kit.registry.uninstall(extension)
    task = await root.commit(
        lambda tx: tx.create_task(
            definition, None, ownership=ConversationOwned(), conversation_id=root.id
        )
    )
    kit.harness.resume()
    await asyncio.sleep(0)
    report = await kit.harness.inspect()
    assert report["tasks"][0]["activity"] == {"blocked": {"reason": "missing_task"}}

    kit.install(extension)

    record = await within(kit.harness.wait_for_task(task.id))
    assert record.state["outcome"]["status"] == "completed"


# -- R30, R78: what reaches the model --


async def test_r30_r78_the_request_offers_the_resolved_tools_and_renders_instructions_last(
    kit: HarnessKit,
) -> None:
    kit.install(
        define_extension(
            "one", tools=[tool("a"), tool("b")], sections=[text_section("intro", "Hello")]
        ),
        define_extension("two", tools=[tool("c")], sections=[text_section("rules", "Be kind")]),
    )
    kit.script(faux_response("ok"))
    root = await kit.root(instructions="Answer in French", tools=ToolRemoval(("b",)))

    await within((await root.submit("hi")).wait())

    context = kit.faux.requests[-1].context
    assert [spec.name for spec in context.tools] == ["a", "c"]
    assert context.system_prompt == (
        "<intro>\nHello\n</intro>\n\n<rules>\nBe kind\n</rules>\n\n"
        "<instructions>\nAnswer in French\n</instructions>"
    )


async def test_r31_a_tool_dropped_by_a_failing_wrapper_is_not_offered_and_the_failure_is_reported(
    kit: HarnessKit,
) -> None:
    def boom(target: Any) -> Any:
        raise RuntimeError("boom")

    kit.install(
        define_extension("base", tools=[tool("a"), tool("b")]),
        define_extension("wrappers", wraps=[wrap_tool("a", boom)]),
    )
    kit.script(faux_response("ok"))
    root = await kit.root()

    await within((await root.submit("hi")).wait())

    assert [spec.name for spec in kit.faux.requests[-1].context.tools] == ["b"]
    assert "Wrapper of a in wrappers raised: boom" in [r.message for r in kit.reports]


# -- R34: settings --


def test_r34_settings_defaults_and_object_fields_merge_key_by_key() -> None:
    defaults = Settings()
    assert defaults.model_dump() == {
        "stream": {},
        "retry": {
            "enabled": True,
            "max_retries": 3,
            "base_delay_ms": 2000,
            "max_agent_delay_ms": 60000,
        },
        "compaction": {
            "enabled": True,
            "reserve_tokens": 16384,
            "keep_recent_tokens": 20000,
            "background_tokens": 32768,
        },
        "progress": {"partial_interval_ms": 100, "output_interval_ms": 100},
        "tool_execution": "parallel",
        "steering_mode": "one-at-a-time",
        "follow_up_mode": "one-at-a-time",
        "context_retention_ms": 600000,
        "extensions": None,
        # issue 13: by default the harness gate lets every call run, as the reference does
        "permissions": {"mode": "auto", "rules": (), "protected": (), "on_ask": "wait", "hint": ""},
        # issue 16: deferred tools' schemas may take a tenth of the context window
        "tool_search_share": 0.1,
    }
    merged = Settings.model_validate({"retry": {"enabled": False}})
    assert merged.retry.enabled is False
    assert merged.retry.max_retries == 3


def test_r34_an_unknown_settings_key_is_refused_with_its_name() -> None:
    with pytest.raises(ValidationError, match="max_retry"):
        Settings.model_validate({"retry": {"max_retry": 1}})


async def test_r33_r34_settings_are_read_again_at_every_request(kit: HarnessKit) -> None:
    kit.install(
        define_extension("one", tools=[tool("a")]), define_extension("two", tools=[tool("b")])
    )
    kit.script(faux_response("first"), faux_response("second"))
    root = await kit.root()
    kit.settings = Settings(stream={"temperature": 0.25}, extensions=["one"])
    await within((await root.submit("hi")).wait())

    kit.settings = Settings(stream={"temperature": 0.75}, extensions=["two"])
    await within((await root.submit("again")).wait())

    first, second = kit.faux.requests
    assert first.options.temperature == 0.25
    assert [spec.name for spec in first.context.tools] == ["a"]
    assert second.options.temperature == 0.75
    assert [spec.name for spec in second.context.tools] == ["b"]


# -- R35: hot reload --


async def test_r35_a_running_tool_call_keeps_its_implementation_and_the_next_call_uses_the_new_one(
    kit: HarnessKit,
) -> None:
    gated = GatedTool(name="echo")
    kit.install(gated.extension("echo-tools"))
    kit.script(
        faux_response(faux_tool_call("echo", {"label": "one"})),
        faux_response(faux_tool_call("echo", {"label": "two"})),
        faux_response("done"),
    )
    root = await kit.root()
    submission = await root.submit(Input("go"))
    await gated.gate.wait_reached()

    kit.install(define_extension("echo-tools", tools=[tool("echo", "echo v2")]))
    gated.gate.open()
    await within(submission.wait())

    results = [
        entry_text(entry) for entry in await kit.transcript(root) if entry.kind == "pi.tool-result"
    ]
    assert results == ["echo one done", "echo v2"]
    assert gated.calls == ["one"]


async def test_r35_a_reinstalled_task_definition_takes_over_at_the_next_phase_boundary(
    kit: HarnessKit,
) -> None:
    gate = Gate()
    seen: list[str] = []

    def job(version: str) -> Any:
        async def first(task: TaskRecord, runtime: HarnessRuntime) -> None:
            seen.append(f"{version} first")
            await gate.passage()
            await runtime.commit(lambda tx: Running({"phase": "second"}))

        async def second(task: TaskRecord, runtime: HarnessRuntime) -> None:
            seen.append(f"{version} second")
            await runtime.commit(lambda tx: Completed(version))

        async def abort(task: TaskRecord, runtime: HarnessRuntime) -> None:
            await runtime.commit(lambda tx: Aborted())

        return define_task(
            "app.job",
            initial=lambda _: {"phase": "first"},
            phases={"first": first, "second": second},
            abort=abort,
        )

    old = job("old")
    kit.install(define_extension("jobs", tasks=[old]))
    root = await kit.root()
    definition = kit.harness.definition(old)

    def create(tx: Tx) -> int:
        return tx.create_task(
            definition, None, ownership=ConversationOwned(), conversation_id=root.id
        ).id

    task_id = await root.commit(create)
    kit.harness.resume()
    await gate.wait_reached()

    kit.install(define_extension("jobs", tasks=[job("new")]))
    gate.open()
    record = await within(kit.harness.wait_for_task(task_id))

    assert seen == ["old first", "new second"]
    assert record.state["outcome"] == {"status": "completed", "result": "new"}


async def test_r35_reinstalling_the_same_task_object_does_not_hand_over(kit: HarnessKit) -> None:
    job = _task("app.job")
    kit.install(define_extension("jobs", tasks=[job]))
    before = kit.harness.definition(job)

    kit.install(define_extension("jobs", tasks=[job], tools=[tool("x")]))

    assert kit.harness.definition(job) is before
