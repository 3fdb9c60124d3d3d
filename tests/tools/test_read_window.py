"""The window of lines ``read`` shows and its remarks (reference 3.1).

Every message of 3.1 is asserted verbatim. The lazy sources (a line iterator,
raw byte chunks) must give the same window as the whole text, and must not be
read past the shown head when the total is known.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_durable_tui.tools._read_window import (
    RawChunks,
    ReadError,
    ReadWindow,
    Truncation,
    select_lines,
)

PATH = "src/data.txt"


def _lines(count: int, width: int = 0) -> str:
    return "\n".join(f"{number}".ljust(width, ".") for number in range(1, count + 1))


# --- selection -----------------------------------------------------------------------------------


def test_a_small_file_is_shown_whole_without_remarks() -> None:
    window = select_lines("one\ntwo\n", display_path=PATH)

    assert window == ReadWindow(
        content="one\ntwo\n",
        diagnostics=[],
        truncation=None,
        first_line=1,
        shown_lines=3,
        total_lines=3,
        next_offset=None,
    )


def test_lines_are_split_on_line_feeds_only_so_carriage_returns_stay() -> None:
    assert select_lines("a\r\nb\r\n", display_path=PATH).content == "a\r\nb\r\n"


def test_an_empty_file_is_one_empty_line() -> None:
    window = select_lines("", display_path=PATH)

    assert (window.content, window.total_lines, window.diagnostics) == ("", 1, [])


def test_offset_is_one_based_and_reads_to_the_end() -> None:
    window = select_lines(_lines(10), offset=8, display_path=PATH)

    assert window.content == "8\n9\n10"
    assert (window.first_line, window.next_offset, window.diagnostics) == (8, None, [])


@pytest.mark.parametrize("offset", [None, 0, -3, 1])
def test_a_missing_or_non_positive_offset_starts_at_the_first_line(offset: int | None) -> None:
    assert select_lines("a\nb", offset=offset, display_path=PATH).content == "a\nb"


@pytest.mark.parametrize(
    ("text", "offset", "message"),
    [
        ("a\nb\nc", 4, "Offset 4 is beyond end of file (3 lines total)"),
        ("a\nb\nc", 100, "Offset 100 is beyond end of file (3 lines total)"),
        ("", 2, "Offset 2 is beyond end of file (1 lines total)"),
    ],
)
def test_an_offset_past_the_last_line_is_refused(text: str, offset: int, message: str) -> None:
    with pytest.raises(ReadError) as caught:
        select_lines(text, offset=offset, display_path=PATH)
    assert str(caught.value) == message


def test_the_empty_line_after_a_final_newline_can_be_read() -> None:
    assert select_lines("a\nb\n", offset=3, display_path=PATH).content == ""


def test_a_limit_that_stops_before_the_end_says_how_many_lines_remain() -> None:
    window = select_lines(_lines(10), offset=3, limit=4, display_path=PATH)

    assert window.content == "3\n4\n5\n6"
    assert window.diagnostics == [
        {"severity": "info", "message": "4 more lines in file. Use offset=7 to continue."}
    ]
    assert (window.truncation, window.next_offset) == (None, 7)


def test_a_limit_that_reaches_the_end_exactly_says_nothing() -> None:
    window = select_lines(_lines(10), offset=7, limit=4, display_path=PATH)

    assert (window.content, window.diagnostics) == ("7\n8\n9\n10", [])


def test_a_limit_of_zero_shows_nothing_and_points_at_the_same_offset() -> None:
    window = select_lines(_lines(5), offset=2, limit=0, display_path=PATH)

    assert window.content == ""
    assert window.diagnostics[0]["message"] == "4 more lines in file. Use offset=2 to continue."


def test_a_negative_limit_is_refused_with_a_clear_message() -> None:
    with pytest.raises(ReadError) as caught:
        select_lines("a", limit=-1, display_path=PATH)
    assert str(caught.value) == "Invalid limit -1: it must be a number of lines, 0 or more"


# --- truncation ----------------------------------------------------------------------------------


def test_more_than_2000_lines_are_cut_at_2000_with_a_note_on_how_to_continue() -> None:
    window = select_lines(_lines(2500), display_path=PATH)

    assert window.content == _lines(2000)
    assert window.diagnostics == [
        {
            "severity": "info",
            "message": "Showing lines 1-2000 of 2500. Use offset=2001 to continue.",
            "code": "truncated",
        }
    ]
    shown_bytes = len(_lines(2000))
    assert window.truncation == Truncation("lines", False, 2000, shown_bytes, 2500, 2000, 51200)
    assert window.next_offset == 2001


def test_more_than_50_kib_is_cut_at_whole_lines_and_the_note_names_the_byte_limit() -> None:
    # 99 characters per line: 512 lines take 51,199 bytes with their line breaks.
    window = select_lines(_lines(1000, width=99), display_path=PATH)

    assert window.content == _lines(512, width=99)
    assert window.diagnostics[0]["message"] == (
        "Showing lines 1-512 of 1000 (50.0KB limit). Use offset=513 to continue."
    )
    assert window.truncation is not None
    assert (window.truncation.truncated_by, window.truncation.output_bytes) == ("bytes", 51199)


def test_the_byte_limit_counts_the_breaks_between_shown_lines_not_one_after_the_last() -> None:
    # Where read differs from the harness's head window (head_window), which keeps
    # b"aaa\n" of the same bytes: read shows lines, the bound keeps terminated ones.
    window = select_lines("aaa\nbbb\n", max_bytes=7, display_path=PATH)

    assert window.content == "aaa\nbbb"
    assert window.diagnostics[0]["message"] == (
        "Showing lines 1-2 of 3 (7B limit). Use offset=3 to continue."
    )


def test_truncation_applies_to_the_selection_and_counts_the_whole_file() -> None:
    window = select_lines(_lines(5000), offset=11, limit=3000, display_path=PATH)

    assert window.content.split("\n")[0] == "11"
    assert window.diagnostics[0]["message"] == (
        "Showing lines 11-2010 of 5000. Use offset=2011 to continue."
    )


def test_the_limits_are_parameters_and_appear_in_the_messages() -> None:
    window = select_lines(_lines(30, width=99), max_lines=100, max_bytes=2048, display_path=PATH)

    assert window.diagnostics[0]["message"] == (
        "Showing lines 1-20 of 30 (2.0KB limit). Use offset=21 to continue."
    )


def test_an_over_long_first_line_is_cut_at_the_byte_limit_with_a_sed_command_for_the_rest() -> None:
    window = select_lines("x" * 60000 + "\nnext", display_path="src/big.min.js")

    assert window.content == "x" * 51200
    assert window.diagnostics == [
        {
            "severity": "warn",
            "message": "Line 1 is 58.6KB, exceeds the 50.0KB limit; showing its first 50.0KB. "
            "Use bash: sed -n '1p' src/big.min.js | tail -c +51201",
            "code": "truncated",
        }
    ]
    assert window.truncation == Truncation("bytes", True, 1, 51200, 2, 2000, 51200)
    assert window.next_offset == 2


def test_an_over_long_line_is_cut_on_a_character_boundary() -> None:
    line = "\u20ac" * 20000  # 3 bytes each: 51,200 falls inside a character

    window = select_lines(f"a\nb\n{line}", offset=3, display_path=PATH)

    assert window.content == "\u20ac" * 17066
    assert window.diagnostics[0]["message"] == (
        "Line 3 is 58.6KB, exceeds the 50.0KB limit; showing its first 50.0KB. "
        "Use bash: sed -n '3p' src/data.txt | tail -c +51199"
    )
    assert window.next_offset is None


def test_the_sed_command_quotes_a_path_the_shell_would_split() -> None:
    window = select_lines("y" * 51201, display_path="my notes.txt")

    assert window.diagnostics[0]["message"].endswith("sed -n '1p' 'my notes.txt' | tail -c +51201")


def test_an_over_long_line_after_the_first_ends_the_window_before_it() -> None:
    window = select_lines("short\n" + "z" * 60000, display_path=PATH)

    assert window.content == "short"
    assert window.diagnostics[0]["message"] == (
        "Showing lines 1-1 of 2 (50.0KB limit). Use offset=2 to continue."
    )


def test_truncation_details_have_a_json_form() -> None:
    assert Truncation("bytes", True, 1, 10, 7, 2000, 51200).to_json() == {
        "truncated_by": "bytes",
        "first_line_exceeds_limit": True,
        "output_lines": 1,
        "output_bytes": 10,
        "total_lines": 7,
        "max_lines": 2000,
        "max_bytes": 51200,
    }


# --- lazy sources --------------------------------------------------------------------------------


class _CountingLines:
    """A line iterator that records how far it was read."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.taken = 0

    def __iter__(self) -> Iterator[str]:
        for number in range(1, self.count + 1):
            self.taken = number
            yield str(number)


