"""The pure model of long pastes (``tui/_paste``), on plain strings, without Textual.

``Doc`` applies an edit the way ``PromptEditor`` does: the model first says which
range the edit must cover (``whole_edit``), then the text is replaced; undo puts
the replaced text back, as ``TextArea`` replays an edit in reverse.
"""

from __future__ import annotations

from pi_durable_tui.tui._paste import (
    LONG_PASTE_CHARS,
    LONG_PASTE_LINES,
    Location,
    PastedTexts,
    is_long_paste,
    placeholder_for,
)

LOG = "".join(f"line {n}: something happened\n" for n in range(1, 41))
"""A 40-line paste: long by its lines."""
BLOB = "x" * 1500
"""A 1,500-character single line: long by its length."""
BIG = "".join(f"row {n}\n" for n in range(1, 5001))
"""A 5,000-line paste."""


class Doc:
    """A document edited through the model's rules, with an undo list."""

    def __init__(self, pastes: PastedTexts, text: str = "") -> None:
        self.pastes = pastes
        self.text = text
        self.undo_list: list[tuple[Location, Location, str]] = []

    def line_at(self, row: int) -> str:
        return self.text.split("\n")[row]

    def offset(self, location: Location) -> int:
        row, column = location
        return sum(len(line) + 1 for line in self.text.split("\n")[:row]) + column

    def location(self, offset: int) -> Location:
        before = self.text[:offset].split("\n")
        return len(before) - 1, len(before[-1])

    def edit(self, top: Location, bottom: Location, insert: str) -> None:
        """Replace ``top``..``bottom`` with ``insert``, widened as the editor widens it."""
        top, bottom = self.pastes.whole_edit(top, bottom, self.line_at)
        start, end = self.offset(top), self.offset(bottom)
        replaced = self.text[start:end]
        self.text = self.text[:start] + insert + self.text[end:]
        self.undo_list.append((top, self.location(start + len(insert)), replaced))

    def backspace(self, at: Location) -> None:
        self.edit((at[0], at[1] - 1), at, "")

    def undo(self) -> None:
        top, end, replaced = self.undo_list.pop()
        start = self.offset(top)
        self.text = self.text[:start] + replaced + self.text[self.offset(end) :]

    def sent(self) -> str:
        return self.pastes.expand(self.text)


def pasted(text: str, before: str = "", after: str = "") -> tuple[Doc, str]:
    """A document holding ``before``, the placeholder of ``text``, ``after``."""
    pastes = PastedTexts()
    placeholder = pastes.add(text)
    return Doc(pastes, before + placeholder + after), placeholder


def test_a_paste_is_long_past_ten_lines_or_a_thousand_characters() -> None:
    assert (LONG_PASTE_LINES, LONG_PASTE_CHARS) == (10, 1000)
    assert not is_long_paste("a\n" * 10)
    assert is_long_paste("a\n" * 11)
    assert not is_long_paste("a" * 1000)
    assert is_long_paste("a" * 1001)


def test_a_placeholder_counts_lines_or_for_one_long_line_characters() -> None:
    assert placeholder_for(1, LOG) == "[Pasted text #1 +40 lines]"
    assert placeholder_for(1, BIG) == "[Pasted text #1 +5000 lines]"
    assert placeholder_for(2, BLOB) == "[Pasted text #2 +1,500 characters]"


def test_expanding_is_one_pass_so_a_pasted_placeholder_string_is_not_expanded_again() -> None:
    pastes = PastedTexts()
    second = placeholder_for(2, LOG)
    first = pastes.add(f"quoted {second}\n" + LOG)
    assert pastes.add(LOG) == second
    assert pastes.expand(f"{first} and {second}") == f"quoted {second}\n{LOG} and {LOG}"


def test_several_pastes_are_numbered_in_order_and_each_expands_to_its_own_text() -> None:
    pastes = PastedTexts()
    first, second, third = pastes.add(BIG), pastes.add(BLOB), pastes.add(LOG)
    assert (first, second, third) == (
        "[Pasted text #1 +5000 lines]",
        "[Pasted text #2 +1,500 characters]",
        "[Pasted text #3 +40 lines]",
    )
    assert pastes.expand(f"a {third} b {first}\n{second}") == f"a {LOG} b {BIG}\n{BLOB}"


def test_backspace_at_the_end_of_a_placeholder_removes_the_whole_paste() -> None:
    doc, _ = pasted(BIG, before="see ")
    doc.backspace((0, len(doc.text)))
    assert doc.text == "see "
    assert doc.sent() == "see "


def test_delete_before_a_placeholder_removes_the_whole_paste() -> None:
    doc, _ = pasted(BLOB, after=" tail")
    doc.edit((0, 0), (0, 1), "")
    assert doc.text == " tail"


