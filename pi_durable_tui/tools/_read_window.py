r"""Which lines of a file ``read`` shows, and the remarks about the rest (reference 3.1).

``select_lines`` implements 3.1's text path: split on ``\n``, select from
``offset`` (1-based) at most ``limit`` lines, then head-truncate the selection
to ``max_lines`` lines and ``max_bytes`` bytes, whole lines only. It returns the
shown text and the diagnostics the Harness renders in its ``<harness>`` block:

- the first selected line alone exceeds ``max_bytes``: the line cut at
  ``max_bytes`` on a character boundary, and a ``warn`` / ``truncated``
  diagnostic pointing at ``sed ... | tail -c +<cut+1>`` for the rest;
- the selection was truncated: an ``info`` / ``truncated`` diagnostic
  ``Showing lines <a>-<b> of <total>. Use offset=<b+1> to continue.`` (with
  `` (50.0KB limit)`` after the total when the byte limit stopped it);
- a ``limit`` stopped before the end: an ``info`` diagnostic (no code)
  ``<remaining> more lines in file. Use offset=<next> to continue.``

Reading lazily. A huge file must not be read whole, so the selection consumes
its source in one pass and keeps only what it shows. The source is one of:

- ``str``: the whole text, already in memory (tests, small files);
- an iterable of ``str``: lines without their ``\n``, produced lazily;
- ``RawChunks``: the raw file in any chunking. Lines before ``offset`` are
  only counted (no decoding), an over-long line keeps at most ``max_bytes`` of
  its bytes, and lines past the shown head are counted with ``bytes.count``,
  so memory stays about ``max_bytes`` whatever the file or line size.

The messages name the file's total line count, which only a full pass can
know. A caller that knows it already (from an index, or a previous read) passes
``total_lines`` and the pass stops right after the shown head; otherwise the
rest of the source is counted, not kept. A file's line count is its number of
``\n`` plus one, so ``""`` is one empty line and ``"a\n"`` is two lines.

Why this is not the harness's ``head_window`` (3.5), kept as a second rule on
purpose (issue 14): the two count differently. ``read`` shows *lines* (split on
``\n``, so ``"a\n"`` is two lines) and its byte limit counts the breaks between
shown lines but none after the last: of ``"aaa\nbbb\n"`` with 7 bytes it shows
``aaa\nbbb``, where the output bound keeps ``aaa\n`` (a trailing newline ends a
line and is counted). It also decides, line by line as the lazy pass reads, when
reading may stop and which limit bound the window (its messages name it), which
a function over a byte buffer answers only after the bytes are held.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

from pi_durable_tui._utf8 import character_start
from pi_durable_tui.harness import format_size

DEFAULT_MAX_LINES = 2000
"""Most lines ``read`` shows at once (3.1)."""

DEFAULT_MAX_BYTES = 51200
"""Most bytes ``read`` shows at once: 50 KiB (3.1)."""


class ReadError(Exception):
    """A read that cannot be served; the message is written for the model."""


@dataclass(frozen=True, slots=True)
class Truncation:
    """How a shown window was cut; becomes ``details.truncation`` of the result.

    Attributes:
        truncated_by: ``"lines"`` when ``max_lines`` stopped the window,
            ``"bytes"`` when ``max_bytes`` did.
        first_line_exceeds_limit: The first selected line alone was longer
            than ``max_bytes`` and is shown cut.
        output_lines: Lines shown (the cut line counts as one).
        output_bytes: UTF-8 bytes shown.
        total_lines: Lines in the whole file.
        max_lines: The line limit applied.
        max_bytes: The byte limit applied.
    """

    truncated_by: Literal["lines", "bytes"]
    first_line_exceeds_limit: bool
    output_lines: int
    output_bytes: int
    total_lines: int
    max_lines: int
    max_bytes: int

    def to_json(self) -> dict[str, str | int | bool]:
        """Return the JSON form stored in the result's details (snake_case keys)."""
        return {
            "truncated_by": self.truncated_by,
            "first_line_exceeds_limit": self.first_line_exceeds_limit,
            "output_lines": self.output_lines,
            "output_bytes": self.output_bytes,
            "total_lines": self.total_lines,
            "max_lines": self.max_lines,
            "max_bytes": self.max_bytes,
        }


@dataclass(frozen=True, slots=True)
class ReadWindow:
    r"""The lines ``read`` shows and what it says about the rest.

    Attributes:
        content: The shown text, lines joined by ``\n`` (may be empty).
        diagnostics: ``{"severity", "message", "code"?}`` dicts, in order.
        truncation: How the window was cut, or None when it was not.
        first_line: The 1-based number of the first shown line.
        shown_lines: How many lines ``content`` holds.
        total_lines: Lines in the whole file.
        next_offset: The ``offset`` that continues after this window, or None
            when the file was shown to its end.
    """

    content: str
    diagnostics: list[dict[str, str]]
    truncation: Truncation | None
    first_line: int
    shown_lines: int
    total_lines: int
    next_offset: int | None


