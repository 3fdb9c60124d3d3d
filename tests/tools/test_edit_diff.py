"""Display diff, unified patch and first changed line of an edit (reference 3.3).

The display diff is asserted character for character on small cases (prefix,
padded numbers, 4 context lines, ``...`` elisions); the patch is checked by
applying it, with the real ``patch`` program and with a strict applier, and the
alignment is checked to be minimal against a brute-force longest common
subsequence.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui.tools import _edit_diff
from pi_durable_tui.tools._edit_diff import display_diff, first_changed_line, unified_patch
from tests.tools.patch_support import apply_unified_patch


def _numbered(count: int) -> str:
    return "".join(f"line {number}\n" for number in range(1, count + 1))


# --- display diff --------------------------------------------------------------------------------


def test_a_changed_line_shows_removed_then_added_with_four_context_lines_each_side() -> None:
    old = _numbered(20)
    new = old.replace("line 10\n", "line ten\n")

    assert display_diff(old, new) == "\n".join(
        [
            "    ...",
            "  6 line 6",
            "  7 line 7",
            "  8 line 8",
            "  9 line 9",
            "-10 line 10",
            "+10 line ten",
            " 11 line 11",
            " 12 line 12",
            " 13 line 13",
            " 14 line 14",
            "    ...",
        ]
    )


def test_unchanged_runs_at_the_edges_are_not_elided_when_context_covers_them() -> None:
    assert display_diff("a\nb\nc\n", "a\nB\nc\n") == " 1 a\n-2 b\n+2 B\n 3 c"


def test_a_short_run_between_two_changes_is_shown_whole() -> None:
    old = _numbered(12)
    new = old.replace("line 2\n", "two\n").replace("line 11\n", "eleven\n")

    shown = display_diff(old, new).split("\n")

    assert shown[shown.index("+ 2 two") + 1 : shown.index("-11 line 11")] == [
        f"{number:>3} line {number}" for number in range(3, 11)
    ]
    assert "    ..." not in shown


def test_a_long_run_between_two_changes_keeps_four_lines_each_side_around_one_elision() -> None:
    old = _numbered(30)
    new = old.replace("line 2\n", "two\n").replace("line 29\n", "twenty-nine\n")

    shown = display_diff(old, new).split("\n")

    between = shown[shown.index("+ 2 two") + 1 : shown.index("-29 line 29")]
    assert between == [
        "  3 line 3",
        "  4 line 4",
        "  5 line 5",
        "  6 line 6",
        "    ...",
        " 25 line 25",
        " 26 line 26",
        " 27 line 27",
        " 28 line 28",
    ]


def test_line_numbers_are_padded_to_the_width_of_the_longer_text() -> None:
    old = "a\n"
    new = "a\n" + _numbered(120)

    shown = display_diff(old, new).split("\n")

    # 122 lines counting the empty one after the final newline: 3 digits.
    assert shown[:3] == ["   1 a", "+  2 line 1", "+  3 line 2"]
    assert shown[-1] == "+121 line 120"


def test_removed_lines_carry_old_numbers_and_added_lines_new_numbers() -> None:
    old = "a\nb\nc\nd\n"
    new = "a\nX\nY\nZ\nd\n"

    assert display_diff(old, new) == " 1 a\n-2 b\n-3 c\n+2 X\n+3 Y\n+4 Z\n 4 d"


def test_a_change_of_the_final_newline_is_shown() -> None:
    assert display_diff("a\nb", "a\nb\n") == " 1 a\n-2 b\n+2 b"


def test_equal_texts_have_an_empty_diff_and_no_first_changed_line() -> None:
    assert display_diff("same\n", "same\n") == ""
    assert first_changed_line("same\n", "same\n") is None


def test_the_context_width_is_a_parameter() -> None:
    old = _numbered(9)
    new = old.replace("line 5\n", "five\n")

    assert display_diff(old, new, context=1).split("\n") == [
        "    ...",
        "  4 line 4",
        "- 5 line 5",
        "+ 5 five",
        "  6 line 6",
        "    ...",
    ]


# --- first changed line --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        pytest.param("a\nb\nc\n", "a\nB\nc\n", 2, id="replacement"),
        pytest.param("a\nb\nc\n", "a\nc\n", 2, id="deletion-points-at-the-line-after"),
        pytest.param("a\nb\n", "a\nb\nc\n", 3, id="append"),
        pytest.param("a\nb\n", "x\na\nb\n", 1, id="prepend"),
        pytest.param("a", "a\n", 1, id="final-newline"),
    ],
)
def test_the_first_changed_line_is_counted_in_the_new_text(old: str, new: str, line: int) -> None:
    assert first_changed_line(old, new) == line
    first_change = next(row for row in display_diff(old, new).split("\n") if row[0] in "+-")
    if first_change[0] == "+":
        assert int(first_change[1:].split()[0]) == line


# --- unified patch -------------------------------------------------------------------------------


def test_a_patch_has_file_headers_and_hunks_with_four_context_lines() -> None:
    old = _numbered(20)
    new = old.replace("line 10\n", "line ten\n")

    assert unified_patch("src/a.txt", old, new) == (
        "--- src/a.txt\n"
        "+++ src/a.txt\n"
        "@@ -6,9 +6,9 @@\n"
        " line 6\n line 7\n line 8\n line 9\n"
        "-line 10\n+line ten\n"
        " line 11\n line 12\n line 13\n line 14\n"
    )


def test_changes_far_apart_get_separate_hunks_and_near_ones_share_one() -> None:
    old = _numbered(40)
    far = old.replace("line 2\n", "two\n").replace("line 39\n", "x\n")
    near = old.replace("line 2\n", "two\n").replace("line 11\n", "x\n")

    assert unified_patch("f", old, far).count("@@ -") == 2
    assert unified_patch("f", old, near).count("@@ -") == 1


def test_a_missing_final_newline_is_marked_in_the_patch() -> None:
    assert unified_patch("f", "a\nb", "a\nc") == (
        "--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
        "\\ No newline at end of file\n"
    )


def test_ranges_follow_the_unified_format_for_single_and_empty_ranges() -> None:
    assert unified_patch("f", "", "new\n") == "--- f\n+++ f\n@@ -0,0 +1 @@\n+new\n"
    assert unified_patch("f", "old\n", "") == "--- f\n+++ f\n@@ -1 +0,0 @@\n-old\n"


def test_equal_texts_give_a_patch_with_headers_only() -> None:
    assert unified_patch("f", "same\n", "same\n") == "--- f\n+++ f\n"


@pytest.mark.skipif(shutil.which("patch") is None, reason="the patch program is not installed")
@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(_numbered(50), _numbered(50).replace("line 7\n", "seven\n"), id="one-line"),
        pytest.param(
            _numbered(60),
            "head\n" + _numbered(60).replace("line 30\n", "").replace("line 59\n", "x\ny\n"),
            id="three-hunks",
        ),
        pytest.param("a\nb", "a\nb\nc", id="no-final-newline"),
        pytest.param("", "created\n", id="from-empty"),
    ],
)
def test_the_patch_program_applies_the_patch(tmp_path: Path, old: str, new: str) -> None:
    target = tmp_path / "file.txt"
    target.write_text(old)
    patch = unified_patch("file.txt", old, new)

    subprocess.run(
        ["patch", "--quiet", "--batch", "-p0"],
        input=patch.encode(),
        cwd=tmp_path,
        check=True,
        timeout=30,
    )

    assert target.read_text() == new


# --- alignment -----------------------------------------------------------------------------------


def _lcs(old: list[str], new: list[str]) -> int:
    table = [[0] * (len(new) + 1) for _ in range(len(old) + 1)]
    for i in range(len(old) - 1, -1, -1):
        for j in range(len(new) - 1, -1, -1):
            if old[i] == new[j]:
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    return table[0][0]


_TEXT = st.text(alphabet="ab\n", max_size=40)


@given(old=_TEXT, new=_TEXT)
def test_the_alignment_keeps_a_longest_common_subsequence_of_lines(old: str, new: str) -> None:
    old_lines, new_lines = _edit_diff._split_lines(old), _edit_diff._split_lines(new)

    runs = _edit_diff._align(old_lines, new_lines)

    kept = sum(run.old_end - run.old_start for run in runs if run.equal)
    assert kept == _lcs(old_lines, new_lines)
    assert apply_unified_patch(old, unified_patch("f", old, new)) == new


@settings(max_examples=50)
@given(old=_TEXT, new=_TEXT)
def test_past_the_myers_budget_the_anchored_alignment_still_yields_a_correct_patch(
    old: str, new: str
) -> None:
    with mock.patch.object(_edit_diff, "_MYERS_MAX_COST", 2):
        patch = unified_patch("f", old, new)
        shown = display_diff(old, new).split("\n") if old != new else []

    assert apply_unified_patch(old, patch) == new
    removed = sum(row.startswith("-") for row in shown)
    added = sum(row.startswith("+") for row in shown)
    assert len(_edit_diff._split_lines(old)) - removed == len(_edit_diff._split_lines(new)) - added
