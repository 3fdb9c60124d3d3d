"""The ``edit`` engine: matching, errors and round trips (reference 3.3).

Every error message of 3.3 is asserted verbatim, in its single-edit and its
multiple-edit wording. The fuzzy-matching rules are tested one at a time, each
checking both that the edit lands and that untouched lines keep their bytes.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_durable_tui.tools._edit_diff import unified_patch
from pi_durable_tui.tools._edit_engine import (
    EditError,
    EditSpec,
    apply_edits,
    normalize_for_fuzzy_match,
    repair_edit_arguments,
)
from tests.tools.patch_support import apply_unified_patch

PATH = "src/app.py"


def _error(content: str, *edits: tuple[str, str]) -> str:
    with pytest.raises(EditError) as caught:
        apply_edits(PATH, content, [EditSpec(old, new) for old, new in edits])
    return str(caught.value)


def _edited(content: str, *edits: tuple[str, str]) -> str:
    return apply_edits(PATH, content, [EditSpec(old, new) for old, new in edits]).content


# --- exact matching ------------------------------------------------------------------------------


def test_a_unique_old_text_is_replaced_and_the_outcome_says_what_changed() -> None:
    outcome = apply_edits(PATH, "a\nb\nc\n", [EditSpec("b\n", "B\nB2\n")])

    assert outcome.content == "a\nB\nB2\nc\n"
    assert outcome.blocks == 1
    assert outcome.first_changed_line == 2
    assert (outcome.before, outcome.after) == ("a\nb\nc\n", "a\nB\nB2\nc\n")
    assert not outcome.fuzzy


def test_every_edit_matches_the_original_text_not_the_result_of_earlier_edits() -> None:
    # Applied incrementally, the second edit would turn the first one's "b" into "c".
    assert _edited("a\nb\n", ("a", "b"), ("b", "c")) == "b\nc\n"


def test_edits_are_applied_wherever_they_are_regardless_of_their_order_in_the_call() -> None:
    outcome = apply_edits(PATH, "one\ntwo\nthree\n", [EditSpec("three", "3"), EditSpec("one", "1")])

    assert outcome.content == "1\ntwo\n3\n"
    assert outcome.blocks == 2
    assert outcome.first_changed_line == 1


def test_edits_that_touch_without_overlapping_are_both_applied() -> None:
    assert _edited("abcdef", ("abc", "X"), ("def", "Y")) == "XY"


def test_new_text_may_be_empty_to_delete_the_old_text() -> None:
    assert _edited("keep\ndrop\nkeep too\n", ("drop\n", "")) == "keep\nkeep too\n"


# --- the errors of 3.3, verbatim -----------------------------------------------------------------


def test_no_edits_at_all_is_invalid_input() -> None:
    with pytest.raises(EditError) as caught:
        apply_edits(PATH, "text", [])
    assert str(caught.value) == (
        "Edit tool input is invalid. edits must contain at least one replacement."
    )


def test_an_empty_old_text_is_refused_in_the_single_edit_wording() -> None:
    assert _error("text", ("", "x")) == "oldText must not be empty in src/app.py."


def test_an_empty_old_text_is_refused_naming_its_index_among_several_edits() -> None:
    assert _error("text", ("text", "x"), ("", "y")) == (
        "edits[1].oldText must not be empty in src/app.py."
    )


def test_a_missing_old_text_is_reported_in_the_single_edit_wording() -> None:
    assert _error("alpha\n", ("beta", "x")) == (
        "Could not find the exact text in src/app.py. The old text must match exactly "
        "including all whitespace and newlines."
    )


def test_a_missing_old_text_is_reported_naming_its_index_among_several_edits() -> None:
    assert _error("alpha\n", ("alpha", "x"), ("beta", "y")) == (
        "Could not find edits[1] in src/app.py. The oldText must match exactly including all "
        "whitespace and newlines."
    )


def test_a_repeated_old_text_is_reported_with_its_count_in_the_single_edit_wording() -> None:
    assert _error("x = 1\nx = 1\nx = 1\n", ("x = 1", "x = 2")) == (
        "Found 3 occurrences of the text in src/app.py. The text must be unique. Please provide "
        "more context to make it unique."
    )


def test_a_repeated_old_text_is_reported_naming_its_index_among_several_edits() -> None:
    assert _error("a\nx\nx\n", ("a", "b"), ("x", "y")) == (
        "Found 2 occurrences of edits[1] in src/app.py. Each oldText must be unique. Please "
        "provide more context to make it unique."
    )


def test_overlapping_occurrences_count_as_separate_occurrences() -> None:
    # "aa" starts at 0 and at 1 in "aaa": replacing either would be a guess.
    assert _error("aaa", ("aa", "b")).startswith("Found 2 occurrences of the text")


def test_overlapping_edits_are_refused_naming_both_in_file_order() -> None:
    assert _error("0123456789", ("567", "x"), ("345", "y")) == (
        "edits[1] and edits[0] overlap in src/app.py. Merge them into one edit or target "
        "disjoint regions."
    )


def test_a_replacement_that_changes_nothing_is_reported_in_the_single_edit_wording() -> None:
    assert _error("same\n", ("same", "same")) == (
        "No changes made to src/app.py. The replacement produced identical content. This might "
        "indicate an issue with special characters or the text not existing as expected."
    )


def test_replacements_that_change_nothing_are_reported_in_the_multiple_edit_wording() -> None:
    assert _error("a b\n", ("a", "a"), ("b", "b")) == (
        "No changes made to src/app.py. The replacements produced identical content."
    )


def test_errors_are_checked_in_order_empty_texts_first_then_each_edit_in_turn() -> None:
    # edits[1] is missing and edits[2] empty: the empty one is reported first.
    assert _error("a", ("a", "b"), ("zzz", "y"), ("", "x")).startswith("edits[2].oldText")
    # edits[0] is repeated and edits[1] missing: edit order decides.
    assert _error("a a", ("a", "b"), ("zzz", "y")).startswith("Found 2 occurrences of edits[0]")


# --- line endings and BOM ------------------------------------------------------------------------


def test_a_crlf_file_is_matched_with_lf_old_text_and_keeps_crlf_everywhere() -> None:
    outcome = apply_edits(PATH, "one\r\ntwo\r\nthree\r\n", [EditSpec("two\nthree", "2\n3")])

    assert outcome.content == "one\r\n2\r\n3\r\n"
    assert outcome.before == "one\ntwo\nthree\n"
    assert outcome.after == "one\n2\n3\n"


def test_crlf_in_the_model_s_old_and_new_text_is_read_as_lf() -> None:
    assert _edited("one\ntwo\n", ("one\r\ntwo", "1\r\n2")) == "1\n2\n"


def test_the_first_line_break_decides_the_ending_of_the_whole_result() -> None:
    assert _edited("a\nb\r\nc\r\n", ("a", "A")) == "A\nb\nc\n"
    assert _edited("a\r\nb\nc\n", ("a", "A")) == "A\r\nb\r\nc\r\n"


def test_a_lone_carriage_return_is_not_a_line_break_and_survives_the_edit() -> None:
    assert _edited("progress\r100%\nnext\n", ("next", "then")) == "progress\r100%\nthen\n"


def test_a_bom_is_invisible_to_matching_and_kept_in_the_result() -> None:
    outcome = apply_edits(PATH, "\ufeffimport os\r\n", [EditSpec("import os", "import sys")])

    assert outcome.content == "\ufeffimport sys\r\n"
    assert outcome.before == "import os\n"
    assert outcome.first_changed_line == 1


# --- fuzzy matching, rule by rule ----------------------------------------------------------------

FUZZY_RULES = [
    pytest.param("value = 1   ", "value = 1", id="trailing-whitespace"),
    pytest.param("name = \u2018x\u2019", "name = 'x'", id="smart-single-quotes"),
    pytest.param("s = \u201chi\u201d", 's = "hi"', id="smart-double-quotes"),
    pytest.param("low \u201ahigh\u201b", "low 'high'", id="low-and-reversed-single-quotes"),
    pytest.param("\u201eq\u201f", '"q"', id="low-and-reversed-double-quotes"),
    pytest.param("a \u2010 b", "a - b", id="hyphen"),
    pytest.param("a \u2011 b", "a - b", id="non-breaking-hyphen"),
    pytest.param("a \u2012 b", "a - b", id="figure-dash"),
    pytest.param("a \u2013 b", "a - b", id="en-dash"),
    pytest.param("a \u2014 b", "a - b", id="em-dash"),
    pytest.param("a \u2015 b", "a - b", id="horizontal-bar"),
    pytest.param("x \u2212 y", "x - y", id="minus-sign"),
    pytest.param("a\u00a0b", "a b", id="no-break-space"),
    pytest.param("a\u2003b", "a b", id="em-space"),
    pytest.param("a\u202fb", "a b", id="narrow-no-break-space"),
    pytest.param("a\u205fb", "a b", id="medium-mathematical-space"),
    pytest.param("a\u3000b", "a b", id="ideographic-space"),
    pytest.param("\ufb01le", "file", id="nfkc-ligature"),
    pytest.param("\uff41\uff42\uff43", "abc", id="nfkc-fullwidth"),
]


@pytest.mark.parametrize(("in_file", "as_typed"), FUZZY_RULES)
def test_a_fuzzy_rule_lets_the_typed_text_match_and_rewrites_only_the_touched_line(
    in_file: str, as_typed: str
) -> None:
    untouched = f"keep {in_file}  "  # the same characters, on a line the edit does not touch
    content = f"{untouched}\nfirst {in_file}\nlast\n"

    # The line break after the typed text makes trailing whitespace matter too.
    outcome = apply_edits(PATH, content, [EditSpec(f"first {as_typed}\nlast", "replaced\nlast")])

    assert outcome.fuzzy
    assert outcome.content == f"{untouched}\nreplaced\nlast\n"


def test_a_touched_line_is_rewritten_from_its_normalized_form_outside_the_match_too() -> None:
    content = "say(\u201chi\u201d, x)   \n"

    assert _edited(content, ('"hi"', '"hello"')) == 'say("hello", x)\n'


def test_one_edit_needing_fuzzy_matching_puts_every_edit_on_the_normalized_text() -> None:
    content = "exact line\u00a0  \nfancy \u2018q\u2019\nother\u00a0line  \n"

    outcome = apply_edits(PATH, content, [EditSpec("exact", "EXACT"), EditSpec("'q'", "'r'")])

    assert outcome.fuzzy
    # Both touched lines come from the normalized text; the untouched one keeps its bytes.
    assert outcome.content == "EXACT line\nfancy 'r'\nother\u00a0line  \n"


def test_text_that_is_unique_only_before_normalization_is_ambiguous_for_fuzzy_matching() -> None:
    content = "x = \u2018a\u2019\nx = 'a'\ny = \u201cz\u201d\n"

    assert _error(content, ('y = "z"', "y = 1"), ("x = 'a'", "x = 2")) == (
        "Found 2 occurrences of edits[1] in src/app.py. Each oldText must be unique. Please "
        "provide more context to make it unique."
    )


def test_a_fuzzy_match_across_lines_deletes_them_with_their_line_breaks() -> None:
    content = "head\u00a0 \nremove \u2018me\u2019  \nand me\ntail \u2014 end  \n"

    assert _edited(content, ("remove 'me'\nand me\n", "")) == "head\u00a0 \ntail \u2014 end  \n"


def test_two_fuzzy_edits_on_one_line_are_applied_together() -> None:
    content = "f(\u2018a\u2019, \u2018b\u2019)  \nnext\u00a0 \n"

    assert _edited(content, ("'a'", "1"), ("'b'", "2")) == "f(1, 2)\nnext\u00a0 \n"


def test_fuzzy_matching_keeps_crlf_and_bom_of_the_original() -> None:
    content = "\ufeffa \u2013 b  \r\nkeep\u00a0 \r\n"

    assert _edited(content, ("a - b", "c")) == "\ufeffc\r\nkeep\u00a0 \r\n"


def test_old_text_of_only_trailing_whitespace_is_not_found_rather_than_found_everywhere() -> None:
    assert _error("a\nb\n", ("  ", "x")).startswith("Could not find the exact text")


def test_normalization_keeps_the_line_count_of_any_text() -> None:
    text = "a\u2028b\n\u0085\n\r\n\u00a0\u3000\n\ufb01\n"

    assert normalize_for_fuzzy_match(text).count("\n") == text.count("\n")


# --- properties ----------------------------------------------------------------------------------

_LINE = st.text(alphabet=st.sampled_from("ab \t\u2018\u2019\u00a0-"), max_size=6)
_LINES = st.lists(_LINE, min_size=1, max_size=12)


@given(
    lines=_LINES,
    at=st.integers(min_value=0),
    crlf=st.booleans(),
    bom=st.booleans(),
    replacement=st.text(alphabet="xyz\n", max_size=8),
)
def test_replacing_a_unique_marker_and_back_restores_the_file_byte_for_byte(
    lines: list[str], at: int, crlf: bool, bom: bool, replacement: str
) -> None:
    marker = "<<MARK>>"
    lines.insert(at % (len(lines) + 1), marker)
    ending = "\r\n" if crlf else "\n"
    original = ("\ufeff" if bom else "") + ending.join(lines) + ending
    new_text = f"[{replacement}]"

    edited = apply_edits(PATH, original, [EditSpec(marker, new_text)])
    restored = apply_edits(PATH, edited.content, [EditSpec(new_text, marker)])

    assert restored.content == original
    assert not edited.fuzzy


@given(lines=_LINES, picks=st.lists(st.integers(min_value=0), min_size=1, max_size=3))
def test_the_patch_of_an_outcome_turns_its_before_into_its_after(
    lines: list[str], picks: list[int]
) -> None:
    tagged = [f"<{index}>{line}" for index, line in enumerate(lines)]
    chosen = sorted({pick % len(tagged) for pick in picks})
    edits = [EditSpec(f"<{index}>", f"[{index}]") for index in chosen]

    outcome = apply_edits(PATH, "\n".join(tagged) + "\n", edits)

    patch = unified_patch(PATH, outcome.before, outcome.after)
    assert apply_unified_patch(outcome.before, patch) == outcome.after
    assert outcome.first_changed_line == chosen[0] + 1


# --- argument repair (prepareArguments) ----------------------------------------------------------

ONE = {"oldText": "a", "newText": "b"}
TWO = {"oldText": "c", "newText": "d"}


def test_edits_sent_as_a_json_array_string_are_parsed() -> None:
    raw = {"path": "f", "edits": '[{"oldText": "a", "newText": "b"}]'}

    assert repair_edit_arguments(raw) == {"path": "f", "edits": [ONE]}


def test_edits_sent_as_a_json_object_string_are_parsed_and_wrapped() -> None:
    raw = {"path": "f", "edits": '{"oldText": "a", "newText": "b"}'}

    assert repair_edit_arguments(raw) == {"path": "f", "edits": [ONE]}


def test_a_single_edit_object_is_wrapped_in_a_list() -> None:
    assert repair_edit_arguments({"path": "f", "edits": ONE}) == {"path": "f", "edits": [ONE]}


def test_top_level_old_and_new_text_are_appended_after_the_given_edits() -> None:
    raw = {"path": "f", "edits": [ONE], "oldText": "c", "newText": "d"}

    assert repair_edit_arguments(raw) == {"path": "f", "edits": [ONE, TWO]}


def test_top_level_old_and_new_text_become_the_edits_when_there_are_none() -> None:
    assert repair_edit_arguments({"path": "f", "oldText": "c", "newText": "d"}) == {
        "path": "f",
        "edits": [TWO],
    }


def test_top_level_old_and_new_text_replace_edits_that_are_not_a_list() -> None:
    raw = {"path": "f", "edits": "not json", "oldText": "c", "newText": "d"}

    assert repair_edit_arguments(raw) == {"path": "f", "edits": [TWO]}


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"path": "f", "edits": "not json"}, id="unparsable-string"),
        pytest.param({"path": "f", "edits": '"a string"'}, id="json-scalar-string"),
        pytest.param({"path": "f", "edits": [ONE], "oldText": "c"}, id="old-text-alone"),
        pytest.param({"path": "f", "oldText": 1, "newText": "d"}, id="old-text-not-a-string"),
        pytest.param({"path": "f", "edits": []}, id="empty-list"),
    ],
)
def test_shapes_repair_cannot_fix_are_left_for_validation_to_report(raw: dict[str, object]) -> None:
    assert repair_edit_arguments(raw) == raw


def test_repair_works_on_a_copy_and_never_mutates_the_input() -> None:
    inner = {"oldText": "a", "newText": "b"}
    raw = {"path": "f", "edits": [inner], "oldText": "c", "newText": "d"}

    repaired = repair_edit_arguments(raw)
    repaired["edits"][0]["oldText"] = "changed"

    assert raw == {"path": "f", "edits": [ONE], "oldText": "c", "newText": "d"}
    assert inner == ONE


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["oldText", "newText", "x"]), children, max_size=3)
    ),
    max_leaves=8,
)
_EDIT_VALUES = _JSON | _JSON.map(json.dumps)


@given(
    edits=_EDIT_VALUES,
    old_text=st.none() | st.text(max_size=3) | st.integers(),
    new_text=st.none() | st.text(max_size=3),
)
def test_repairing_a_repaired_value_changes_nothing(
    edits: object, old_text: object, new_text: object
) -> None:
    raw: dict[str, object] = {"path": "f", "edits": edits}
    if old_text is not None:
        raw["oldText"] = old_text
    if new_text is not None:
        raw["newText"] = new_text

    once = repair_edit_arguments(raw)

    assert repair_edit_arguments(once) == once
