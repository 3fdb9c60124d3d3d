"""Faux script files load strictly and drive the faux provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.ai.faux import FauxMatch, FauxUsage
from pi_durable_tui.ai.faux_script import (
    FauxScriptError,
    load_demo_script,
    load_faux_script,
)
from pi_durable_tui.ai.types import StreamOptions, TextContent, ThinkingContent, ToolCall
from tests.ai.faux_fixtures import RecordingSleep, continue_with_tool_result, user_context

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


async def test_the_packaged_demo_script_is_valid_and_plays_a_tool_loop() -> None:
    sleep = RecordingSleep()
    script = load_demo_script()
    faux = script.provider(sleep=sleep)
    model = faux.get_model()
    context = user_context("what is this project?")

    first = await faux.stream(model, context, OPTIONS).result()
    follow_up = continue_with_tool_result(context, first, "# pidurable\nA terminal agent.")
    second = await faux.stream(model, follow_up, OPTIONS).result()
    echo = await faux.stream(model, user_context("anything else"), OPTIONS).result()

    assert first.stop_reason == "toolUse"
    assert first.tool_calls()[0].name == "read"
    assert first.tool_calls()[0].arguments == {"path": "README.md"}
    assert "scripted demo" in second.text()
    assert echo.text() == "anything else"  # when_exhausted: echo
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


async def test_an_exhausted_script_ends_with_the_no_more_responses_error(tmp_path: Path) -> None:
    faux = load_faux_script(write(tmp_path, with_response(text_response()))).provider()
    model = faux.get_model()
    await faux.stream(model, user_context("one"), OPTIONS).result()

    final = await faux.stream(model, user_context("two"), OPTIONS).result()

    assert final.stop_reason == "error"
    assert "No more faux responses queued" in (final.error_message or "")


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
