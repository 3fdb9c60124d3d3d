"""The tail window skips only what a tail can never keep, with exact counts (R105, R102).

A consumer that applies the tail rule of reference section 3.5 to what it
receives (restarting after each skip) and adds skipped counts to its totals must
end with exactly what it would keep from the complete stream. Checked against a
reference tail over random streams of ASCII, multi-byte characters and
newlines, cut into random chunks arriving at random times.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui.env import OutputStream, OutputWindow, SkippedOutput
from pi_durable_tui.env._window import TailWindow


def reference_tail(data: bytes, max_bytes: int, max_lines: int) -> bytes:
    """Reference section 3.5: whole last lines; an over-long last line keeps its end."""
    if max_bytes == 0 or max_lines == 0 or not data:
        return b""
    lines = data.splitlines(keepends=True)
    kept: list[bytes] = []
    size = 0
    for line in reversed(lines):
        if len(kept) == max_lines or size + len(line) > max_bytes:
            break
        kept.append(line)
        size += len(line)
    if kept:
        return b"".join(reversed(kept))
    last = lines[-1]
    cut = len(last) - max_bytes
    while cut < len(last) and last[cut] & 0xC0 == 0x80:
        cut += 1
    return last[cut:]


class Consumer:
    """What a tail-retaining tool would do with the window's deliveries."""

    def __init__(self) -> None:
        self.since_skip = bytearray()
        self.received = 0
        self.newlines = 0
        self.calls = 0

    def __call__(self, chunk: bytes, stream: OutputStream, skipped: SkippedOutput | None) -> None:
        self.calls += 1
        if skipped is not None:
            self.since_skip.clear()
            self.received += skipped.byte_count
            self.newlines += skipped.line_count
        self.since_skip += chunk
        self.received += len(chunk)
        self.newlines += chunk.count(b"\n")


pieces = st.sampled_from(
    [b"a", b"bc", b"\n", b"\n\n", "\u00e9".encode(), "\u2603".encode(), b"x" * 9]
)
streams = st.lists(st.lists(pieces, max_size=12).map(b"".join), max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    chunks=streams,
    max_bytes=st.integers(0, 24),
    max_lines=st.integers(0, 6),
    gaps=st.lists(st.floats(0, 0.2), min_size=40, max_size=40),
)
def test_r105_a_consumer_of_the_window_keeps_exactly_the_tail_of_the_whole_stream(
    chunks: list[bytes], max_bytes: int, max_lines: int, gaps: list[float]
) -> None:
    consumer = Consumer()
    window = TailWindow(OutputWindow(max_bytes, max_lines, min_interval_ms=50), consumer)
    now = 0.0
    for chunk, gap in zip(chunks, gaps, strict=False):
        now += gap
        window.feed("stdout", chunk, chunk.count(b"\n"), now)
    window.deliver(now)
    everything = b"".join(chunks)
    assert consumer.received == len(everything)
    assert consumer.newlines == everything.count(b"\n")
    expected = reference_tail(everything, max_bytes, max_lines)
    assert reference_tail(bytes(consumer.since_skip), max_bytes, max_lines) == expected


def test_r105_a_burst_is_delivered_once_with_its_skipped_counts() -> None:
    consumer = Consumer()
    window = TailWindow(OutputWindow(10, 2, min_interval_ms=100), consumer)
    assert window.feed("stdout", b"first\n", 1, now=0.0) is False
    for i in range(100):
        assert window.feed("stdout", b"line %d\n" % i, 1, now=0.01) is True
    assert consumer.calls == 1
    window.deliver(now=0.1)
    assert consumer.calls == 2
    assert bytes(consumer.since_skip) == b"98\nline 99\n"  # max_bytes + 1 kept
    assert reference_tail(bytes(consumer.since_skip), 10, 2) == b"line 99\n"
    assert consumer.received == 6 + sum(len(b"line %d\n" % i) for i in range(100))


def test_r103_deliveries_are_paced_by_interval_and_bytes_per_second() -> None:
    consumer = Consumer()
    window = TailWindow(
        OutputWindow(1000, 100, min_interval_ms=100, bytes_per_second=1000), consumer
    )
    window.feed("stdout", b"x" * 500 + b"\n", 1, now=0.0)
    assert window.next_due == 0.501  # 501 bytes at 1000 bytes/s outweighs 100 ms
    window.feed("stdout", b"y\n", 1, now=0.2)
    assert consumer.calls == 1
    window.feed("stdout", b"z\n", 1, now=0.6)
    assert consumer.calls == 2
    assert window.next_due == 0.7


def test_r105_streams_stay_tagged_and_in_order_within_a_delivery() -> None:
    seen: list[tuple[bytes, OutputStream]] = []
    window = TailWindow(
        OutputWindow(100, 100, min_interval_ms=100),
        lambda chunk, stream, skipped: seen.append((chunk, stream)),
    )
    window.feed("stdout", b"a\n", 1, now=0.0)
    window.feed("stdout", b"b\n", 1, now=0.01)
    window.feed("stdout", b"c\n", 1, now=0.02)
    window.feed("stderr", b"d\n", 1, now=0.03)
    window.deliver(now=0.2)
    assert seen == [(b"a\n", "stdout"), (b"b\nc\n", "stdout"), (b"d\n", "stderr")]
