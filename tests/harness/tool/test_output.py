"""The tool output buffer: bounded, exact for any chunking, sanitized, append-aware (R102-R105)."""

from __future__ import annotations

import itertools
import re
import tracemalloc

import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

from pi_durable_tui.harness.extensions._bounds import OutputLimits, bound_text, tail_window
from pi_durable_tui.harness.tool._output import OutputChange, ToolOutputBuffer, sanitize_output

# Bytes built from pieces that exercise lines, control characters, multi-byte
# characters (split anywhere by the chunking) and invalid UTF-8.
PIECES = [b"a", b"bc", b"\n", b"\r\n", b"\x07", b"\t", "é".encode(), "€".encode()]
PIECES += ["😀".encode(), "\ufffa".encode(), b"\xff", b"\x80", b"\xe2\x82", b"\xf0\x9f"]
streams = st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join)
long_streams = st.lists(st.sampled_from(PIECES), min_size=20, max_size=80).map(b"".join)
limits = st.builds(
    OutputLimits,
    max_bytes=st.integers(0, 24),
    max_lines=st.integers(0, 6),
    retain=st.sampled_from(["head", "tail"]),
)


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def _assert_matches_whole(buffer: ToolOutputBuffer, data: bytes) -> None:
    expected = bound_text(data, buffer.limits)
    assert buffer.text == sanitize_output(expected.text)
    assert buffer.dropped_bytes == expected.dropped_bytes
    assert buffer.dropped_lines == expected.dropped_lines
    assert buffer.total_bytes == len(data)
    assert buffer.total_lines == len(re.findall(rb"[^\n]*\n|[^\n]+", data))
    assert buffer.truncated == expected.truncated


@given(streams, limits, st.lists(st.integers(0, 100), max_size=8))
def test_any_chunking_gives_the_bounded_text_of_the_whole_stream_r102(
    data: bytes, limits: OutputLimits, cuts: list[int]
) -> None:
    buffer = ToolOutputBuffer(limits)
    received = b""
    for chunk in _split(data, cuts):
        buffer.write(chunk)
        received += chunk
        # While open, only an incomplete character at the end is held back.
        expected = sanitize_output(bound_text(received, limits).text)
        assert expected.startswith(buffer.text)
        assert len(expected) - len(buffer.text) <= 1
        assert buffer.dropped_bytes == bound_text(received, limits).dropped_bytes
    buffer.finish()
    _assert_matches_whole(buffer, data)


@given(long_streams, limits, st.lists(st.integers(0, 200), min_size=2, max_size=12))
@example(  # a skip ending on a lead byte: the kept bytes begin with its continuation bytes
    data=b"aaaaaaaaaaaaaabc" + "😀".encode() * 7 + b"abcbcbcbcbcbc" + "😀".encode() * 2,
    limits=OutputLimits(max_bytes=22, max_lines=1, retain="tail"),
    cuts=[1, 173],
)
def test_skipped_output_is_counted_as_if_every_byte_had_arrived_r105(
    data: bytes, limits: OutputLimits, cuts: list[int]
) -> None:
    if limits.retain == "tail":
        start, _ = tail_window(data, True, limits.max_bytes, limits.max_lines)
        window_start = len(data) if limits.keeps_nothing else start

        def may_skip_to(end: int) -> bool:
            line_ends = end > 0 and data[end - 1] == 0x0A
            return end <= window_start - (0 if line_ends else 3)
    else:

        def may_skip_to(end: int) -> bool:
            return True

    def may_skip_from(begin: int) -> bool:
        if limits.retain == "tail" or limits.keeps_nothing:
            return True
        head = data[: min(begin, limits.max_bytes)]
        return begin > limits.max_bytes or head.count(b"\n") >= limits.max_lines

    buffer = ToolOutputBuffer(limits)
    begin = 0
    for index, chunk in enumerate(_split(data, cuts)):
        end = begin + len(chunk)
        if index % 2 and may_skip_from(begin) and may_skip_to(end):
            buffer.skip(len(chunk), chunk.count(b"\n"), ends_line=chunk.endswith(b"\n"))
            event("skipped")
        else:
            buffer.write(chunk)
        begin = end
    buffer.finish()
    _assert_matches_whole(buffer, data)


def test_a_skip_leaves_the_tail_to_the_output_after_it_r105() -> None:
    whole = ToolOutputBuffer(OutputLimits(max_lines=1, retain="tail"))
    whole.write("abcde\nfg\n")
    skipped = ToolOutputBuffer(OutputLimits(max_lines=1, retain="tail"))
    skipped.write("abc")
    skipped.skip(3, 1)  # "de\n"
    skipped.write("fg\n")
    assert skipped.text == whole.text == "fg\n"
    assert (skipped.dropped_bytes, skipped.dropped_lines) == (6, 1)
    assert (skipped.total_bytes, skipped.total_lines) == (9, 2)


def test_str_chunks_are_measured_by_their_utf8_bytes() -> None:
    buffer = ToolOutputBuffer(OutputLimits(max_bytes=4, retain="tail"))
    buffer.write("ab\n")
    buffer.write("€\n")
    assert (buffer.text, buffer.dropped_bytes, buffer.dropped_lines) == ("€\n", 3, 1)


