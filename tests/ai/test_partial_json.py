"""Incremental parsing of streamed tool-call arguments."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui.ai import Model, ToolCall
from pi_durable_tui.ai._partial_json import PartialJson, parse_tool_arguments
from pi_durable_tui.ai.providers._sse import MessageAssembly


def live_values(*fragments: str) -> list[dict[str, Any]]:
    parser = PartialJson()
    return [parser.feed(fragment) for fragment in fragments]


def test_an_unfinished_key_is_left_out_until_its_value_starts() -> None:
    assert live_values('{"pa', 'th"', ": ", '"a', '.py", "l', 'imit": 1', "0}") == [
        {},
        {},
        {},
        {"path": "a"},
        {"path": "a.py"},
        {"path": "a.py", "limit": 1},
        {"path": "a.py", "limit": 10},
    ]


def test_a_string_value_grows_live_and_a_split_escape_waits_for_its_end() -> None:
    assert live_values('{"text": "line\\', "nnext \\u00", 'e9"}') == [
        {"text": "line"},
        {"text": "line\nnext "},
        {"text": "line\nnext \u00e9"},
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": tr', {"a": True}),
        ('{"a": fal', {"a": False}),
        ('{"a": nu', {"a": None}),
        ('{"a": 1.', {"a": 1}),
        ('{"a": -', {}),
        ('{"a": 2e', {"a": 2}),
        ('{"a": [1, {"b": "c', {"a": [1, {"b": "c"}]}),
        ('{"a": [1, ', {"a": [1]}),
        ('{"a": {"b": 1}, ', {"a": {"b": 1}}),
        ('{"a": [], "b"', {"a": []}),
        ('  {"k\\"q": "v"', {'k"q': "v"}),
    ],
)
def test_partial_values_are_completed_sensibly(text: str, expected: dict[str, Any]) -> None:
    assert PartialJson().feed(text) == expected


def test_a_top_level_array_never_becomes_the_arguments() -> None:
    assert live_values("[1, ", "2]") == [{}, {}]
    assert parse_tool_arguments("[1, 2]") == ({}, "[1, 2]")


def test_broken_json_keeps_the_last_good_live_value_and_the_final_parse_keeps_the_raw_text() -> (
    None
):
    assert live_values('{"a": 1', ",,", "}") == [{"a": 1}, {"a": 1}, {"a": 1}]
    assert parse_tool_arguments('{"a": 1,,}') == ({}, '{"a": 1,,}')


def test_the_final_parse_accepts_raw_control_characters_and_repairs_invalid_escapes() -> None:
    assert parse_tool_arguments('{"a": "one\ntwo\tthree"}') == ({"a": "one\ntwo\tthree"}, None)
    assert parse_tool_arguments('{"re": "\\d+\\.py", "ok": "\\n"}') == (
        {"re": "\\d+\\.py", "ok": "\n"},
        None,
    )


def test_empty_argument_text_is_an_empty_object() -> None:
    assert parse_tool_arguments("") == ({}, None)
    assert parse_tool_arguments("  \n") == ({}, None)


def test_large_arguments_still_end_exactly_right() -> None:
    content = "x" * 300_000
    text = json.dumps({"path": "big.txt", "content": content})
    parser = PartialJson()
    for start in range(0, len(text), 997):
        value = parser.feed(text[start : start + 997])
        assert isinstance(value, dict)
    assert parse_tool_arguments(parser.text) == ({"path": "big.txt", "content": content}, None)


def test_invalid_final_arguments_become_empty_and_the_raw_text_stays_on_the_call() -> None:
    assembly = MessageAssembly(Model(id="m", api="faux", provider="p"))
    index, _ = assembly.open_tool_call("call_1", "write")
    assembly.add_tool_arguments(index, '{"path": "a", ')
    assembly.add_tool_arguments(index, "oops")

    end = assembly.close(index)

    assert end.type == "toolcall_end"
    call = assembly.message.content[index]
    assert isinstance(call, ToolCall)
    assert call.arguments == {}
    assert call.model_dump()["raw_arguments"] == '{"path": "a", oops'


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    value=st.dictionaries(st.text(max_size=8), json_values, max_size=5),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 2]),
)
def test_any_object_split_anywhere_is_live_parsed_without_error_and_ends_exact(
    value: dict[str, Any], cuts: list[int], ascii_only: bool, indent: int | None
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    points = sorted({min(cut, len(text)) for cut in cuts} | {0, len(text)})
    parser = PartialJson()
    for start, end in itertools.pairwise(points):
        live = parser.feed(text[start:end])
        assert isinstance(live, dict)
    assert parser.value == value
    assert parse_tool_arguments(parser.text) == (value, None)
