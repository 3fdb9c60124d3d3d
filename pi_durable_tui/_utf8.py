"""Where UTF-8 text may be cut: the character-boundary rules of every layer, in one place.

It stands below every layer (like ``stack_dump``) so that the environment, the
harness and the tools cut bytes by the same code. Two rules live here because
their callers know different amounts of the text:

- ``inside_character`` (the harness's output bounds, section 3.5, R97, R102)
  knows the bytes around the cut: a position is a *character boundary* when its
  byte is not a continuation byte, or is one that no lead byte among the three
  before it could claim. For valid UTF-8 these are exactly the character starts;
  for invalid bytes they are always places where a decoder restarts.
- ``continuation_start`` (the environment's tail window, R105, and ``read``'s
  cut of an over-long line, 3.1) sees only one chunk: it moves a cut back over
  every continuation byte, to the chunk's start at most, so it never splits a
  character whose lead byte lies in the chunk. For valid UTF-8 it gives the same
  cut as the first rule whenever the character starts inside the chunk.
"""

from __future__ import annotations


def _sequence_length(byte: int) -> int:
    if 0xC2 <= byte <= 0xDF:
        return 2
    if 0xE0 <= byte <= 0xEF:
        return 3
    if 0xF0 <= byte <= 0xF4:
        return 4
    return 0


def inside_character(data: bytes | bytearray, index: int, suffix: bool = False) -> int:
    """Return how far before ``index`` its character starts (0 when ``index`` is a boundary).

    Args:
        data: The bytes.
        index: A position in them.
        suffix: ``data`` is the end of a longer stream whose earlier bytes are gone
            (skipped, or not kept): continuation bytes at its very start belong to
            a character that began before it, so they are inside one.
    """
    if index >= len(data) or not 0x80 <= data[index] <= 0xBF:
        return 0
    for back in (1, 2, 3):
        if index - back < 0:
            return back if suffix else 0
        byte = data[index - back]
        if 0x80 <= byte <= 0xBF:
            continue
        return back if _sequence_length(byte) > back else 0
    return 0


def continuation_start(data: bytes | bytearray, cut: int) -> int:
    """Move ``cut`` back over continuation bytes, to the start of ``data`` at most.

    Args:
        data: One chunk of bytes.
        cut: A position in it, below ``len(data)``.

    Returns:
        The first position at or before ``cut`` whose byte is not a continuation
        byte, or 0.
    """
    while cut > 0 and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return cut
