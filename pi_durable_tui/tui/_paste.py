"""Long pastes as placeholders: a pure model of the editor's pasted texts (issue 12).

A paste of more than ``LONG_PASTE_LINES`` lines or ``LONG_PASTE_CHARS`` characters
shows in the editor as one line, ``[Pasted text #1 +42 lines]``, while
``PastedTexts`` keeps the text itself. The placeholder behaves as one unit:

- an edit that starts or ends inside a placeholder covers all of it (one
  Backspace after it, or one Delete before it, removes the whole paste):
  ``whole_edit``;
- text typed with the cursor inside a placeholder goes after it, so a
  placeholder is never half-edited into something that no longer expands;
- the cursor never stops inside one: Right before it lands after it, Left after
  it lands before it, a click into it lands on an edge: ``snap``;
- ``expand`` turns every placeholder back into its text, in one pass: a pasted
  text that itself reads like a placeholder is sent as it is, never expanded again.

A paste's text is kept until the message is sent or the editor emptied, even
after its placeholder left the document: undo brings a deleted placeholder
back, and it must still expand (dropping the text with its placeholder sent the
placeholder's own words to the model, and the paste was lost).

The number (``#1``, ``#2``) tells several pastes of one message apart; numbers are
not reused until the editor is emptied (``clear``), so two placeholders never
read the same.

Nothing here knows Textual: the document is read through ``LineAt`` (a row's
text), so the rules are tested on plain strings and ``PromptEditor`` only binds
them to its edits and its cursor.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

LONG_PASTE_LINES = 10
"""A paste of more lines than this becomes a placeholder.

The editor takes at most a quarter of the screen (ten rows on a 40-row
terminal): a longer paste pushes what is typed around it out of sight.
"""
LONG_PASTE_CHARS = 1000
"""A paste of more characters than this becomes a placeholder.

About twelve wrapped rows at 80 columns, the same bound as ``LONG_PASTE_LINES``
for text with few line breaks (a minified file, a base64 blob, one long log line).
"""

Location = tuple[int, int]
"""A (row, column) place in the editor's document."""

LineAt = Callable[[int], str]
"""The text of one row of the document."""


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

    def fold(self, text: str) -> str:
        """Return ``text`` as the editor should show it: a long one as a placeholder.

        For text put back into the editor whole (a recalled prompt, withdrawn queued
        messages): a text already kept keeps its placeholder, so going up and down
        the history does not number the same prompt again and again.
        """
        if not is_long_paste(text):
            return text
        for placeholder, kept in self._texts.items():
            if kept == text:
                return placeholder
        return self.add(text)

    def text_of(self, placeholder: str) -> str:
        """The pasted text a placeholder stands for."""
        return self._texts[placeholder]

    def keep_only_in(self, document: str) -> None:
        """Forget every paste whose placeholder is not in the document.

        Only once no undo can bring a placeholder back: the editor's text was
        replaced (a message sent, the rest kept), which clears its undo history.
        """
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
        """Where this editor's placeholders stand on one line of the document, in order."""
        found: list[Span] = []
        for placeholder in self._texts:
            start = line.find(placeholder)
            while start >= 0:
                found.append(Span(row, start, start + len(placeholder), placeholder))
                start = line.find(placeholder, start + 1)
        return sorted(found, key=lambda span: span.start)

    def whole_edit(
        self, top: Location, bottom: Location, line_at: LineAt
    ) -> tuple[Location, Location]:
        """The range an edit of ``top`` to ``bottom`` must cover so no placeholder is cut.

        An insertion inside a placeholder moves after it; a deletion that starts or
        ends inside one grows to take all of it.
        """
        if not self._texts:
            return top, bottom
        spans = self.spans(top[0], line_at(top[0]))
        if bottom[0] != top[0]:
            spans += self.spans(bottom[0], line_at(bottom[0]))
        if top == bottom:
            inside = next((s for s in spans if s.strictly_inside(top)), None)
            if inside is None:
                return top, bottom
            return (inside.row, inside.end), (inside.row, inside.end)
        for span in spans:
            if span.strictly_inside(top):
                top = (span.row, span.start)
            if span.strictly_inside(bottom):
                bottom = (span.row, span.end)
        return top, bottom

    def snap(self, previous: Location, location: Location, line_at: LineAt) -> Location:
        """Where the cursor goes when it would stop inside a placeholder.

        Coming from before the placeholder (Right, Down, a click) it goes past the
        end; coming from after it (Left, Up) it goes to the start.
        """
        if not self._texts:
            return location
        row = location[0]
        for span in self.spans(row, line_at(row)):
            if span.strictly_inside(location):
                after = previous > (span.row, span.start)
                return (row, span.start) if after else (row, span.end)
        return location
