"""Deriving a commit's document operations by diffing a draft (DESIGN.md 3.1 and 4, R6, R14).

The diff is what turns plain Python edits into the small operations storage and
watchers receive, so its exact shape matters: a grown string is one ``append``
(streamed text depends on it), a grown list one splice at its end, and JSON types
are told apart (``True`` is not ``1``, ``1`` is not ``1.0``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui.kernel.docs import diff_json
from pi_durable_tui.storage.json_ops import apply_ops, copy_json

WHERE = 'docs["pi.live"]'


def _json_text(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def test_a_string_that_grew_at_its_end_becomes_one_append() -> None:
    old = {"message": {"text": "Hello"}}
    new = {"message": {"text": "Hello, world"}}

    assert diff_json(old, new, WHERE) == [
        {"op": "append", "path": ["message", "text"], "text": ", world"}
    ]


def test_an_empty_string_that_grew_becomes_one_append() -> None:
    assert diff_json({"t": ""}, {"t": "abc"}, WHERE) == [
        {"op": "append", "path": ["t"], "text": "abc"}
    ]


def test_a_string_changed_elsewhere_than_its_end_is_set() -> None:
    assert diff_json({"t": "abc"}, {"t": "xbc"}, WHERE) == [
        {"op": "set", "path": ["t"], "value": "xbc"}
    ]
    assert diff_json({"t": "abc"}, {"t": "ab"}, WHERE) == [
        {"op": "set", "path": ["t"], "value": "ab"}
    ]


def test_a_list_that_grew_at_its_end_becomes_one_splice_at_the_end() -> None:
    old = {"items": [1, {"a": 2}]}
    new = {"items": [1, {"a": 2}, "three", [4]]}

    assert diff_json(old, new, WHERE) == [
        {"op": "splice", "path": ["items"], "index": 2, "remove": 0, "insert": ["three", [4]]}
    ]


def test_a_list_with_an_item_removed_in_the_middle_becomes_one_splice_over_it() -> None:
    ops = diff_json({"l": [1, 2, 3, 4]}, {"l": [1, 4]}, WHERE)
    assert ops == [{"op": "splice", "path": ["l"], "index": 1, "remove": 2, "insert": []}]


def test_an_item_edited_in_place_is_diffed_at_its_index() -> None:
    old = {"tools": [{"output": "ab"}, {"output": "x"}]}
    new = {"tools": [{"output": "ab"}, {"output": "xyz"}]}

    assert diff_json(old, new, WHERE) == [
        {"op": "append", "path": ["tools", 1, "output"], "text": "yz"}
    ]


@pytest.mark.parametrize(
    ("before", "after"),
    [(True, 1), (1, True), (1, 1.0), (1.0, 1), (0, False), (None, 0), ("1", 1), ([], {}), ({}, [])],
)
def test_a_change_of_json_type_is_a_set_even_when_python_calls_the_values_equal(
    before: Any, after: Any
) -> None:
    assert diff_json({"v": before}, {"v": after}, WHERE) == [
        {"op": "set", "path": ["v"], "value": after}
    ]


def test_negative_zero_is_not_taken_for_zero_because_they_serialize_apart() -> None:
    assert diff_json({"v": 0.0}, {"v": -0.0}, WHERE) == [
        {"op": "set", "path": ["v"], "value": -0.0}
    ]
    assert diff_json({"l": [0.0]}, {"l": [-0.0, 1]}, WHERE)[0]["remove"] == 1


def test_a_list_item_whose_type_changed_is_not_taken_as_unchanged() -> None:
    ops = diff_json({"l": [1, 2]}, {"l": [True, 2, 3]}, WHERE)
    result = apply_ops({"l": [1, 2]}, ops)
    assert _json_text(result) == _json_text({"l": [True, 2, 3]})


def test_equal_values_give_no_operations() -> None:
    value = {"a": [1, {"b": "c"}], "d": 1.5, "e": None, "f": False}
    assert diff_json(value, copy_json(value), WHERE) == []


def test_removed_keys_are_deleted_and_added_keys_set() -> None:
    assert diff_json({"a": 1, "b": 2}, {"b": 2, "c": [3]}, WHERE) == [
        {"op": "delete", "path": ["a"]},
        {"op": "set", "path": ["c"], "value": [3]},
    ]


def test_operations_never_share_containers_with_the_new_value() -> None:
    new: dict[str, Any] = {"added": {"deep": [1]}, "items": [[2]]}
    ops = diff_json({"items": []}, new, WHERE)
    new["added"]["deep"].append("later")
    new["items"][0].append("later")

    assert apply_ops({"items": []}, ops) == {"added": {"deep": [1]}, "items": [[2]]}


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            {"tools": [{"output": "x"}]},
            {"tools": [{"output": b"x"}]},
            r'^docs\["pi.live"\]\.tools\[0\]\.output: bytes is not JSON$',
        ),
        (
            {"tools": []},
            {"tools": [{"output": b"x"}]},
            r'^docs\["pi.live"\]\.tools\[0\]\.output: bytes is not JSON$',
        ),
        ({}, {"t": (1, 2)}, r'^docs\["pi.live"\]\.t: tuple is not JSON$'),
        ({}, {"odd key": {1}}, r'^docs\["pi.live"\]\["odd key"\]: set is not JSON$'),
        ({"odd key": 1}, {"odd key": {1}}, r'^docs\["pi.live"\]\["odd key"\]: set is not JSON$'),
        ({"m": {}}, {"m": {1: "x"}}, r'^docs\["pi.live"\]\.m: key 1 is not a string$'),
    ],
)
def test_a_non_json_value_is_refused_with_its_path(old: Any, new: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        diff_json(old, new, WHERE)


def test_a_non_finite_number_is_refused_with_its_path() -> None:
    with pytest.raises(ValueError, match=r'^docs\["pi.live"\]\.n: nan is not '):
        diff_json({"n": 1.0}, {"n": math.nan}, WHERE)


def test_a_cycle_is_refused_with_its_path_instead_of_overflowing_the_stack() -> None:
    new: dict[str, Any] = {"loop": {}}
    new["loop"]["again"] = new
    with pytest.raises(ValueError, match=r'^docs\["pi.live"\]\.loop: .*cycle'):
        diff_json({}, new, WHERE)


# -- the property: the operations reproduce the new value --

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_json = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=4), children, max_size=5)
    ),
    max_leaves=25,
)


def _grown(value: Any) -> st.SearchStrategy[Any]:
    """Values close to ``value``: what a commit usually does to a document."""
    if isinstance(value, str):
        return st.text(max_size=6).map(lambda tail: value + tail)
    if isinstance(value, list):
        return st.lists(_json, max_size=3).map(lambda tail: [*value, *tail])
    return _json


@st.composite
def _pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    old = draw(_json)
    new = draw(st.one_of(_json, _grown(old)))
    return old, new


@settings(max_examples=300, deadline=None)
@given(_pairs())
def test_applying_the_diff_to_the_old_value_gives_the_new_value_and_changes_neither(
    pair: tuple[Any, Any],
) -> None:
    old, new = pair
    old_before, new_before = _json_text(old), _json_text(new)

    ops = diff_json(old, new, WHERE)

    assert _json_text(old) == old_before
    assert _json_text(new) == new_before
    # Applied to a copy: this property is about the diff. Whether ``apply_ops`` keeps
    # its own input intact is the storage layer's contract, and the kernel does not
    # rely on it (it keeps a copy of the draft as the committed value).
    result = apply_ops(copy_json(old), ops)
    assert _json_text(result) == new_before
    if old_before == new_before:
        assert ops == []