class _LineSource(Protocol):
    """One pass over a file's lines: skip, take, then count the rest."""

    def skip(self, count: int) -> int:
        """Pass over up to ``count`` lines; return how many there were."""

    def take(self, cap: int) -> tuple[str, int] | None:
        """The next line's text and UTF-8 size; text cut at ``cap`` bytes if longer."""

    def count_rest(self) -> int:
        """Count the lines not yet passed or taken."""


def _cut_utf8(data: bytes, cap: int) -> str:
    """Decode the longest prefix of at most ``cap`` bytes ending on a character boundary."""
    end = min(cap, len(data))
    if end < len(data):
        end = character_start(data, end)
    return data[:end].decode("utf-8", errors="replace")


class _TextLines:
    """Lines from a whole text or from an iterable of lines."""

    def __init__(self, source: str | Iterable[str]) -> None:
        self._lines: Iterator[str] = iter(source.split("\n") if isinstance(source, str) else source)

    def skip(self, count: int) -> int:
        skipped = 0
        while skipped < count and next(self._lines, None) is not None:
            skipped += 1
        return skipped

    def take(self, cap: int) -> tuple[str, int] | None:
        line = next(self._lines, None)
        if line is None:
            return None
        if len(line) * 4 <= cap:  # cannot exceed cap even at 4 bytes per character
            return line, len(line.encode("utf-8", errors="surrogatepass"))
        data = line.encode("utf-8", errors="surrogatepass")
        return (line if len(data) <= cap else _cut_utf8(data, cap)), len(data)

    def count_rest(self) -> int:
        return sum(1 for _ in self._lines)


