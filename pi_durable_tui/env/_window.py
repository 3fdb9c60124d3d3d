"""The tail window of ``exec``: deliver seldom, skip what the kept tail cannot hold (R105).

A tail-retaining tool keeps only the last ``max_lines`` lines and ``max_bytes``
bytes of a command's output. ``TailWindow`` sits between the pipes and the
tool's callback: it holds new output as a list of segments, drops from their
front every byte that later output has already pushed out of any possible tail,
and hands the rest over at most once per interval. A 1 GiB ``cat`` then costs
the pipe reads, one newline count per byte and a few deliveries per second.

A byte can be dropped when at least ``max_bytes`` bytes follow it (the kept
tail is a suffix of at most ``max_bytes`` bytes), or when at least
``max_lines + 1`` newlines follow it (its line is then followed by ``max_lines``
whole lines). The window keeps one byte more than that: after a byte cut, the
consumer holds more than ``max_bytes`` bytes from the cut line's visible part
on, so it can never keep that partial line as if it were whole; it can only
keep its final bytes, as it would from the complete line. A line cut falls
just after a newline. Byte cuts move back to a UTF-8 character start within
the chunk they fall in. The dropped byte and newline counts go with the next
delivered chunk as ``SkippedOutput``, so a consumer that applies its usual tail
rule (R102) to what it receives and adds the skipped counts to its dropped
totals ends with exactly the result of seeing every byte.

Timing follows R103's throttle: output arriving after a quiet period is
delivered at once; each delivery of ``n`` bytes makes the next wait at least
``min_interval_ms`` and ``n / bytes_per_second`` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from pi_durable_tui._utf8 import character_start
from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._types import (
    OutputCallback,
    OutputStream,
    OutputWindow,
    SkippedOutput,
)


@dataclass(slots=True)
class _Segment:
    stream: OutputStream
    data: bytes
    newlines: int


class TailWindow:
    """Holds, trims and paces output for one command under an ``OutputWindow``."""

    def __init__(self, window: OutputWindow, deliver: OutputCallback) -> None:
        for name in ("max_bytes", "max_lines", "min_interval_ms", "bytes_per_second"):
            if getattr(window, name) < 0:
                raise FileError("invalid", f"OutputWindow.{name} must be at least 0")
        self._window = window
        self._deliver = deliver
        self._pending: list[_Segment] = []
        self._pending_bytes = 0
        self._pending_newlines = 0
        self._skipped_bytes = 0
        self._skipped_lines = 0
        self._skipped_stream: OutputStream = "stdout"
        self._skipped_ends_line = True
        self._next_due = float("-inf")

    @property
    def next_due(self) -> float:
        """The clock time before which no further delivery happens."""
        return self._next_due

    @property
    def has_pending(self) -> bool:
        """Whether output or skipped counts wait for delivery."""
        return bool(self._pending) or self._skipped_bytes > 0

    def feed(self, stream: OutputStream, data: bytes, newlines: int, now: float) -> bool:
        """Take a chunk read from ``stream``; deliver now when due.

        Args:
            stream: Where the chunk came from.
            data: The chunk.
            newlines: The newline count of ``data``, counted once by the caller.
            now: The current clock time in seconds.

        Returns:
            True when output waits for ``next_due`` (the caller schedules ``deliver``).
        """
        if data:
            self._pending.append(_Segment(stream, data, newlines))
            self._pending_bytes += len(data)
            self._pending_newlines += newlines
            self._trim()
        if now >= self._next_due:
            self.deliver(now)
            return False
        return self.has_pending

    def _drop_front(self, index: int, offset: int) -> None:
        """Skip everything before byte ``offset`` of segment ``index``."""
        dropped = self._pending[:index]
        for segment in dropped:
            self._skipped_bytes += len(segment.data)
            self._skipped_lines += segment.newlines
            self._skipped_stream = segment.stream
            if segment.data:
                self._skipped_ends_line = segment.data.endswith(b"\n")
        del self._pending[:index]
        if offset:
            segment = self._pending[0]
            kept = segment.data[offset:]
            kept_newlines = kept.count(b"\n")
            self._skipped_bytes += offset
            self._skipped_lines += segment.newlines - kept_newlines
            self._skipped_stream = segment.stream
            self._skipped_ends_line = segment.data[offset - 1] == 0x0A
            self._pending[0] = _Segment(segment.stream, kept, kept_newlines)
        self._pending_bytes = sum(len(segment.data) for segment in self._pending)
        self._pending_newlines = sum(segment.newlines for segment in self._pending)

    def _trim(self) -> None:
        # REMINDER: keep max_bytes + 1 bytes, not max_bytes: the line a byte cut splits then
        # never fits whole in a consumer's tail, which is what makes its result exact.
        keep = self._window.max_bytes + 1
        if self._pending_bytes > keep:
            drop = self._pending_bytes - keep
            index = 0
            while drop >= len(self._pending[index].data):
                drop -= len(self._pending[index].data)
                index += 1
                if index == len(self._pending):
                    break
            if index < len(self._pending):
                drop = character_start(self._pending[index].data, drop, "unknown")
            self._drop_front(index, drop)
        need = self._window.max_lines + 1
        if self._pending_newlines < need:
            return
        for index in range(len(self._pending) - 1, -1, -1):
            segment = self._pending[index]
            if segment.newlines < need:
                need -= segment.newlines
                continue
            cut = len(segment.data)
            for _ in range(need):
                cut = segment.data.rfind(b"\n", 0, cut)
            self._drop_front(index, cut + 1)
            return

    def deliver(self, now: float) -> None:
        """Hand everything pending to the callback, merging same-stream neighbours."""
        if not self.has_pending:
            return
        skipped = None
        if self._skipped_bytes:
            skipped = SkippedOutput(
                self._skipped_bytes, self._skipped_lines, self._skipped_ends_line
            )
        chunks: list[tuple[OutputStream, list[bytes]]] = []
        for segment in self._pending:
            if chunks and chunks[-1][0] == segment.stream:
                chunks[-1][1].append(segment.data)
            else:
                chunks.append((segment.stream, [segment.data]))
        delivered = self._pending_bytes
        self._pending = []
        self._pending_bytes = self._pending_newlines = 0
        self._skipped_bytes = self._skipped_lines = 0
        window = self._window
        self._next_due = now + max(
            window.min_interval_ms / 1000,
            delivered / window.bytes_per_second if window.bytes_per_second else 0.0,
        )
        if not chunks:
            self._deliver(b"", self._skipped_stream, skipped)
        for stream, parts in chunks:
            self._deliver(b"".join(parts), stream, skipped)
            skipped = None
