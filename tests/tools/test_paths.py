"""Path repair shared by the coding tools, and the spellings ``read`` retries (reference 3)."""

from __future__ import annotations

import pytest

from pi_durable_tui.tools._paths import UNICODE_SPACES, normalize_tool_path, read_path_variants


@pytest.mark.parametrize("space", list(UNICODE_SPACES), ids=lambda c: f"U+{ord(c):04X}")
def test_every_unicode_space_in_a_path_becomes_a_plain_space(space: str) -> None:
    assert normalize_tool_path(f"my{space}notes.txt") == "my notes.txt"


def test_the_unicode_spaces_are_exactly_those_the_reference_lists() -> None:
    listed = {0x00A0, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000}

    assert {ord(c) for c in UNICODE_SPACES} == listed


def test_other_characters_are_left_alone() -> None:
    # U+200B (zero width space) and U+1680 are not in the list.
    assert normalize_tool_path("a\u200bb\u1680c/\u00e9 d\t") == "a\u200bb\u1680c/\u00e9 d\t"


def test_one_leading_at_sign_is_dropped() -> None:
    assert normalize_tool_path("@src/main.py") == "src/main.py"
    assert normalize_tool_path("@@twice") == "@twice"
    assert normalize_tool_path("a@b") == "a@b"


def test_spaces_are_normalized_before_the_at_sign_is_looked_for() -> None:
    assert normalize_tool_path("@\u00a0file") == " file"


def test_read_tries_the_narrow_no_break_space_before_am_and_pm() -> None:
    path = "Screenshot 2024-01-01 at 9.41.02 AM.png"

    assert read_path_variants(path)[0] == "Screenshot 2024-01-01 at 9.41.02\u202fAM.png"
    assert read_path_variants("shot 1.00 pm.png")[0] == "shot 1.00\u202fpm.png"


def test_read_tries_nfd_then_the_typographic_apostrophe_then_both() -> None:
    path = "Capture d'\u00e9cran.png"

    assert read_path_variants(path) == [
        "Capture d'e\u0301cran.png",
        "Capture d\u2019\u00e9cran.png",
        "Capture d\u2019e\u0301cran.png",
    ]


def test_all_four_variants_come_in_order_when_all_apply() -> None:
    path = "Capture d'\u00e9cran 10.00 PM.png"

    assert read_path_variants(path) == [
        "Capture d'\u00e9cran 10.00\u202fPM.png",
        "Capture d'e\u0301cran 10.00 PM.png",
        "Capture d\u2019\u00e9cran 10.00 PM.png",
        "Capture d\u2019e\u0301cran 10.00 PM.png",
    ]


def test_variants_equal_to_the_path_or_to_each_other_are_left_out() -> None:
    assert read_path_variants("plain/ascii.txt") == []
    assert read_path_variants("it's.txt") == ["it\u2019s.txt"]
