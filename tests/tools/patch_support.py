"""A strict applier of unified diffs, to check patches by applying them.

It trusts nothing: every context and removed line must match the old text at
the position the hunk header names, and hunks must come in order.
"""

from __future__ import annotations

import re

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    last = parts.pop()
    return [part + "\n" for part in parts] + ([last] if last else [])


def apply_unified_patch(old: str, patch: str) -> str:
    """Apply a one-file unified diff to ``old`` and return the new text."""
    source = _lines(old)
    rows = patch.split("\n")
    assert rows[0].startswith("--- "), patch
    assert rows[1].startswith("+++ "), patch
    assert rows[-1] == "", "a patch ends with a newline"
    rows = rows[2:-1]
    out: list[str] = []
    at = 0
    index = 0
    while index < len(rows):
        header = _HUNK.fullmatch(rows[index])
        assert header, f"expected a hunk header, got {rows[index]!r}"
        old_start, old_count = int(header[1]), int(header[2] or 1)
        new_count = int(header[4] or 1)
        first = old_start - 1 if old_count else old_start
        assert first >= at, "hunks must not go back"
        out += source[at:first]
        at = first
        index += 1
        body: list[tuple[str, str]] = []
        while index < len(rows) and not rows[index].startswith("@@"):
            row = rows[index]
            if row == "\\ No newline at end of file":
                kind, text = body[-1]
                body[-1] = (kind, text.removesuffix("\n"))
            else:
                body.append((row[0], row[1:] + "\n"))
            index += 1
        assert sum(kind != "+" for kind, _ in body) == old_count
        assert sum(kind != "-" for kind, _ in body) == new_count
        for kind, text in body:
            if kind in " -":
                assert source[at] == text, f"line {at + 1}: {source[at]!r} != {text!r}"
                at += 1
            if kind in " +":
                out.append(text)
    out += source[at:]
    return "".join(out)
