"""The JSON operation format and strict JSON checks (``pi_durable_tui.storage.json_ops``).

DESIGN.md section 4: ``set``, ``delete``, ``splice`` and string ``append`` are
plain JSON; every error names the operation and its path; inputs are never
mutated. ``check_json`` names the path of the first value that is not strict
JSON. Hypothesis checks that applying operations to a value equals applying them
to a deep copy (so nothing depends on, or changes, the input) and that
``copy_json`` equals ``copy.deepcopy``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui.storage.json_ops import (
    InvalidOperation,
    Json,
    Op,
    apply_ops,
    check_json,
    check_ops,
    checked_copy_json,
    copy_json,
    dumps,
    loads,
)

PROPERTY = settings(max_examples=150, database=None, derandomize=True, deadline=None)


def set_op(path: list[Any], value: Any) -> Op:
    return {"op": "set", "path": path, "value": value}


# -- the four operations -----------------------------------------------------------


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([set_op(["a"], 2)], {"a": 2, "l": [1, 2], "s": "x"}),
        ([set_op(["new"], {"k": []})], {"a": 1, "l": [1, 2], "s": "x", "new": {"k": []}}),
        ([set_op(["l", 0], "z")], {"a": 1, "l": ["z", 2], "s": "x"}),
        ([set_op(["l", 2], 3)], {"a": 1, "l": [1, 2, 3], "s": "x"}),
        ([set_op([], {"root": True})], {"root": True}),
        ([{"op": "delete", "path": ["a"]}], {"l": [1, 2], "s": "x"}),
        ([{"op": "delete", "path": ["l", 0]}], {"a": 1, "l": [2], "s": "x"}),
        (
            [{"op": "splice", "path": ["l"], "index": 1, "remove": 1, "insert": [7, 8]}],
            {"a": 1, "l": [1, 7, 8], "s": "x"},
        ),
        ([{"op": "splice", "path": ["l"], "index": 2}], {"a": 1, "l": [1, 2], "s": "x"}),
        ([{"op": "splice", "path": ["l"], "index": 0, "remove": 2}], {"a": 1, "l": [], "s": "x"}),
        ([{"op": "append", "path": ["s"], "text": "yz"}], {"a": 1, "l": [1, 2], "s": "xyz"}),
        (
            [set_op(["o"], {"t": ""}), {"op": "append", "path": ["o", "t"], "text": "é😀"}],
            {"a": 1, "l": [1, 2], "s": "x", "o": {"t": "é😀"}},
        ),
    ],
)
def test_each_operation_changes_the_value_as_documented(ops: list[Op], expected: Json) -> None:
    value = {"a": 1, "l": [1, 2], "s": "x"}
    assert apply_ops(value, ops) == expected
    assert value == {"a": 1, "l": [1, 2], "s": "x"}


def test_operations_apply_in_order_each_to_the_result_of_the_last() -> None:
    ops = [
        set_op(["l"], []),
        {"op": "splice", "path": ["l"], "index": 0, "insert": ["a"]},
        {"op": "append", "path": ["l", 0], "text": "b"},
        {"op": "delete", "path": ["x"]},
    ]
    assert apply_ops({"x": 0}, ops) == {"l": ["ab"]}


def test_no_operations_return_the_value_itself() -> None:
    value = {"a": [1]}
    assert apply_ops(value, []) is value


def test_a_result_shares_no_container_with_the_operations() -> None:
    inserted = {"deep": [1]}
    ops = [
        set_op(["a"], inserted),
        {"op": "splice", "path": ["l"], "index": 0, "insert": [inserted]},
    ]
    result: Any = apply_ops({"l": []}, ops)
    result["a"]["deep"].append(2)
    result["l"][0]["deep"].append(3)
    assert inserted == {"deep": [1]}
    assert ops[0]["value"] == {"deep": [1]}


# -- errors name the operation and its path ----------------------------------------


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        (
            [{"op": "delete", "path": ["a", "zz"]}],
            'operation 0: delete at ["a", "zz"]: key "zz" is missing',
        ),
        ([set_op(["l", 5], 1)], 'set at ["l", 5]: index 5 is out of range (length 2)'),
        ([set_op(["s", "k"], 1)], 'set at ["s", "k"]: cannot set \'k\' on a string'),
        ([set_op(["a", "x", "y"], 1)], 'set at ["a", "x", "y"]: key "x" is missing'),
        ([set_op(["n", 0, "k"], 1)], 'set at ["n", 0, "k"]: ["n"] is null, not a container'),
        ([{"op": "delete", "path": ["l", 9]}], 'delete at ["l", 9]: index 9 is out of range'),
        (
            [{"op": "append", "path": ["l"], "text": "x"}],
            'append at ["l"]: needs a string, found a list',
        ),
        (
            [{"op": "splice", "path": ["s"], "index": 0}],
            'splice at ["s"]: needs a list, found a string',
        ),
        (
            [{"op": "splice", "path": ["l"], "index": 1, "remove": 5}],
            'splice at ["l"]: removing 5 from index 1 is out of range (length 2)',
        ),
        ([set_op(["a"], 1), {"op": "move", "path": []}], "operation 1: unknown operation 'move'"),
        ([{"op": "set", "path": ["a"]}], 'operation 0: set at ["a"] needs a value'),
        ([{"op": "delete", "path": []}], "operation 0: delete needs a non-empty path"),
        ([{"op": "set", "path": "a", "value": 1}], "operation 0 ('set') needs a list of keys"),
        ([{"op": "set", "path": [1.5], "value": 1}], "operation 0 ('set') needs a list of keys"),
        ([{"op": "append", "path": ["s"], "text": 1}], 'append at ["s"] needs a string text'),
        ([{"op": "splice", "path": ["l"], "index": True}], 'splice at ["l"] needs integers'),
        (["set"], "operation 0 is not an object"),
    ],
)
def test_an_operation_that_does_not_fit_raises_naming_its_index_and_path(
    ops: list[Any], message: str
) -> None:
    value: dict[str, Any] = {"a": {}, "l": [1, 2], "s": "x", "n": None}
    before = copy.deepcopy(value)
    with pytest.raises(InvalidOperation) as caught:
        apply_ops(value, ops)
    assert message in str(caught.value)
    assert value == before


def test_a_failing_operation_after_good_ones_leaves_the_input_untouched() -> None:
    value = {"l": [1], "s": ""}
    ops = [set_op(["l", 0], 9), {"op": "append", "path": ["s"], "text": "x"}, set_op(["q", 0], 1)]
    with pytest.raises(InvalidOperation, match="operation 2"):
        apply_ops(value, ops)
    assert value == {"l": [1], "s": ""}


# -- check_ops: the shape a stored delta must have ---------------------------------


@pytest.mark.parametrize(
    "ops",
    [
        [],
        [set_op([], {"new": "root"})],
        [set_op(["a", 0, "b"], None), {"op": "delete", "path": ["x"]}],
        [{"op": "splice", "path": ["l"], "index": 0, "remove": 0, "insert": []}],
        [{"op": "append", "path": ["s"], "text": ""}],
    ],
)
def test_well_formed_operation_lists_pass_check_ops(ops: list[Op]) -> None:
    check_ops(ops)


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ({"op": "set"}, "operations must be a list, not dict"),
        ([set_op(["a"], 1), 5], "operation 1 is not an object"),
        ([set_op([], [1])], "operation 0: set at the root would leave a document without"),
        ([{"op": "append", "path": [], "text": "x"}], "operation 0: append at the root"),
        ([{"op": "splice", "path": [], "index": 0}], "operation 0: splice at the root"),
        ([{"op": "splice", "path": ["l"], "index": -1}], 'operation 0: splice at ["l"] needs'),
        ([{"op": "copy", "path": ["a"]}], "operation 0: unknown operation 'copy'"),
        ([{"op": "set", "path": [True], "value": 1}], "operation 0 ('set') needs a list of keys"),
    ],
)
def test_malformed_operation_lists_fail_check_ops_naming_the_operation(
    ops: Any, message: str
) -> None:
    with pytest.raises(InvalidOperation) as caught:
        check_ops(ops)
    assert message in str(caught.value)


# -- check_json and dumps ----------------------------------------------------------


def test_check_json_names_the_path_as_the_design_spells_it() -> None:
    value = {"pi.live": {"tools": [{"output": b"bytes"}]}}
    with pytest.raises(TypeError) as caught:
        check_json(value, "docs")
    assert str(caught.value) == 'docs["pi.live"].tools[0].output: bytes is not JSON'


NOT_JSON = [
    ({"a": math.nan}, ValueError, "value.a: nan is not JSON (numbers must be finite)"),
    ([1, -math.inf], ValueError, "value[1]: -inf is not JSON (numbers must be finite)"),
    ({"a": {1: "x"}}, TypeError, "value.a: key 1 is not JSON (keys must be strings)"),
    ({"a": (1, 2)}, TypeError, "value.a: tuple is not JSON"),
    ({"a": {1, 2}}, TypeError, "value.a: set is not JSON"),
    ({"a b": [object()]}, TypeError, 'value["a b"][0]: object is not JSON'),
    (
        {"t": "ok\ud83d\ude00"},
        ValueError,
        "value.t: surrogate pair '\\ud83d\\ude00' at index 2 is not JSON (JSON would read "
        "it back as one character; join it into that character)",
    ),
    (
        {"k\ud800\udc00": 1},
        ValueError,
        "value: surrogate pair '\\ud800\\udc00' at index 1 is not JSON (JSON would read it "
        "back as one character; join it into that character)",
    ),
]
"""Values that are not strict JSON, with what ``check_json`` says of each."""


@pytest.mark.parametrize(("value", "error", "message"), NOT_JSON)
def test_check_json_refuses_what_is_not_strict_json_with_its_path(
    value: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        check_json(value)
    assert str(caught.value) == message


@pytest.mark.parametrize(("value", "error", "message"), NOT_JSON)
def test_checked_copy_json_refuses_what_check_json_refuses_with_its_message(
    value: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        checked_copy_json(value)
    assert str(caught.value) == message


def test_checked_copy_json_keeps_a_subclass_check_json_accepts() -> None:
    class Name(str):
        pass

    copied = checked_copy_json({"who": Name("ada"), "n": [1, 2.5, None, True]})

    assert copied == {"who": "ada", "n": [1, 2.5, None, True]}
    assert isinstance(copied, dict)
    assert type(copied["who"]) is Name


def test_check_json_accepts_strict_json() -> None:
    check_json(
        {"n": [0, -1, 2**70, 1.5, -0.0], "s": "é😀\u2028", "b": [True, False, None], "o": {"": {}}}
    )


@pytest.mark.parametrize(
    "value",
    [
        "lone \udc80 from a file name",
        {"k\ud800": ["\udfff", "é\udc00😀", "\\ud800 is not an escape here"]},
        "\udc00\ud800",
        ['quote"\ud800', "\\\udbff"],
    ],
)
def test_dumps_escapes_lone_surrogates_so_the_text_is_utf8_and_loads_round_trips(
    value: Any,
) -> None:
    check_json(value)
    text = dumps(value)
    text.encode("utf-8")
    assert loads(text) == value
    assert loads(text.encode("utf-8")) == value


def test_dumps_is_compact_keeps_unicode_and_refuses_nan() -> None:
    assert dumps({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    with pytest.raises(ValueError):
        dumps(math.nan)
    assert loads(dumps({"x": [1.5, None]})) == {"x": [1.5, None]}


@pytest.mark.parametrize(
    "text",
    ['{"a":[1,2.5,null,true]}', ' {"a":1}', '{"a":1}\n', "1 2", "", "NaN", '"x"', "[1,2", "{}x"],
)
def test_loads_reads_what_json_loads_reads_and_refuses_what_it_refuses_alike(text: str) -> None:
    # The scanner-only path (issue 14) must not change a verdict or a message.
    try:
        expected: Any = json.loads(text)
    except json.JSONDecodeError as error:
        with pytest.raises(json.JSONDecodeError, match=re.escape(str(error))):
            loads(text)
        return
    got = loads(text)
    assert got == expected or (got != got and expected != expected)  # NaN is not NaN


# -- properties ----------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
values: st.SearchStrategy[Json] = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=8,
)
objects = st.dictionaries(st.text(max_size=4), values, max_size=5)


def nodes(value: Json, path: list[str | int]) -> list[tuple[list[str | int], Json]]:
    """Every node of a value with its path."""
    found: list[tuple[list[str | int], Json]] = [(path, value)]
    if isinstance(value, dict):
        for key, child in value.items():
            found += nodes(child, [*path, key])
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += nodes(child, [*path, index])
    return found


@st.composite
def value_and_ops(draw: st.DrawFn) -> tuple[Json, list[Op]]:
    """A JSON object and well-formed operations that apply to it, one after another."""
    value: Json = draw(objects)
    current = value
    ops: list[Op] = []
    for _ in range(draw(st.integers(0, 6))):
        path, node = draw(st.sampled_from(nodes(current, [])))
        choices = ["set"] + (["delete"] if path else [])
        choices += ["append"] if isinstance(node, str) else []
        choices += ["splice"] if isinstance(node, list) else []
        kind = draw(st.sampled_from(choices))
        if kind == "set":
            # A document's root stays an object: at the root, set a key instead.
            op = set_op(path or [draw(st.text(max_size=3))], draw(values))
        elif kind == "delete":
            op = {"op": "delete", "path": path}
        elif kind == "append":
            op = {"op": "append", "path": path, "text": draw(st.text(max_size=4))}
        else:
            assert isinstance(node, list)
            index = draw(st.integers(0, len(node)))
            op = {
                "op": "splice",
                "path": path,
                "index": index,
                "remove": draw(st.integers(0, len(node) - index)),
                "insert": draw(st.lists(values, max_size=3)),
            }
        current = apply_ops(current, [op])
        ops.append(op)
    return value, ops


@PROPERTY
@given(value_and_ops())
def test_applying_ops_equals_applying_them_to_a_deep_copy_and_mutates_nothing(
    case: tuple[Json, list[Op]],
) -> None:
    value, ops = case
    value_before, ops_before = copy.deepcopy(value), copy.deepcopy(ops)
    result = apply_ops(value, ops)
    assert result == apply_ops(copy.deepcopy(value), copy.deepcopy(ops))
    assert value == value_before
    assert ops == ops_before
    check_ops(ops)


@PROPERTY
@given(
    values,
    st.lists(st.dictionaries(st.sampled_from(["op", "path", "value", "text", "index"]), values)),
)
def test_arbitrary_operations_either_apply_or_raise_invalid_operation(
    value: Json, ops: list[Any]
) -> None:
    before = copy.deepcopy(value)
    with contextlib.suppress(InvalidOperation):
        apply_ops(value, ops)
    assert value == before


def containers(value: Json) -> list[int]:
    """The identities of every list and dict inside a value."""
    return [id(node) for _, node in nodes(value, []) if isinstance(node, (list, dict))]


@PROPERTY
@given(values)
def test_copy_json_equals_deepcopy_and_shares_no_container(value: Json) -> None:
    copied = copy_json(value)
    assert copied == copy.deepcopy(value)
    assert dumps(copied) == dumps(value)
    assert not set(containers(copied)) & set(containers(value))


@PROPERTY
@given(values)
def test_checked_copy_json_copies_strict_json_as_copy_json_does(value: Json) -> None:
    copied = checked_copy_json(value)
    assert dumps(copied) == dumps(copy_json(value))
    assert not set(containers(copied)) & set(containers(value))