def test_control_characters_are_removed_from_the_retained_text_only_r102() -> None:
    buffer = ToolOutputBuffer()
    raw = "a\u0007b\r\n\x1b[1mbold\x1b[0m\tx\x7f\x85\n\ufff9y\ufffb\n".encode()
    buffer.write(raw)
    assert buffer.text == "ab\n[1mbold[0m\tx\ny\n"
    assert (buffer.total_bytes, buffer.dropped_bytes) == (len(raw), 0)


def test_a_character_split_across_chunks_is_decoded_whole_and_held_back_until_complete() -> None:
    buffer = ToolOutputBuffer()
    euro = "€".encode()
    buffer.write(b"price " + euro[:1])
    assert buffer.text == "price "
    buffer.write(euro[1:2])
    assert buffer.text == "price "
    buffer.write(euro[2:] + b"5\n")
    assert buffer.text == "price €5\n"


def test_finish_turns_an_incomplete_final_character_into_a_replacement_character() -> None:
    buffer = ToolOutputBuffer(OutputLimits(retain="tail"))
    buffer.write(b"ok " + "€".encode()[:2])
    assert buffer.text == "ok "
    buffer.finish()
    assert buffer.text == "ok \ufffd"
    assert buffer.dropped_bytes == 0


def test_dropped_counts_are_exact_for_a_long_stream_with_either_retention() -> None:
    lines = [f"line {i}\n".encode() for i in range(5000)]
    head = ToolOutputBuffer(OutputLimits(max_bytes=1000, max_lines=50))
    tail = ToolOutputBuffer(OutputLimits(max_bytes=1000, max_lines=50, retain="tail"))
    for line in lines:
        head.write(line)
        tail.write(line)
    assert head.text == b"".join(lines[:50]).decode()
    assert tail.text == b"".join(lines[-50:]).decode()
    total = sum(map(len, lines))
    assert head.dropped_bytes == total - len(head.text)
    assert (head.dropped_lines, tail.dropped_lines) == (4950, 4950)
    assert tail.dropped_bytes == total - len(tail.text)


@pytest.mark.parametrize("retain", ["head", "tail"])
def test_memory_stays_bounded_by_the_limits_whatever_is_written(retain: str) -> None:
    chunk = b"".join(f"{i:07d} some output of a command\n".encode() for i in range(8192))
    buffer = ToolOutputBuffer(OutputLimits(retain=retain))  # type: ignore[arg-type]
    tracemalloc.start()
    try:
        for _ in range(80):  # 20 MiB through the buffer
            buffer.write(chunk)
            buffer.write(chunk[:1000])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert buffer.total_bytes == 80 * (len(chunk) + 1000)
    assert peak < 4 * 51200 + 64 * 1024


def test_changes_since_reports_an_append_while_the_window_only_grows_r103() -> None:
    buffer = ToolOutputBuffer()
    buffer.write("one\n")
    first = buffer.changes_since("")
    assert first == OutputChange("append", "one\n", "one\n")
    assert buffer.changes_since(first.window) == OutputChange("unchanged", "", "one\n")
    buffer.write("two\n")
    assert buffer.changes_since(first.window) == OutputChange("append", "two\n", "one\ntwo\n")


def test_changes_since_reports_a_replacement_when_a_tail_slides_r103() -> None:
    buffer = ToolOutputBuffer(OutputLimits(max_lines=2, retain="tail"))
    buffer.write("one\ntwo\n")
    previous = buffer.text
    buffer.write("three\n")
    assert buffer.changes_since(previous) == OutputChange("replace", "two\nthree\n", "two\nthree\n")


def test_a_head_window_gives_up_a_partial_line_that_grows_past_the_byte_limit() -> None:
    buffer = ToolOutputBuffer(OutputLimits(max_bytes=8))
    buffer.write("ab\ncd")
    previous = buffer.text
    buffer.write("efgh")
    assert buffer.changes_since(previous) == OutputChange("replace", "ab\n", "ab\n")
    assert (buffer.dropped_bytes, buffer.dropped_lines) == (6, 1)


def test_output_after_finish_and_output_of_the_wrong_type_are_refused() -> None:
    buffer = ToolOutputBuffer()
    with pytest.raises(TypeError, match="tool output must be str or bytes, got int"):
        buffer.write(5)  # type: ignore[arg-type]
    buffer.finish()
    buffer.finish()
    with pytest.raises(ValueError, match="tool output was finished"):
        buffer.write("late")
    with pytest.raises(ValueError, match="tool output was finished"):
        buffer.skip(1, 1)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((-1, 0), {}, "got -1 bytes and 0 newlines"),
        ((2, 3), {}, "got 2 bytes and 3 newlines"),
        ((5, 0), {}, "pass ends_line=False"),
    ],
)
def test_skip_refuses_counts_that_cannot_describe_skipped_output(
    args: tuple[int, int], kwargs: dict[str, bool], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        ToolOutputBuffer(OutputLimits(retain="tail")).skip(*args, **kwargs)
