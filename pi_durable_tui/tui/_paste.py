"""Long pastes as placeholders in the editor (issue 12).

A paste of more than ``LONG_PASTE_LINES`` lines or ``LONG_PASTE_CHARS`` characters
shows in the editor as one line, ``[Pasted text #1 +42 lines]``, while
``PastedTexts`` keeps the text itself. The placeholder behaves as one unit:

- an edit that starts or ends inside a placeholder covers all of it (one
  Backspace after it, or one Delete before it, removes the whole paste);
- text typed with the cursor inside a placeholder goes after it, so a
  placeholder is never half-edited into something that no longer expands;
- ``expand`` turns every placeholder back into its text, in one pass: a pasted
  text that itself reads like a placeholder is sent as it is, never expanded again.

The number (``#1``, ``#2``) tells several pastes of one message apart; numbers are
not reused until the editor is emptied (``clear``), so two placeholders never
read the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LONG_PASTE_LINES = 10
"""A paste of more lines than this becomes a placeholder."""
LONG_PASTE_CHARS = 1000
"""A paste of more characters than this becomes a placeholder."""

Location = tuple[int, int]
"""A (row, column) place in the editor's document."""


def is_long_paste(text: str) -> bool:
    """Whether a paste is long enough to show as a placeholder."""
    return len(text) > LONG_PASTE_CHARS or line_count(text) > LONG_PASTE_LINES


def line_count(text: str) -> int:
    """The lines a text shows as (a final newline does not start another line)."""
    return len(text.rstrip("\n").split("\n"))


def placeholder_for(number: int, text: str) -> str:
    """The placeholder of paste ``number``: ``[Pasted text #1 +42 lines]``.

    A long single line says its length in characters instead.
    """
    lines = line_count(text)
    if lines > 1:
        return f"[Pasted text #{number} +{lines} lines]"
    return f"[Pasted text #{number} +{len(text):,} characters]"


@dataclass(frozen=True)
class Span:
    """Where one placeholder stands in the document: ``row``, columns ``start`` to ``end``."""

    row: int
    start: int
    end: int
    placeholder: str

    def strictly_inside(self, location: Location) -> bool:
        """Whether a location is between the placeholder's first and last character."""
        row, column = location
        return row == self.row and self.start < column < self.end

    def touches(self, location: Location) -> bool:
        """Whether a location is inside the placeholder or on one of its edges."""
        row, column = location
        return row == self.row and self.start <= column <= self.end


class PastedTexts:
    """The long pastes of the message being written, by placeholder."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._next = 1

    def __bool__(self) -> bool:
        return bool(self._texts)

    def add(self, text: str) -> str:
        """Keep a pasted text; return the placeholder to put in the editor instead."""
        placeholder = placeholder_for(self._next, text)
        self._next += 1
        self._texts[placeholder] = text
        return placeholder

    def text_of(self, placeholder: str) -> str:
        """The pasted text a placeholder stands for."""
        return self._texts[placeholder]

    def forget(self, placeholder: str) -> None:
        """Drop a paste whose placeholder left the editor (deleted or expanded)."""
        self._texts.pop(placeholder, None)

    def keep_only_in(self, document: str) -> None:
        """Forget every paste whose placeholder is no longer in the document."""
        for placeholder in [p for p in self._texts if p not in document]:
            del self._texts[placeholder]

    def clear(self) -> None:
        """Forget every paste and number the next one ``#1`` again (the editor was emptied)."""
        self._texts.clear()
        self._next = 1

    def expand(self, document: str) -> str:
        """The document with every placeholder replaced by its text, in one pass."""
        if not self._texts:
            return document
        # REMINDER: one re.sub over all placeholders at once, never a loop of
        # str.replace: a pasted text holding another placeholder's string must
        # reach the model as pasted, not expanded a second time.
        pattern = re.compile("|".join(re.escape(p) for p in self._texts))
        return pattern.sub(lambda match: self._texts[match.group(0)], document)

    def spans(self, row: int, line: str) -> list[Span]:
        """Where this editor's placeholders stand on one line of the document."""
        found: list[Span] = []
        for placeholder in self._texts:
            start = line.find(placeholder)
            while start >= 0:
                found.append(Span(row, start, start + len(placeholder), placeholder))
                start = line.find(placeholder, start + 1)
        return found