def test_with_a_known_total_a_line_iterator_is_not_read_past_the_shown_head() -> None:
    lines = _CountingLines(1_000_000)

    window = select_lines(lines, offset=5, limit=10, total_lines=1_000_000, display_path=PATH)

    assert window.content == "\n".join(str(n) for n in range(5, 15))
    assert window.diagnostics[0]["message"] == (
        "999986 more lines in file. Use offset=15 to continue."
    )
    assert lines.taken == 14  # the shown lines only: the limit was reached


def test_with_a_known_total_truncation_reads_one_line_past_the_head() -> None:
    lines = _CountingLines(100_000)

    window = select_lines(lines, total_lines=100_000, display_path=PATH)

    assert window.diagnostics[0]["message"] == (
        "Showing lines 1-2000 of 100000. Use offset=2001 to continue."
    )
    assert lines.taken == 2001


def test_without_a_total_the_rest_of_the_iterator_is_counted() -> None:
    lines = _CountingLines(5000)

    window = select_lines(lines, limit=3, display_path=PATH)

    assert window.diagnostics[0]["message"] == "4997 more lines in file. Use offset=4 to continue."
    assert lines.taken == 5000


def _chunked(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def test_byte_chunks_give_the_window_of_the_decoded_text() -> None:
    text = "\u00e9t\u00e9\n" * 3000
    data = text.encode()

    from_chunks = select_lines(RawChunks(_chunked(data, 7)), offset=2, display_path=PATH)

    assert from_chunks == select_lines(text, offset=2, display_path=PATH)


def test_a_huge_single_line_from_chunks_keeps_only_the_shown_bytes() -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(64):
            yield b"q" * (1 << 20)

    window = select_lines(RawChunks(chunks()), display_path="one.line")

    assert window.content == "q" * 51200
    assert window.diagnostics[0]["message"] == (
        "Line 1 is 64.0MB, exceeds the 50.0KB limit; showing its first 50.0KB. "
        "Use bash: sed -n '1p' one.line | tail -c +51201"
    )


def test_chunks_with_a_known_total_are_not_read_past_the_shown_head() -> None:
    consumed = []

    def chunks() -> Iterator[bytes]:
        for index in range(1000):
            consumed.append(index)
            yield b"line\n" * 100

    window = select_lines(RawChunks(chunks()), limit=150, total_lines=100_001, display_path=PATH)

    assert window.shown_lines == 150
    assert len(consumed) == 2


def test_no_chunks_at_all_is_an_empty_file() -> None:
    assert select_lines(RawChunks([]), display_path=PATH) == select_lines("", display_path=PATH)


def test_invalid_utf8_in_chunks_becomes_replacement_characters() -> None:
    window = select_lines(RawChunks([b"ok\n\xff\xfe bad\n"]), display_path=PATH)

    assert window.content == "ok\n\ufffd\ufffd bad\n"


def test_an_over_long_line_of_stray_continuation_bytes_is_cut_at_the_limit_not_emptied() -> None:
    window = select_lines(RawChunks([b"\x80" * 20]), max_bytes=8, display_path=PATH)

    assert window.content == "\ufffd" * 8


_TEXTS = st.text(alphabet=st.sampled_from("ab\n\r\u00e9\u20ac\U0001f642"), max_size=120)


@given(
    text=_TEXTS,
    chunk=st.integers(min_value=1, max_value=9),
    offset=st.none() | st.integers(min_value=-1, max_value=30),
    limit=st.none() | st.integers(min_value=0, max_value=30),
    max_lines=st.integers(min_value=1, max_value=12),
    max_bytes=st.integers(min_value=1, max_value=40),
    known_total=st.booleans(),
)
def test_every_source_gives_the_same_window_as_the_whole_text(
    text: str,
    chunk: int,
    offset: int | None,
    limit: int | None,
    max_lines: int,
    max_bytes: int,
    known_total: bool,
) -> None:
    total = text.count("\n") + 1 if known_total else None

    def window(source: Any) -> ReadWindow | str:
        try:
            return select_lines(
                source,
                offset,
                limit,
                display_path=PATH,
                total_lines=total,
                max_lines=max_lines,
                max_bytes=max_bytes,
            )
        except ReadError as error:
            return str(error)

    expected = window(text)
    assert window(iter(text.split("\n"))) == expected
    assert window(RawChunks(_chunked(text.encode(), chunk))) == expected
    if isinstance(expected, ReadWindow):
        assert len(expected.content.encode()) <= max_bytes
        assert expected.content.count("\n") < max_lines
