"""Output limits, retention of a complete text, sizes and the truncation notice (R97, R102, 3.5)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_durable_tui.harness.extensions._bounds import (
    BoundedText,
    OutputLimits,
    bound_text,
    format_size,
    truncation_notice,
)

HEAD = OutputLimits(max_bytes=10, max_lines=3, retain="head")
TAIL = OutputLimits(max_bytes=10, max_lines=3, retain="tail")

# Text built from pieces that exercise lines, empty lines and multi-byte characters.
texts = st.lists(
    st.sampled_from(["a", "bc", "\n", "\n\n", "é", "€", "😀", "\t", " "]), max_size=40
).map("".join)
limits = st.builds(
    OutputLimits,
    max_bytes=st.integers(0, 24),
    max_lines=st.integers(0, 6),
    retain=st.sampled_from(["head", "tail"]),
)


def _naive(text: str, limits: OutputLimits) -> BoundedText:
    """Section 3.5 spelled out line by line, character by character."""
    lines = re.findall(r"[^\n]*\n|[^\n]+", text)
    size = len(text.encode())
    if limits.keeps_nothing:
        return BoundedText("", size, len(lines))
    ordered = lines if limits.retain == "head" else lines[::-1]
    kept: list[str] = []
    used = 0
    for line in ordered:
        if len(kept) == limits.max_lines or used + len(line.encode()) > limits.max_bytes:
            break
        kept.append(line)
        used += len(line.encode())
    if not kept and ordered:
        cut = ordered[0]
        while len(cut.encode()) > limits.max_bytes:
            cut = cut[:-1] if limits.retain == "head" else cut[1:]
        kept = [cut] if cut else []
    result = "".join(kept if limits.retain == "head" else kept[::-1])
    return BoundedText(result, size - len(result.encode()), len(lines) - len(kept))


@given(texts, limits)
def test_bound_text_keeps_whole_lines_within_both_limits_as_section_3_5_says(
    text: str, limits: OutputLimits
) -> None:
    assert bound_text(text, limits) == _naive(text, limits)


@given(texts, limits)
def test_bound_text_measures_a_string_by_its_utf8_bytes(text: str, limits: OutputLimits) -> None:
    assert bound_text(text, limits) == bound_text(text.encode(), limits)


@given(st.binary(max_size=60), limits)
def test_bound_text_of_invalid_utf8_keeps_an_exact_prefix_or_suffix_of_the_decoded_whole(
    data: bytes, limits: OutputLimits
) -> None:
    bounded = bound_text(data, limits)
    whole = data.decode("utf-8", "replace")
    if limits.retain == "head":
        assert whole.startswith(bounded.text)
    else:
        assert whole.endswith(bounded.text)
    assert 0 <= bounded.dropped_bytes <= len(data)
    assert bounded.truncated == (bounded.dropped_bytes > 0)


def test_head_keeps_the_first_lines_and_counts_what_it_dropped_r102() -> None:
    assert bound_text("one\ntwo\nthree\nfour\n", OutputLimits(100, 2)) == BoundedText(
        "one\ntwo\n", dropped_bytes=11, dropped_lines=2
    )


def test_head_stops_before_a_line_that_would_pass_the_byte_limit() -> None:
    assert bound_text("abc\ndefghi\nij", HEAD) == BoundedText("abc\n", 9, 2)


def test_head_cuts_an_over_long_first_line_at_the_byte_limit_on_a_character_boundary() -> None:
    # "é" is two bytes: byte 10 would split the fifth one, so the cut falls at 9.
    assert bound_text("aéééééé\nb", HEAD) == BoundedText("aéééé", 6, 1)
    assert bound_text("abcdefghijkl", HEAD) == BoundedText("abcdefghij", 2, 0)


def test_tail_keeps_the_last_lines_and_a_trailing_newline_ends_the_last_one() -> None:
    assert bound_text("1\n2\n3\n4\n", TAIL) == BoundedText("2\n3\n4\n", 2, 1)
    assert bound_text("1\n2\n3\n4", TAIL) == BoundedText("2\n3\n4", 2, 1)


def test_tail_keeps_the_final_bytes_of_an_over_long_last_line_from_a_character_boundary() -> None:
    assert bound_text("x\nabcdefghijk\n", TAIL) == BoundedText("cdefghijk\n", 4, 1)
    # The 10-byte window would start inside the first "€" (3 bytes); it starts after it.
    assert bound_text("€€€€", TAIL) == BoundedText("€€€", 3, 0)


def test_an_unterminated_final_line_counts_as_a_line() -> None:
    assert bound_text("a\nb", OutputLimits(100, 1)) == BoundedText("a\n", 1, 1)


@pytest.mark.parametrize("limits", [OutputLimits(0, 5), OutputLimits(5, 0, "tail")])
def test_a_limit_of_zero_keeps_nothing(limits: OutputLimits) -> None:
    assert bound_text("a\nbb\n", limits) == BoundedText("", 5, 2)


def test_nothing_is_dropped_from_text_within_the_limits() -> None:
    assert bound_text("a\u0007b\r\n", OutputLimits()) == BoundedText("a\u0007b\r\n", 0, 0)
    assert not bound_text("", OutputLimits()).truncated


def test_default_limits_are_50_kib_2000_lines_and_head_r102() -> None:
    assert OutputLimits() == OutputLimits(max_bytes=51200, max_lines=2000, retain="head")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_bytes": -1}, "OutputLimits.max_bytes must be a non-negative integer, got -1"),
        ({"max_lines": 1.5}, "OutputLimits.max_lines must be a non-negative integer, got 1.5"),
        ({"max_lines": True}, "OutputLimits.max_lines must be a non-negative integer, got True"),
        ({"retain": "middle"}, 'OutputLimits.retain must be "head" or "tail", got \'middle\''),
    ],
)
def test_output_limits_reject_bad_values_naming_the_field(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        OutputLimits(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0B"),
        (1023, "1023B"),
        (1024, "1.0KB"),
        (51200, "50.0KB"),
        (1024 * 1024 - 1, "1024.0KB"),
        (1024 * 1024, "1.0MB"),
        (5 * 1024 * 1024 + 512 * 1024, "5.5MB"),
        (1280, "1.3KB"),
        (3 * 1024 * 1024 // 2, "1.5MB"),
        (5 * 1024**3, "5120.0MB"),
    ],
)
def test_format_size_uses_bytes_then_one_decimal_kb_then_mb(size: int, text: str) -> None:
    assert format_size(size) == text


def test_truncation_notice_names_the_kept_end_unless_rebuilt_from_a_slot_r97() -> None:
    assert (
        truncation_notice(12, 3456, "head")
        == "Output truncated to its beginning: 12 lines, 3456 bytes dropped"
    )
    assert (
        truncation_notice(1, 7, "tail") == "Output truncated to its end: 1 lines, 7 bytes dropped"
    )
    assert (
        truncation_notice(1, 7, "tail", rebuilt=True)
        == "Output truncated: 1 lines, 7 bytes dropped"
    )
