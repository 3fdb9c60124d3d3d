"""Faux script files load strictly and answer each request by its position (issue 7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.ai import (
    AssistantMessage,
    Context,
    FauxMatch,
    FauxScriptError,
    FauxUsage,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    load_faux_script,
)
from pi_durable_tui.ai.faux import load_demo_script
from tests.ai.contexts import continue_with_tool_result, user_context
from tests.ai.faux.sleeps import RecordingSleep

OPTIONS = StreamOptions()


def write(tmp_path: Path, data: Any, name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def text_response(text: str = "hi") -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def with_response(response: dict[str, Any]) -> dict[str, Any]:
    return {"responses": [response]}


def test_a_full_script_loads_every_feature(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "description": "every feature",
            "tokens_per_second": 25.5,
            "when_exhausted": "repeat_last",
            "models": [
                "faux-1",
                {
                    "id": "big",
                    "name": "Big",
                    "context_window": 200000,
                    "max_tokens": 8192,
                    "reasoning": True,
                    "thinking_levels": ["off", "high"],
                    "input": ["text"],
                    "cost": {"input": 3, "output": 15},
                },
            ],
            "responses": [
                {
                    "content": [
                        {"type": "thinking", "text": "hmm"},
                        {"type": "text", "text": "reading"},
                        {
                            "type": "tool_call",
                            "name": "read",
                            "arguments": {"path": "a"},
                            "id": "t1",
                        },
                    ],
                    "stop_reason": "toolUse",
                    "usage": {"input": 5, "output": 7},
                    "match": {"user": "read", "system": "coder"},
                },
                {"match": "plain", "content": [{"type": "text", "text": "ok"}]},
                {"error": {"message": "slow down", "status": 429, "retryable": True}},
            ],
        },
    )

    script = load_faux_script(path)

    assert script.source == str(path)
    assert (script.tokens_per_second, script.when_exhausted) == (25.5, "repeat_last")
    assert [m.id for m in script.models] == ["faux-1", "big"]
    big = script.models[1]
    assert (big.context_window, big.max_tokens, big.reasoning) == (200000, 8192, True)
    assert (big.thinking_levels, big.input, big.cost.output) == (["off", "high"], ["text"], 15)
    first, second, third = script.responses
    assert first.content == (
        ThinkingContent(thinking="hmm"),
        TextContent(text="reading"),
        ToolCall(id="t1", name="read", arguments={"path": "a"}),
    )
    assert first.stop_reason == "toolUse"
    assert first.usage == FauxUsage(input=5, output=7)
    assert first.match == FauxMatch(user="read", system="coder")
    assert second.match == FauxMatch(text="plain")
    assert third.stop_reason == "error"
    assert third.error is not None
    assert (third.error.message, third.error.status, third.error.retryable) == (
        "slow down",
        429,
        True,
    )


async def test_the_packaged_demo_script_is_valid_and_plays_a_tool_loop(
    recording_sleep: RecordingSleep,
) -> None:
    sleep = recording_sleep
    script = load_demo_script()
    faux = script.provider(sleep=sleep)
    model = faux.get_model()
    context = user_context("what is this project?")

    first = await faux.stream(model, context, OPTIONS).result()
    follow_up = continue_with_tool_result(context, first, "# pidurable\nA terminal agent.")
    second = await faux.stream(model, follow_up, OPTIONS).result()
    third_turn = Context(messages=[*follow_up.messages, second, *user_context("more?").messages])
    echo = await faux.stream(model, third_turn, OPTIONS).result()

    assert first.stop_reason == "toolUse"
    assert first.tool_calls()[0].name == "read"
    assert first.tool_calls()[0].arguments == {"path": "README.md"}
    assert "scripted demo" in second.text()
    assert echo.text() == "more?"  # position 3 is past the script: when_exhausted echo
    assert script.tokens_per_second > 0
    assert sleep.total > 0  # paced through the injected sleep, never for real


async def test_script_match_rules_keep_two_conversations_apart(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "responses": [
                {"match": {"user": "alpha"}, "content": [{"type": "text", "text": "A"}]},
                {"match": {"user": "beta"}, "content": [{"type": "text", "text": "B"}]},
            ]
        },
    )
    faux = load_faux_script(path).provider()
    model = faux.get_model()

    beta = await faux.stream(model, user_context("beta question"), OPTIONS).result()
    alpha = await faux.stream(model, user_context("alpha question"), OPTIONS).result()

    assert (alpha.text(), beta.text()) == ("A", "B")


async def test_a_request_past_the_last_position_ends_with_an_error_naming_it(
    tmp_path: Path,
) -> None:
    faux = load_faux_script(write(tmp_path, with_response(text_response()))).provider()
    model = faux.get_model()
    context = user_context("one")
    first = await faux.stream(model, context, OPTIONS).result()

    later = Context(messages=[*context.messages, first, *user_context("two").messages])
    final = await faux.stream(model, later, OPTIONS).result()

    assert first.text() == "hi"
    assert final.stop_reason == "error"
    assert final.retryable is False
    assert final.error_message == (
        "No more faux responses: the request at position 2 (its context holds 1 assistant "
        "messages) is past the script's 1 response(s) without a match rule, and no match "
        "rule fits it"
    )


def tool_call_response(*names: str) -> dict[str, Any]:
    calls = [
        {"type": "tool_call", "name": name, "arguments": {"n": i}} for i, name in enumerate(names)
    ]
    return {"content": [{"type": "text", "text": "calling"}, *calls]}


THREE_STEPS = {
    "responses": [
        tool_call_response("read"),
        tool_call_response("bash", "read"),
        text_response("all done"),
    ]
}


async def play(faux_script: Path, steps: int) -> tuple[Context, list[AssistantMessage]]:
    """Run ``steps`` turns of a tool loop on a fresh provider; return the next context."""
    faux = load_faux_script(faux_script).provider()
    context = user_context("go")
    answers = []
    for _ in range(steps):
        answer = await faux.stream(faux.get_model(), context, OPTIONS).result()
        answers.append(answer)
        context = continue_with_tool_result(context, answer, "ok")
    return context, answers


async def test_a_restarted_provider_gives_the_same_next_response_for_the_same_context(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, THREE_STEPS)
    context, before_kill = await play(path, 2)
    _, uninterrupted = await play(path, 3)

    # A new provider from the same file knows nothing of earlier requests.
    restarted = load_faux_script(path).provider()
    after_restart = await restarted.stream(restarted.get_model(), context, OPTIONS).result()
    asked_again = await restarted.stream(restarted.get_model(), context, OPTIONS).result()

    assert [a.tool_calls()[0].name for a in before_kill] == ["read", "bash"]
    assert after_restart.text() == "all done"
    assert after_restart.model_dump(exclude={"timestamp"}) == uninterrupted[2].model_dump(
        exclude={"timestamp"}
    )
    assert asked_again.text() == "all done"  # nothing is used up
    assert restarted.call_count == 2


async def test_tool_call_ids_and_the_response_id_come_from_the_position(tmp_path: Path) -> None:
    _, answers = await play(write(tmp_path, THREE_STEPS), 2)

    assert [[call.id for call in a.tool_calls()] for a in answers] == [
        ["call_0_1"],
        ["call_1_1", "call_1_2"],
    ]
    assert [a.response_id for a in answers] == ["faux-0", "faux-1"]


async def test_match_rules_walk_a_subagent_through_its_own_responses_by_position(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        {
            "responses": [
                tool_call_response("subagent"),
                {"match": {"system": "helper"}, **tool_call_response("grep")},
                {"match": {"system": "helper"}, **text_response("found it")},
                text_response("the helper found it"),
                {"match": {"tool_result": "FAILED"}, **text_response("the tool failed")},
            ]
        },
    )
    faux = load_faux_script(path).provider()
    model = faux.get_model()
    parent = user_context("find it")
    helper = user_context("look for it", system="you are a helper")

    parent_call = await faux.stream(model, parent, OPTIONS).result()
    helper_call = await faux.stream(model, helper, OPTIONS).result()
    helper_next = continue_with_tool_result(helper, helper_call, "line 3")
    helper_answer = await faux.stream(model, helper_next, OPTIONS).result()
    parent_next = continue_with_tool_result(parent, parent_call, "found it")
    parent_answer = await faux.stream(model, parent_next, OPTIONS).result()
    failed = continue_with_tool_result(parent, parent_call, "FAILED: no such file")
    reaction = await faux.stream(model, failed, OPTIONS).result()

    assert parent_call.tool_calls()[0].name == "subagent"
    assert helper_call.tool_calls()[0].name == "grep"
    assert helper_answer.text() == "found it"
    assert parent_answer.text() == "the helper found it"
    assert reaction.text() == "the tool failed"  # a tool_result rule fits at any position


async def test_r73_a_scripted_error_answers_every_retry_of_its_position(tmp_path: Path) -> None:
    # Failed responses never enter a context (R73), so a retry asks the same position.
    path = write(tmp_path, {"responses": [{"error": {"message": "Overloaded", "status": 529}}]})
    faux = load_faux_script(path).provider()

    first = await faux.stream(faux.get_model(), user_context("hi"), OPTIONS).result()
    retry = await faux.stream(faux.get_model(), user_context("hi"), OPTIONS).result()

    assert [first.error_message, retry.error_message] == ["Overloaded", "Overloaded"]
    assert first.error_status == retry.error_status == 529


async def test_repeat_last_in_a_script_replays_the_last_response_without_a_match(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        {
            "when_exhausted": "repeat_last",
            "responses": [
                text_response("first"),
                text_response("last"),
                {"match": "never seen", **text_response("matched")},
            ],
        },
    )
    context, answers = await play(path, 3)

    assert [a.text() for a in answers] == ["first", "last", "last"]
    assert len(context.messages) == 4


TEXT_BLOCK = {"type": "text", "text": "x"}
MALFORMED: list[tuple[str, Any, str, str]] = [
    ("invalid json", '{"responses": [}', "line 1, column 16", "invalid JSON"),
    ("top level array", [], "top level", "expected an object, got an array"),
    ("missing responses", {}, "top level", 'missing key "responses"'),
    (
        "unknown top key",
        {"responses": [], "respones": []},
        "top level",
        'unknown key "respones" (expected keys: description, tokens_per_second',
    ),
    ("responses not array", {"responses": {}}, "responses", "expected an array, got an object"),
    (
        "unknown response key",
        with_response({"contnet": []}),
        "responses[0]",
        'unknown key "contnet"',
    ),
    (
        "empty content without error",
        with_response({"content": []}),
        "responses[0].content",
        "expected at least one content block",
    ),
    (
        "missing content without error",
        with_response({"stop_reason": "stop"}),
        "responses[0].content",
        "expected at least one content block",
    ),
    (
        "bad block type",
        {"responses": [text_response(), text_response(), {"content": [{"type": "image"}]}]},
        "responses[2].content[0].type",
        'expected one of text, thinking, tool_call, got string "image"',
    ),
    (
        "block without type",
        with_response({"content": [{"text": "x"}]}),
        "responses[0].content[0]",
        'missing key "type"',
    ),
    (
        "block not an object",
        with_response({"content": ["hello"]}),
        "responses[0].content[0]",
        'expected an object, got string "hello"',
    ),
    (
        "text not a string",
        with_response({"content": [{"type": "text", "text": 5}]}),
        "responses[0].content[0].text",
        "expected a string, got number 5",
    ),
    (
        "unknown block key",
        with_response({"content": [{"type": "thinking", "text": "x", "signature": "s"}]}),
        "responses[0].content[0]",
        'unknown key "signature" (expected keys: type, text)',
    ),
    (
        "tool call without name",
        with_response({"content": [{"type": "tool_call", "arguments": {}}]}),
        "responses[0].content[0]",
        'missing key "name"',
    ),
    (
        "tool call with empty name",
        with_response({"content": [{"type": "tool_call", "name": ""}]}),
        "responses[0].content[0].name",
        'expected a non-empty string, got string ""',
    ),
    (
        "non-object arguments",
        with_response({"content": [{"type": "tool_call", "name": "read", "arguments": ["a"]}]}),
        "responses[0].content[0].arguments",
        "expected an object, got an array",
    ),
    (
        "bad stop reason",
        with_response({"content": [TEXT_BLOCK], "stop_reason": "tool_use"}),
        "responses[0].stop_reason",
        'expected one of stop, length, toolUse, error, aborted, got string "tool_use"',
    ),
    (
        "stop reason stop with an error",
        with_response({"error": {"message": "x"}, "stop_reason": "stop"}),
        "responses[0].stop_reason",
        "expected error or aborted for a response with an error",
    ),
    (
        "stop reason error without an error",
        with_response({"content": [TEXT_BLOCK], "stop_reason": "error"}),
        "responses[0].error",
        'missing key "error"',
    ),
    (
        "status out of range",
        with_response({"error": {"message": "x", "status": 999}}),
        "responses[0].error.status",
        "expected an integer from 100 to 599, got number 999",
    ),
    (
        "status as text",
        with_response({"error": {"message": "x", "status": "429"}}),
        "responses[0].error.status",
        'expected an integer from 100 to 599, got string "429"',
    ),
    (
        "retryable not a boolean",
        with_response({"error": {"message": "x", "retryable": "yes"}}),
        "responses[0].error.retryable",
        'expected true or false, got string "yes"',
    ),
    (
        "error without message",
        with_response({"error": {"status": 500}}),
        "responses[0].error",
        'missing key "message"',
    ),
    (
        "negative tokens per second",
        {"responses": [], "tokens_per_second": -1},
        "tokens_per_second",
        "expected a number >= 0, got number -1",
    ),
    (
        "boolean tokens per second",
        {"responses": [], "tokens_per_second": True},
        "tokens_per_second",
        "expected a number >= 0, got true",
    ),
    (
        "unknown exhaustion policy",
        {"responses": [], "when_exhausted": "loop"},
        "when_exhausted",
        'expected one of error, repeat_last, echo, got string "loop"',
    ),
    (
        "negative usage",
        with_response({"content": [TEXT_BLOCK], "usage": {"output": -3}}),
        "responses[0].usage.output",
        "expected an integer >= 0, got number -3",
    ),
    (
        "empty match object",
        with_response({"content": [TEXT_BLOCK], "match": {}}),
        "responses[0].match",
        "expected at least one of user, system, tool_result",
    ),
    (
        "match of the wrong type",
        with_response({"content": [TEXT_BLOCK], "match": 3}),
        "responses[0].match",
        "expected a non-empty string or an object, got number 3",
    ),
    (
        "unknown match key",
        with_response({"content": [TEXT_BLOCK], "match": {"assistant": "x"}}),
        "responses[0].match",
        'unknown key "assistant"',
    ),
    (
        "duplicate model ids",
        {"responses": [], "models": ["m", {"id": "m"}]},
        "models[1]",
        'duplicate model id "m"',
    ),
    (
        "bad model input kind",
        {"responses": [], "models": [{"id": "m", "input": ["audio"]}]},
        "models[0].input[0]",
        'expected one of text, image, got string "audio"',
    ),
    (
        "duplicate tool call ids in a response",
        with_response(
            {
                "content": [
                    {"type": "tool_call", "name": "read", "id": "t1"},
                    {"type": "tool_call", "name": "bash", "id": "t1"},
                ]
            }
        ),
        "responses[0].content[1].id",
        'duplicate tool call id "t1" in a response',
    ),
    (
        "repeat_last with only matched responses",
        {"when_exhausted": "repeat_last", "responses": [{"match": "x", "content": [TEXT_BLOCK]}]},
        "when_exhausted",
        "repeat_last needs at least one response without a match rule",
    ),
    (
        "bad model context window",
        {"responses": [], "models": [{"id": "m", "context_window": 0}]},
        "models[0].context_window",
        "expected an integer >= 1, got number 0",
    ),
]


@pytest.mark.parametrize(
    ("content", "where", "expected"),
    [case[1:] for case in MALFORMED],
    ids=[case[0] for case in MALFORMED],
)
def test_a_malformed_script_names_the_file_the_json_path_and_the_expectation(
    tmp_path: Path, content: Any, where: str, expected: str
) -> None:
    path = write(tmp_path, content, name="broken-script.json")

    with pytest.raises(FauxScriptError) as caught:
        load_faux_script(path)

    error = caught.value
    assert error.source == str(path)
    assert error.where == where
    assert expected in error.problem
    assert str(error).startswith(f"{path}: {where}: ")


def test_a_missing_file_is_a_script_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"

    with pytest.raises(FauxScriptError, match=r"nope\.json: file: cannot read it"):
        load_faux_script(missing)


def test_a_file_that_is_not_utf8_is_a_script_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"responses": ["\xe9"]}')

    with pytest.raises(FauxScriptError, match="expected UTF-8 text"):
        load_faux_script(path)
