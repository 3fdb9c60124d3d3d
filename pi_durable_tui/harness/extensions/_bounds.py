"""Output limits and the retention rules that bound a tool's text (R97, R102, section 3.5).

This module owns what "bounded" means, for a complete string (``bound_text``,
used when explicit result content is bounded, R97) and for the streaming buffer
of ``_output`` (R102), which calls the same window functions on the bytes it
kept, so the two can never disagree.

The unit of measure is the UTF-8 byte. A ``str`` is measured as its UTF-8
encoding (a lone surrogate, which is not text, becomes ``?``); ``bytes`` are
measured as they are, before any decoding, so invalid UTF-8 counts its raw
bytes. Retention, for ``max_bytes`` B and ``max_lines`` L:

- ``head`` keeps the first whole lines within both limits; when the first line
  alone is longer than B bytes (its newline included), it keeps that line's
  first bytes up to B, cut on a character boundary.
- ``tail`` keeps the last whole lines within both limits (a trailing newline
  ends the last line); when the last line alone is longer than B, it keeps its
  final bytes, starting on a character boundary (so at most B bytes).
- B or L of 0 keeps nothing.

Dropped counts: bytes = total bytes - kept bytes; lines = total lines - kept
lines, where a text's line count is its newline count plus one when it does not
end with a newline (an unterminated final line counts; the empty text has none)
and a partly kept line counts as kept. The kept bytes are decoded with
``errors="replace"``, so kept invalid bytes become U+FFFD (three bytes in UTF-8
each): only then can the kept text's UTF-8 size pass ``max_bytes``.

A *character boundary* (``pi_durable_tui._utf8.character_start``) is a byte
position not inside a UTF-8 sequence: one whose byte is not a continuation
byte, or a continuation byte that no lead byte among the three before it could
claim. For valid UTF-8 these are exactly the
character starts; for invalid bytes they are always places where a decoder
restarts, so decoding the kept bytes alone gives the same characters as
decoding the whole and cutting there.

Sizes in messages use ``format_size`` and the truncation remark uses
``truncation_notice`` (R97's exact wording).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Literal

from pi_durable_tui._utf8 import character_start

Retain = Literal["head", "tail"]

DEFAULT_MAX_BYTES = 51200
"""R102's default byte limit (50 KiB)."""
DEFAULT_MAX_LINES = 2000
"""R102's default line limit."""

_NEWLINE = 0x0A


@dataclass(frozen=True, slots=True)
class OutputLimits:
    """How much of a tool's output is kept, and which end (R102).

    Args:
        max_bytes: The most UTF-8 bytes kept (0 keeps nothing).
        max_lines: The most lines kept (0 keeps nothing).
        retain: ``"head"`` keeps the beginning, ``"tail"`` the end.

    Raises:
        ValueError: A limit is not a non-negative integer, or ``retain`` is
            neither ``"head"`` nor ``"tail"``.
    """

    max_bytes: int = DEFAULT_MAX_BYTES
    max_lines: int = DEFAULT_MAX_LINES
    retain: Retain = "head"

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_lines"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"OutputLimits.{name} must be a non-negative integer, got {value!r}"
                )
        if self.retain not in ("head", "tail"):
            raise ValueError(f'OutputLimits.retain must be "head" or "tail", got {self.retain!r}')

    @property
    def keeps_nothing(self) -> bool:
        """Whether a limit of 0 makes every output entirely dropped."""
        return self.max_bytes == 0 or self.max_lines == 0


@dataclass(frozen=True, slots=True)
class BoundedText:
    """A text after bounding: what was kept and exactly how much was dropped."""

    text: str
    dropped_bytes: int
    dropped_lines: int

    @property
    def truncated(self) -> bool:
        """Whether anything was dropped (a partly kept line drops bytes, not lines)."""
        return self.dropped_bytes > 0


def encode_output(text: str) -> bytes:
    """Return the UTF-8 bytes output text is measured by (a lone surrogate becomes ``?``)."""
    return text.encode("utf-8", "replace")


def line_count(data: bytes | bytearray) -> int:
    """Return how many lines ``data`` holds (an unterminated final line counts)."""
    if not data:
        return 0
    return data.count(b"\n") + (data[-1] != _NEWLINE)


def decode_output(data: bytes | bytearray, *, final: bool = True) -> str:
    """Decode kept bytes as UTF-8, replacing invalid sequences.

    Args:
        data: The kept bytes.
        final: Whether the bytes end the stream; when false, an incomplete
            character at the end is held back, as an incremental decoder does
            while it waits for the rest.

    Returns:
        The decoded text.
    """
    if final:
        return data.decode("utf-8", "replace")
    return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=False)


