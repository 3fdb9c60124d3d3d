"""Where UTF-8 text may be cut: the character-boundary rule of every layer, in one place.

It stands below every layer (like ``stack_dump``) so that the environment, the
harness and the tools cut bytes by the same code: the harness's output bounds
(section 3.5, R97, R102), the environment's tail window (R105) and ``read``'s cut
of an over-long line (3.1).

The rule (``character_start``): a position is a *character boundary* when its
byte is not a continuation byte, or is one that no lead byte among the three
before it could claim. For valid UTF-8 these are exactly the character starts.
What lies before the bytes a caller holds is the one thing callers know
differently, so it is a parameter (``before``): nothing (the bytes begin the
text), unknown (one chunk of a longer stream: its start is the furthest back a
cut may move) or gone (a suffix whose earlier bytes were skipped: continuation
bytes at its very start belong to a character that began before it).

Invalid bytes, decided once (issue 14). Two rules used to differ on them: the
chunk rule moved a cut back over *every* continuation byte, so a run of stray
continuation bytes (binary output, a corrupt line) pulled the cut back to the
chunk's start - ``read`` of a 60 KB line of ``0x80`` bytes showed none of it, and
the tail window kept a whole chunk more than its limit. Now a continuation byte
that no lead byte can claim is a boundary everywhere, because it is one to every
decoder: with ``errors="replace"`` it becomes its own U+FFFD, so decoding the
bytes after (or before) such a cut gives the same characters as decoding the
whole and cutting there. The walk back is also bounded (three bytes).
"""

from __future__ import annotations

from typing import Literal

Before = Literal["nothing", "unknown", "gone"]
"""What precedes ``data``: see the module docstring."""


def _sequence_length(byte: int) -> int:
    if 0xC2 <= byte <= 0xDF:
        return 2
    if 0xE0 <= byte <= 0xEF:
        return 3
    if 0xF0 <= byte <= 0xF4:
        return 4
    return 0


def character_start(data: bytes | bytearray, index: int, before: Before = "nothing") -> int:
    """Return where the character holding byte ``index`` starts (``index`` at a boundary).

    Args:
        data: The bytes.
        index: A position in them (``len(data)`` is a boundary).
        before: What precedes ``data``: ``"nothing"`` (it begins the text; a
            stray continuation byte at its start is a boundary), ``"unknown"``
            (a chunk: a character that may have begun before it starts at 0) or
            ``"gone"`` (a suffix: such a character began before it, -1).

    Returns:
        A position at or before ``index``; -1 only with ``before="gone"``.
    """
    if index >= len(data) or not 0x80 <= data[index] <= 0xBF:
        return index
    for back in (1, 2, 3):
        if index - back < 0:
            return {"nothing": index, "unknown": 0, "gone": -1}[before]
        byte = data[index - back]
        if 0x80 <= byte <= 0xBF:
            continue
        return index - back if _sequence_length(byte) > back else index
    return index