class _ChunkLines:
    """Lines from raw byte chunks, decoding only what is taken."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._buffer = b""
        self._at = 0
        self._ended = False  # the final line (after the last "\n") was passed

    def _fill(self) -> bool:
        """Make unread bytes available; False at the end of the chunks."""
        while self._at >= len(self._buffer):
            chunk = next(self._chunks, None)
            if chunk is None:
                return False
            self._buffer, self._at = chunk, 0
        return True

    def skip(self, count: int) -> int:
        skipped = 0
        while skipped < count and not self._ended:
            if not self._fill():
                self._ended = True  # the final line
                skipped += 1
                break
            newlines = self._buffer.count(b"\n", self._at)
            if skipped + newlines < count:
                skipped += newlines
                self._at = len(self._buffer)
                continue
            while skipped < count:
                self._at = self._buffer.index(b"\n", self._at) + 1
                skipped += 1
        return skipped

    def take(self, cap: int) -> tuple[str, int] | None:
        if self._ended:
            return None
        kept = bytearray()
        size = 0
        while True:
            if not self._fill():
                self._ended = True
                break
            end = self._buffer.find(b"\n", self._at)
            piece_end = len(self._buffer) if end == -1 else end
            if len(kept) <= cap:  # keep one byte past cap to see where a character ends
                kept += self._buffer[self._at : min(piece_end, self._at + cap + 1 - len(kept))]
            size += piece_end - self._at
            self._at = piece_end + (end != -1)
            if end != -1:
                break
        return _cut_utf8(bytes(kept), cap), size

    def count_rest(self) -> int:
        if self._ended:
            return 0
        newlines = self._buffer.count(b"\n", self._at)
        newlines += sum(chunk.count(b"\n") for chunk in self._chunks)
        self._ended = True
        return newlines + 1


@dataclass(frozen=True, slots=True)
class RawChunks:
    """A file's raw bytes in any chunking, for ``select_lines`` to scan lazily.

    Lines before the window are counted without decoding, an over-long line
    keeps only ``max_bytes`` of its bytes, and the shown lines are decoded as
    UTF-8 (invalid bytes become U+FFFD; sizes count the file's bytes).

    Attributes:
        chunks: The bytes, read once, in order.
    """

    chunks: Iterable[bytes]


class ScannedLines:
    """A selection an environment already scanned (``env.BinaryReader.scan_lines``).

    The scan kept only the selected lines (raw, without newlines), knows the whole
    file's line count and the full size of the first selected line, so
    ``select_lines`` gives the same window and messages as over the whole file
    without the file ever being read into memory.

    Args:
        lines: The selected lines, raw bytes.
        start_line: The 0-based index of the first selected line.
        total_lines: Lines in the whole file.
        first_line_bytes: The full size of the first selected line.
        more: Whether the scan stopped before the end of the file (a line or
            byte limit), so lines follow the selection.
    """

    def __init__(
        self,
        lines: list[bytes],
        start_line: int,
        total_lines: int,
        first_line_bytes: int,
        more: bool,
    ) -> None:
        self.lines = lines
        self.start_line = start_line
        self.total_lines = total_lines
        self.first_line_bytes = first_line_bytes
        self.more = more


class _ScanSource:
    def __init__(self, scan: ScannedLines) -> None:
        self._scan = scan
        self._next = 0

    def skip(self, count: int) -> int:
        return min(count, self._scan.start_line, self._scan.total_lines)

    def take(self, cap: int) -> tuple[str, int] | None:
        scan = self._scan
        if self._next < len(scan.lines):
            raw = scan.lines[self._next]
            size = scan.first_line_bytes if self._next == 0 else len(raw)
            self._next += 1
            return _cut_utf8(raw, cap), size
        if scan.more:
            # REMINDER: a line follows the selection but the scan did not keep it; a
            # size past any limit makes the window report its truncation.
            return "", cap + 1
        return None

    def count_rest(self) -> int:
        return max(0, self._scan.total_lines - self._scan.start_line - self._next)


def select_lines(
    source: str | Iterable[str] | RawChunks | ScannedLines,
    offset: int | None = None,
    limit: int | None = None,
    *,
    display_path: str,
    total_lines: int | None = None,
    max_lines: int = DEFAULT_MAX_LINES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ReadWindow:
    r"""Select the window ``read`` shows, reading the source once and lazily.

    Args:
        source: The whole text, its lines without ``\n`` (lazily), the file's raw
            bytes (``RawChunks``), or an environment's scan (``ScannedLines``).
        offset: The 1-based first line; None (or below 1) starts at line 1.
        limit: How many lines to select from ``offset``; None selects to the end.
        display_path: The path as the model gave it, quoted in the messages.
        total_lines: The file's line count when the caller knows it; then the
            source is not read past the shown head.
        max_lines: Most lines shown.
        max_bytes: Most UTF-8 bytes shown.

    Returns:
        The shown window, its diagnostics and truncation details.

    Raises:
        ReadError: When ``offset`` is past the last line, or ``limit`` is negative.
        ValueError: When ``max_lines`` or ``max_bytes`` is not positive.
    """
    lines: _LineSource
    if isinstance(source, ScannedLines):
        lines = _ScanSource(source)
        total_lines = source.total_lines
    elif isinstance(source, RawChunks):
        lines = _ChunkLines(source.chunks)
    else:
        lines = _TextLines(source)
    if max_lines < 1 or max_bytes < 1:
        raise ValueError(f"read limits must be positive, got {max_lines} lines, {max_bytes} bytes")
    if limit is not None and limit < 0:
        raise ReadError(f"Invalid limit {limit}: it must be a number of lines, 0 or more")
    start = max(offset or 1, 1) - 1
    passed = lines.skip(start)
    wanted = limit if limit is not None else -1  # -1: to the end
    shown: list[str] = []
    shown_bytes = 0
    truncated_by: Literal["lines", "bytes"] | None = None
    cut_line: tuple[str, int] | None = None
    at_end = False
    while wanted != 0:
        line = lines.take(max_bytes)
        if line is None:
            at_end = True
            break
        passed += 1
        text, size = line
        if not shown and size > max_bytes:
            cut_line = line
            truncated_by = "bytes"
            break
        if len(shown) == max_lines:
            truncated_by = "lines"
            break
        added = size + 1 if shown else size  # the "\n" joining it to the previous line
        if shown_bytes + added > max_bytes:
            truncated_by = "bytes"
            break
        shown.append(text)
        shown_bytes += added
        wanted -= 1

    if total_lines is not None:
        total = total_lines
    elif at_end:
        total = passed
    else:
        total = passed + lines.count_rest()
    if start >= total:
        raise ReadError(f"Offset {offset} is beyond end of file ({total} lines total)")
    first = start + 1
    if cut_line is not None:
        return _cut_first_line(cut_line, first, total, display_path, max_lines, max_bytes)

    content = "\n".join(shown)
    last = start + len(shown)
    diagnostics: list[dict[str, str]] = []
    truncation = None
    if truncated_by is not None:
        limit_note = f" ({format_size(max_bytes)} limit)" if truncated_by == "bytes" else ""
        diagnostics.append(
            {
                "severity": "info",
                "message": f"Showing lines {first}-{last} of {total}{limit_note}. "
                f"Use offset={last + 1} to continue.",
                "code": "truncated",
            }
        )
        truncation = Truncation(
            truncated_by, False, len(shown), shown_bytes, total, max_lines, max_bytes
        )
    elif last < total:
        diagnostics.append(
            {
                "severity": "info",
                "message": f"{total - last} more lines in file. Use offset={last + 1} to continue.",
            }
        )
    return ReadWindow(
        content=content,
        diagnostics=diagnostics,
        truncation=truncation,
        first_line=first,
        shown_lines=len(shown),
        total_lines=total,
        next_offset=last + 1 if last < total else None,
    )


def _cut_first_line(
    line: tuple[str, int],
    number: int,
    total: int,
    display_path: str,
    max_lines: int,
    max_bytes: int,
) -> ReadWindow:
    text, size = line
    cut = len(text.encode("utf-8", errors="surrogatepass"))
    message = (
        f"Line {number} is {format_size(size)}, exceeds the {format_size(max_bytes)} limit; "
        f"showing its first {format_size(cut)}. Use bash: sed -n '{number}p' "
        f"{shlex.quote(display_path)} | tail -c +{cut + 1}"
    )
    return ReadWindow(
        content=text,
        diagnostics=[{"severity": "warn", "message": message, "code": "truncated"}],
        truncation=Truncation("bytes", True, 1, cut, total, max_lines, max_bytes),
        first_line=number,
        shown_lines=1,
        total_lines=total,
        next_offset=number + 1 if number < total else None,
    )