def head_window(data: bytes | bytearray, max_bytes: int, max_lines: int) -> tuple[int, int]:
    """Find the head window of ``data`` (section 3.5).

    ``data`` may be the whole text or only its first ``max_bytes + 1`` bytes: the
    window depends on nothing after them.

    Args:
        data: The text's bytes, or their first ``max_bytes + 1`` at least.
        max_bytes: The byte limit.
        max_lines: The line limit.

    Returns:
        ``(end, kept_lines)``: the window is ``data[:end]``.
    """
    if max_bytes == 0 or max_lines == 0 or not data:
        return 0, 0
    newlines = data.count(b"\n", 0, max_bytes)
    if newlines >= max_lines:
        # The max_lines-th newline lies within the byte limit: the line limit binds.
        limit = min(len(data), max_bytes)
        rest = bytes(data[:limit]).split(b"\n", max_lines)[-1]
        return limit - len(rest), max_lines
    if len(data) <= max_bytes:
        return len(data), line_count(data)
    last_newline = data.rfind(b"\n", 0, max_bytes)
    if last_newline >= 0:
        return last_newline + 1, newlines
    cut = character_start(data, max_bytes)
    return cut, 1 if cut else 0


def tail_window(
    data: bytes | bytearray, starts_line: bool, max_bytes: int, max_lines: int
) -> tuple[int, int]:
    """Find the tail window of ``data`` (section 3.5).

    ``data`` may be the whole text or only its last bytes, as long as they are at
    least ``max_bytes + 3`` or begin where the window may begin.

    Args:
        data: The text's bytes, or a suffix of them.
        starts_line: Whether ``data[0]`` begins a line (it is the text's first
            byte or follows a newline).
        max_bytes: The byte limit.
        max_lines: The line limit.

    Returns:
        ``(start, kept_lines)``: the window is ``data[start:]``.
    """
    size = len(data)
    if max_bytes == 0 or max_lines == 0 or size == 0:
        return size, 0
    body_end = size - 1 if data[-1] == _NEWLINE else size
    start = max(0, size - max_bytes)
    if not ((start == 0 and starts_line) or (start > 0 and data[start - 1] == _NEWLINE)):
        newline = data.find(b"\n", start, body_end)
        if newline < 0:
            # The last line alone is over-long: keep its final bytes from a boundary.
            # REMINDER: after a skip, the kept bytes may begin with the tail of a
            # character whose lead byte was skipped; it is not part of the window.
            while character_start(data, start, "nothing" if starts_line else "gone") < start:
                start += 1
            return start, 1 if start < size else 0
        start = newline + 1
    lines = data.count(b"\n", start, body_end) + 1
    if lines <= max_lines:
        return start, lines
    first = bytes(data[start:body_end]).rsplit(b"\n", max_lines)[0]
    return start + len(first) + 1, max_lines


def bound_text(text: str | bytes, limits: OutputLimits) -> BoundedText:
    """Bound a complete text by ``limits`` (section 3.5, R97).

    Args:
        text: The whole text; ``bytes`` are measured raw and decoded with
            replacement characters.
        limits: The limits and which end to keep.

    Returns:
        The kept text (not sanitized) and the exact dropped counts.
    """
    data = encode_output(text) if isinstance(text, str) else bytes(text)
    if limits.retain == "head":
        end, kept_lines = head_window(data, limits.max_bytes, limits.max_lines)
        kept = data[:end]
    else:
        start, kept_lines = tail_window(data, True, limits.max_bytes, limits.max_lines)
        kept = data[start:]
    return BoundedText(
        decode_output(kept),
        dropped_bytes=len(data) - len(kept),
        dropped_lines=line_count(data) - kept_lines,
    )


def format_size(size: int) -> str:
    """Format a byte count the way tool messages do (section 3).

    Args:
        size: A number of bytes.

    Returns:
        ``<n>B`` below 1024, ``<x.y>KB`` below 1 MiB, ``<x.y>MB`` from there, with
        one decimal rounded half up (as JavaScript's ``toFixed`` does; exact
        integer arithmetic, so 1280 bytes is ``1.3KB``).
    """
    if size < 1024:
        return f"{size}B"
    unit, suffix = (1024, "KB") if size < 1024 * 1024 else (1024 * 1024, "MB")
    tenths = (size * 10 + unit // 2) // unit
    return f"{tenths // 10}.{tenths % 10}{suffix}"


def truncation_notice(
    dropped_lines: int, dropped_bytes: int, retain: Retain, rebuilt: bool = False
) -> str:
    """Return the message of R97's ``truncated`` diagnostic.

    Args:
        dropped_lines: Lines dropped from the output.
        dropped_bytes: Bytes dropped from the output.
        retain: Which end was kept.
        rebuilt: Whether the result was rebuilt from a slot after recovery, which
            omits the ``to its ...`` part.

    Returns:
        ``Output truncated to its beginning: <lines> lines, <bytes> bytes dropped``
        (``to its end`` for tail retention).
    """
    where = "" if rebuilt else (" to its beginning" if retain == "head" else " to its end")
    return f"Output truncated{where}: {dropped_lines} lines, {dropped_bytes} bytes dropped"
