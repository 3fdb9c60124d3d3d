"""A long paste is one placeholder in the editor, deleted or expanded as a unit, sent whole."""

from __future__ import annotations

from textual import events
from textual.pilot import Pilot

from pi_durable_tui.bench.tui_model import RecordingController
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._paste import PastedTexts, is_long_paste, placeholder_for
from tests.tui.conftest import settle

LOG = "".join(f"line {n}: something happened\n" for n in range(1, 41))
"""A 40-line paste: long by its lines."""
BLOB = "x" * 1500
"""A 1,500-character single line: long by its length."""


async def paste(pilot: Pilot[None], text: str) -> None:
    """Paste as the terminal does (a bracketed paste arrives as one ``Paste`` event)."""
    pilot.app.post_message(events.Paste(text))
    await pilot.pause()
    await pilot.pause()


def sent(controller: RecordingController) -> list[str]:
    return [args[0] for args in controller.called("submit")]


def test_a_paste_is_long_past_ten_lines_or_a_thousand_characters() -> None:
    assert not is_long_paste("a\n" * 10)
    assert is_long_paste("a\n" * 11)
    assert not is_long_paste("a" * 1000)
    assert is_long_paste("a" * 1001)


def test_a_placeholder_counts_lines_or_for_one_long_line_characters() -> None:
    assert placeholder_for(1, LOG) == "[Pasted text #1 +40 lines]"
    assert placeholder_for(2, BLOB) == "[Pasted text #2 +1,500 characters]"


def test_expanding_is_one_pass_so_a_pasted_placeholder_string_is_not_expanded_again() -> None:
    pastes = PastedTexts()
    second = placeholder_for(2, LOG)
    first = pastes.add(f"quoted {second}\n" + LOG)
    assert pastes.add(LOG) == second
    assert pastes.expand(f"{first} and {second}") == f"quoted {second}\n{LOG} and {LOG}"


async def test_a_long_paste_shows_as_one_placeholder_and_is_sent_whole(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"explain ")
        await paste(pilot, LOG)
        assert app.editor.text == "explain [Pasted text #1 +40 lines]"
        await pilot.press(*" please", "enter")
        await settle(pilot)
    assert sent(controller) == [f"explain {LOG} please"]


async def test_a_short_paste_goes_into_the_editor_as_it_is(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await paste(pilot, "two\nlines")
        assert app.editor.text == "two\nlines"


async def test_one_backspace_after_a_placeholder_deletes_the_whole_paste(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"see ")
        await paste(pilot, LOG)
        await pilot.press("backspace")
        assert app.editor.text == "see "
        await pilot.press(*"nothing", "enter")
        await settle(pilot)
    assert sent(controller) == ["see nothing"]


async def test_delete_before_a_placeholder_removes_it_as_a_unit(app: PidurableApp) -> None:
    async with app.run_test() as pilot:
        await paste(pilot, BLOB)
        await pilot.press("home", "delete")
        assert app.editor.text == ""


async def test_typing_inside_a_placeholder_goes_after_it_and_it_still_expands(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await paste(pilot, LOG)
        await pilot.press("left", "left", "left", "!")
        assert app.editor.text == "[Pasted text #1 +40 lines]!"
        await pilot.press("enter")
        await settle(pilot)
    assert sent(controller) == [LOG + "!"]


async def test_the_expand_key_puts_the_pasted_text_itself_in_the_editor(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await paste(pilot, LOG)
        await pilot.press("ctrl+r")
        assert app.editor.text == LOG
        await pilot.press("backspace")
        assert app.editor.text == LOG[:-1]


async def test_several_pastes_get_their_own_numbered_placeholders_and_all_are_sent(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await paste(pilot, LOG)
        await pilot.press(*" vs ")
        await paste(pilot, BLOB)
        assert app.editor.text == (
            "[Pasted text #1 +40 lines] vs [Pasted text #2 +1,500 characters]"
        )
        await pilot.press("enter")
        await settle(pilot)
        assert app.editor.text == ""
        await paste(pilot, LOG)
        assert app.editor.text == "[Pasted text #1 +40 lines]"
    assert sent(controller) == [f"{LOG} vs {BLOB}"]


async def test_walking_the_history_and_back_keeps_the_drafts_paste(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.prompts = ["older prompt"]
    async with app.run_test() as pilot:
        await paste(pilot, LOG)
        await pilot.press("up")
        assert app.editor.text == "older prompt"
        await pilot.press("down", "enter")
        await settle(pilot)
    assert sent(controller) == [LOG]
