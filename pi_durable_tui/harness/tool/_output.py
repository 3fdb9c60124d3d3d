r"""The bounded buffer a running tool's output streams into (R102, R103, R105).

``ToolOutputBuffer`` receives a tool's output as ``str`` or ``bytes`` chunks and
keeps only what its ``OutputLimits`` retain, with exact dropped counts for the
whole stream, in memory bounded by the limits whatever is written.

What is measured: every count (``total_bytes``, ``dropped_bytes``, and the
limits themselves) is in raw bytes received, before decoding and before
sanitizing: a ``bytes`` chunk counts its length, a ``str`` chunk the length of
its UTF-8 encoding (``_bounds.encode_output``), a ``skip`` its ``byte_count``.
Lines are counted by newline bytes. So the buffer's state after any sequence of
chunks is, exactly, ``bound_text`` of the concatenated bytes (then sanitized):
the split into chunks never matters.

Decoding: the retained bytes are decoded as UTF-8 with ``errors="replace"``
when ``text`` is read, all at once, which is what an incremental decoder fed the
chunks would produce; while the stream is open an incomplete character at the
end of the window is held back, as such a decoder holds it, and ``finish()``
ends the stream (a held-back fragment then becomes a replacement character).
Decoding only the window means dropped output is never decoded at all.

Sanitizing (R102): control characters other than tab and newline (so carriage
return too), and U+FFF9..U+FFFB, are removed from the retained text only
(``a\u0007b\r\n`` as text is kept as ``ab\n``); counts are not affected.

Speed and memory: a chunk costs one ``bytes.count`` and, while bytes are still
kept, one copy of what is kept. Head retention holds the first ``max_bytes + 1``
bytes and then stops keeping; tail retention copies at most the last
``max_bytes + 3`` bytes of a chunk and holds at most ``2 * (max_bytes + 3)``
bytes (trimmed in one step when small chunks pile up). The window is computed,
decoded and sanitized only when ``text`` is read, which the progress committer
does at most a few times a second (R103); it is cached until the next change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pi_durable_tui.harness.extensions import (
    OutputLimits,
    decode_output,
    encode_output,
    head_window,
    tail_window,
)

_NEWLINE = 0x0A
# Cc minus tab and newline, plus the interlinear annotation characters (R102).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufff9-\ufffb]+")
# The tail keeps this many bytes past max_bytes: enough to see whether the window's
# earliest possible start follows a newline and whether it is inside a character.
_TAIL_LOOKBACK = 3


def sanitize_output(text: str) -> str:
    """Remove the characters R102 strips from retained output.

    Args:
        text: Decoded output text.

    Returns:
        ``text`` without control characters other than tab and newline, and
        without U+FFF9..U+FFFB.
    """
    return _UNSAFE.sub("", text)


@dataclass(frozen=True, slots=True)
class OutputChange:
    """How the retained text moved since the text last committed (R103).

    ``kind`` is ``"unchanged"`` (``text`` is empty), ``"append"`` (the new window
    is the previous text followed by ``text``) or ``"replace"`` (``text`` is the
    whole new window: a sliding tail trimmed its front, or a head window gave up
    a line that turned out too long). ``window`` is always the whole new text.
    """

    kind: Literal["unchanged", "append", "replace"]
    text: str
    window: str


class ToolOutputBuffer:
    """A tool invocation's bounded output (R102), fed by ``write`` and ``skip``.

    Args:
        limits: The tool's output limits.
    """

    def __init__(self, limits: OutputLimits | None = None) -> None:
        self.limits = limits if limits is not None else OutputLimits()
        self._tail = self.limits.retain == "tail"
        self._total_bytes = 0
        self._newlines = 0
        self._ends_line = True  # the stream so far is empty or ends with a newline
        self._finished = False
        # head: the first max_bytes + 1 bytes; tail: the last bytes since the start or
        # the latest skip, at least max_bytes + 3 of them once that many arrived.
        self._kept = bytearray()
        self._keeping = not self.limits.keeps_nothing
        self._kept_starts_line = True  # tail: whether _kept[0] begins a line
        self._window: tuple[str, int, int] | None = None  # text, kept bytes, kept lines

    def write(self, chunk: str | bytes) -> None:
        """Append output to the stream (R102).

        Args:
            chunk: Text, or bytes decoded as UTF-8 across chunk boundaries.

        Raises:
            TypeError: ``chunk`` is neither ``str`` nor ``bytes``.
            ValueError: The buffer was finished.
        """
        if isinstance(chunk, str):
            data = encode_output(chunk)
        elif isinstance(chunk, (bytes, bytearray)):
            data = chunk
        else:
            raise TypeError(f"tool output must be str or bytes, got {type(chunk).__name__}")
        self._check_open()
        size = len(data)
        if size == 0:
            return
        ends_line_before = self._ends_line
        self._total_bytes += size
        self._newlines += data.count(b"\n")
        self._ends_line = data[-1] == _NEWLINE
        if not self._keeping:
            # A closed head window (or a limit of 0) keeps its text and its final decoding.
            return
        self._window = None
        kept = self._kept
        if not self._tail:
            room = self.limits.max_bytes + 1 - len(kept)
            kept += data[:room] if size > room else data
            self._keeping = len(kept) <= self.limits.max_bytes
            return
        keep = self.limits.max_bytes + _TAIL_LOOKBACK
        if size >= keep:
            # REMINDER: only the needed end of a big chunk is copied; this is what keeps
            # a sliding tail as fast as counting.
            self._kept = bytearray(memoryview(data)[size - keep :])
            before = data[size - keep - 1] if size > keep else None
            self._kept_starts_line = ends_line_before if before is None else before == _NEWLINE
            return
        kept += data
        if len(kept) > 2 * keep:
            cut = len(kept) - keep
            self._kept_starts_line = kept[cut - 1] == _NEWLINE
            del kept[:cut]

    def skip(self, byte_count: int, line_count: int, *, ends_line: bool = True) -> None:
        """Count output an environment skipped without sending it (R105).

        With tail retention an environment may skip output that cannot be part of
        the kept tail; counting it here makes every result identical to receiving
        every byte. That holds when no byte of the final window is skipped and,
        when the skip ends inside a line, at least three bytes follow it before the
        window (so a character cut by the skip is never the window's first one).
        With head retention, skipped output ends the kept window; the result is
        identical once ``max_bytes + 1`` bytes were received or the window already
        holds ``max_lines`` complete lines.

        Args:
            byte_count: How many bytes were skipped.
            line_count: How many newline bytes they held.
            ends_line: Whether the skipped bytes end with a newline.

        Raises:
            ValueError: The counts are negative, more newlines than bytes, or
                inconsistent with ``ends_line``; or the buffer was finished.
        """
        self._check_open()
        if byte_count < 0 or line_count < 0 or line_count > byte_count:
            raise ValueError(
                f"skipped output must be counted as bytes >= newlines >= 0, got "
                f"{byte_count} bytes and {line_count} newlines"
            )
        if byte_count == 0:
            return
        if ends_line and line_count == 0:
            raise ValueError(
                "skipped output that ends with a newline holds at least one; pass "
                "ends_line=False for a skip that stops inside a line"
            )
        self._window = None
        self._total_bytes += byte_count
        self._newlines += line_count
        self._ends_line = ends_line
        if self._tail:
            self._kept = bytearray()
            self._kept_starts_line = ends_line
        else:
            self._keeping = False

    def finish(self) -> None:
        """End the stream: an incomplete character held back at its end is replaced.

        Calling it again does nothing. Later ``write`` and ``skip`` calls raise.
        """
        if not self._finished:
            self._finished = True
            self._window = None

    @property
    def finished(self) -> bool:
        """Whether ``finish()`` was called."""
        return self._finished

    @property
    def total_bytes(self) -> int:
        """Bytes received or skipped so far."""
        return self._total_bytes

    @property
    def total_lines(self) -> int:
        """Lines received or skipped so far (an unterminated final line counts)."""
        if self._total_bytes == 0:
            return 0
        return self._newlines + (not self._ends_line)

    @property
    def text(self) -> str:
        """The retained window, decoded and sanitized (R102)."""
        return self._computed()[0]

    @property
    def dropped_bytes(self) -> int:
        """Bytes of the whole stream that are not in the window."""
        return self._total_bytes - self._computed()[1]

    @property
    def dropped_lines(self) -> int:
        """Lines of the whole stream that are not in the window (a partly kept line is kept)."""
        return self.total_lines - self._computed()[2]

    @property
    def truncated(self) -> bool:
        """Whether any output was dropped."""
        return self.dropped_bytes > 0

    def changes_since(self, previous: str) -> OutputChange:
        """Tell what a progress commit must write to move ``previous`` to ``text`` (R103).

        Args:
            previous: The retained text as last committed (``""`` at first).

        Returns:
            An append of the new characters when the window only grew at its end,
            otherwise a replacement by the whole window.
        """
        window = self.text
        if window.startswith(previous):
            appended = window[len(previous) :]
            return OutputChange("append" if appended else "unchanged", appended, window)
        return OutputChange("replace", window, window)

    def _check_open(self) -> None:
        if self._finished:
            raise ValueError("tool output was finished; no more output can be added")

    def _computed(self) -> tuple[str, int, int]:
        if self._window is None:
            limits = self.limits
            kept = self._kept
            if self._tail:
                start, lines = tail_window(
                    kept, self._kept_starts_line, limits.max_bytes, limits.max_lines
                )
                window = kept[start:]
                # The window ends where the stream does, so it is final only at the end.
                final = self._finished
            else:
                end, lines = head_window(kept, limits.max_bytes, limits.max_lines)
                window = kept[:end]
                final = self._finished or end < self._total_bytes
            text = sanitize_output(decode_output(window, final=final))
            self._window = (text, len(window), lines)
        return self._window
