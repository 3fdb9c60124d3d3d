"""The plain values an environment hands out and takes in (R119, R120, R105).

Frozen dataclasses, so a tool can keep them, compare them and put their fields
into JSON without copying: file facts (``FileInfo``, ``DirEntry``), the result of
a line scan (``LineScan``), and the vocabulary of ``exec`` (``SpillPolicy``,
``OutputWindow``, ``SkippedOutput``, ``ExecResult`` and the ``OutputCallback``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

FileKind = Literal["file", "directory", "symlink", "other"]
"""What a path names; ``other`` covers FIFOs, sockets and devices, which tools refuse."""

OutputStream = Literal["stdout", "stderr"]
"""Which pipe a chunk of command output came from."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    """What ``file_info`` says about a path, without following a final symlink (R119).

    Attributes:
        kind: ``file``, ``directory``, ``symlink`` or ``other``.
        size: Size in bytes (of the link itself for a symlink).
        mtime_ms: Modification time in milliseconds since the epoch.
    """

    kind: FileKind
    size: int
    mtime_ms: float


@dataclass(frozen=True, slots=True)
class DirEntry:
    """One name in a directory listing, with its kind (a symlink is not followed)."""

    name: str
    kind: FileKind


@dataclass(frozen=True, slots=True)
class LineScan:
    """The selected lines of a file, read without decoding the rest of it.

    Lines are the pieces of the file split on newline bytes (as ``bytes.split``
    does: a file ending in a newline has an empty last piece), without their
    newline. The selection starts at ``start_line`` (0-based) and stops at
    ``max_lines`` lines or before the line that would take the selected bytes
    (newlines between lines included) past ``max_bytes``. A first selected line
    alone longer than ``max_bytes`` is cut there, on a UTF-8 character boundary.

    Attributes:
        lines: The selected lines, raw bytes without their newline.
        start_line: The index of the first selected line.
        total_lines: How many pieces the whole file splits into (newlines + 1).
        stopped: Why the selection ended: ``end`` (file or start beyond it),
            ``lines`` (``max_lines``) or ``bytes`` (``max_bytes``).
        first_line_bytes: The full length of the first selected line, which is
            larger than ``len(lines[0])`` when it was cut.
    """

    lines: list[bytes]
    start_line: int
    total_lines: int
    stopped: Literal["end", "lines", "bytes"]
    first_line_bytes: int


@dataclass(frozen=True, slots=True)
class SpillPolicy:
    """When ``exec`` also writes the complete output to a file (R120).

    Once the combined output has more than ``after_bytes`` bytes or more than
    ``after_lines`` lines (an unterminated last line counts), everything from byte
    0 on goes to a ``pi-output-*.log`` temp file. Until then the output is held in
    memory, so the thresholds bound what is held.
    """

    after_bytes: int
    after_lines: int


@dataclass(frozen=True, slots=True)
class OutputWindow:
    """The kept tail of a tail-retaining tool, so ``exec`` can skip the rest (R105).

    With a window, ``exec`` delivers output at most once per ``min_interval_ms``
    and no faster than ``bytes_per_second`` of delivered bytes (the first chunk
    after a quiet period goes at once), and it drops, instead of delivering, any
    output that more recent output has already pushed out of the last
    ``max_lines`` lines and ``max_bytes`` bytes. Dropped output is reported as a
    ``SkippedOutput`` on the next chunk, so a consumer's totals stay exact.
    """

    max_bytes: int
    max_lines: int
    min_interval_ms: float = 100.0
    bytes_per_second: float = 102400.0


@dataclass(frozen=True, slots=True)
class SkippedOutput:
    """Output that ``exec`` dropped under an ``OutputWindow`` just before a chunk.

    The skipped bytes follow the previously delivered chunk (of either stream)
    immediately; the chunk after them starts on a UTF-8 character boundary
    (except when a pipe read had split that character). A consumer that decodes
    incrementally discards the partial character it may hold: its remaining bytes
    were skipped. ``line_count`` is the number of newlines in the skipped bytes;
    ``ends_line`` says whether the last skipped byte was a newline (a line cut) or
    the skip stopped inside a line (a byte cut), which a consumer counting lines
    needs to know.
    """

    byte_count: int
    line_count: int
    ends_line: bool = True


OutputCallback = Callable[[bytes, OutputStream, SkippedOutput | None], None]
"""``on_output(chunk, stream, skipped)``: called on the event loop for each chunk.

A chunk may be empty when it only carries ``skipped`` counts. An exception
raised by the callback stops the command (its process group is killed) and
propagates from ``exec``.
"""


@dataclass(frozen=True, slots=True)
class ExecResult:
    """How a command ended (R120).

    Attributes:
        exit_code: The exit status; ``128 + n`` when signal ``n`` killed it, as
            shells report it.
        spill_path: The file holding the complete output, when the output crossed
            the ``SpillPolicy`` thresholds.
    """

    exit_code: int
    spill_path: str | None = None
    moved: Any = None
    """The command as a background job when the call asked it to move (a ``RunningJob``,
    issue 13); ``exit_code`` is then -1: the command still runs."""