def test_a_selection_that_ends_inside_a_placeholder_takes_all_of_it() -> None:
    doc, _ = pasted(LOG, before="one two ", after=" three")
    doc.edit((0, 4), (0, 8 + 5), "")
    assert doc.text == "one  three"


def test_a_selection_over_several_lines_that_starts_inside_a_placeholder_takes_all_of_it() -> None:
    doc, _ = pasted(LOG, before="head ", after=" end\nnext line")
    doc.edit((0, 5 + 3), (1, 4), "")
    assert doc.text == "head  line"


def test_typing_inside_a_placeholder_goes_after_it_and_it_still_expands() -> None:
    doc, placeholder = pasted(LOG)
    doc.edit((0, 3), (0, 3), "!")
    assert doc.text == placeholder + "!"
    assert doc.sent() == LOG + "!"


def test_editing_text_around_a_placeholder_keeps_it_and_its_text() -> None:
    doc, placeholder = pasted(BIG, before="ab", after="cd")
    doc.edit((0, 0), (0, 0), "first line\n")  # a line above moves it down a row
    doc.edit((1, 2), (1, 2), " ")  # typed right before it
    end = 2 + 1 + len(placeholder)
    doc.edit((1, end), (1, end), " ")  # typed right after it
    doc.backspace((1, 2))  # the character before it: "b"
    end -= 1
    doc.edit((1, end), (1, end + 1), "")  # Delete right after it: the space, not the paste
    assert doc.text == f"first line\na {placeholder}cd"
    assert doc.sent() == f"first line\na {BIG}cd"


def test_undoing_the_deletion_of_a_placeholder_brings_back_one_that_still_expands() -> None:
    doc, placeholder = pasted(BIG, before="see ")
    doc.backspace((0, len(doc.text)))
    doc.edit((0, 4), (0, 4), "nothing")
    doc.undo()
    doc.undo()
    assert doc.text == f"see {placeholder}"
    assert doc.sent() == f"see {BIG}"


def test_the_cursor_steps_over_a_placeholder_as_one_unit() -> None:
    doc, placeholder = pasted(LOG, before="ab", after="cd\nsecond line that is long enough")
    start, end = 2, 2 + len(placeholder)

    def snap(previous: Location, location: Location) -> Location:
        return doc.pastes.snap(previous, location, doc.line_at)

    assert snap((0, start), (0, start + 1)) == (0, end)  # Right before it
    assert snap((0, end), (0, end - 1)) == (0, start)  # Left after it
    assert snap((1, 10), (0, 10)) == (0, start)  # Up from below
    assert snap((0, 0), (0, 10)) == (0, end)  # a click from before it
    assert snap((0, 0), (0, start)) == (0, start)  # its edges are fine
    assert snap((0, 0), (1, 5)) == (1, 5)  # other lines are left alone


def test_a_sent_message_forgets_its_pastes_and_keeps_those_still_in_the_editor() -> None:
    pastes = PastedTexts()
    sent, kept = pastes.add(LOG), pastes.add(BLOB)
    pastes.keep_only_in(f"typed after sending {kept}")
    assert pastes.expand(f"{sent} {kept}") == f"{sent} {BLOB}"
    assert pastes.add(LOG) == "[Pasted text #3 +40 lines]"


def test_an_emptied_editor_forgets_its_pastes_and_numbers_from_one_again() -> None:
    pastes = PastedTexts()
    placeholder = pastes.add(LOG)
    pastes.clear()
    assert pastes.expand(placeholder) == placeholder
    assert pastes.add(BLOB) == "[Pasted text #1 +1,500 characters]"


def test_without_pastes_edits_and_the_cursor_go_where_they_were_asked() -> None:
    doc = Doc(PastedTexts(), "[Pasted text #1 +40 lines]")  # typed, not pasted
    assert doc.pastes.whole_edit((0, 3), (0, 4), doc.line_at) == ((0, 3), (0, 4))
    assert doc.pastes.snap((0, 2), (0, 3), doc.line_at) == (0, 3)
    assert doc.sent() == doc.text


def test_fold_keeps_short_text_and_gives_a_kept_long_text_its_placeholder_again() -> None:
    pastes = PastedTexts()
    assert pastes.fold("short") == "short"
    first = pastes.fold(LOG)
    assert first == placeholder_for(1, LOG)
    assert pastes.fold(LOG) == first  # recalled again: the same number
    assert pastes.fold(BIG) == placeholder_for(2, BIG)
    assert pastes.expand(f"{first} {placeholder_for(2, BIG)}") == f"{LOG} {BIG}"
