"""A long paste is one placeholder in the editor, deleted or expanded as a unit, sent whole.

The rules themselves are tested on plain strings in ``test_paste_model.py``; these
run the real editor.
"""

from __future__ import annotations

from textual import events
from textual.pilot import Pilot

from pi_durable_tui.bench.hostile_escapes import EVIL
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
from pi_durable_tui.tui import PidurableApp
from tests.tui.conftest import settle

LOG = "".join(f"line {n}: something happened\n" for n in range(1, 41))
"""A 40-line paste: long by its lines."""
BLOB = "x" * 1500
"""A 1,500-character single line: long by its length."""
BIG = "".join(f"row {n} of a long log\n" for n in range(1, 5001))
"""A 5,000-line paste."""
BIG_PLACEHOLDER = "[Pasted text #1 +5000 lines]"


async def paste(pilot: Pilot[None], text: str) -> None:
    """Paste as the terminal does (a bracketed paste arrives as one ``Paste`` event)."""
    pilot.app.post_message(events.Paste(text))
    await pilot.pause()
    await pilot.pause()


def sent(controller: RecordingController) -> list[str]:
    return [args[0] for args in controller.called("submit")]


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


async def test_the_cursor_steps_over_a_placeholder_as_one_unit(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"ab")
        await paste(pilot, LOG)
        await pilot.press(*"cd", "left", "left", "left", "!")
        assert app.editor.text == "ab![Pasted text #1 +40 lines]cd"
        await pilot.press("right", "?")
        assert app.editor.text == "ab![Pasted text #1 +40 lines]?cd"
        await pilot.press("enter")
        await settle(pilot)
    assert sent(controller) == [f"ab!{LOG}?cd"]


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


async def test_a_long_prompt_recalled_from_the_history_comes_back_folded_and_is_sent_whole(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.prompts = [BIG, "newest prompt"]
    async with app.run_test() as pilot:
        await pilot.press("up", "up")
        assert app.editor.text == BIG_PLACEHOLDER
        await pilot.press("down", "up")  # the same prompt again keeps its number
        assert app.editor.text == BIG_PLACEHOLDER
        await pilot.press("enter")
        await settle(pilot)
    assert sent(controller) == [BIG]


async def test_long_text_put_back_into_the_editor_is_folded_and_sent_whole(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"typed")
        app.editor.put_text(BIG)  # a withdrawn steer, say
        await pilot.pause()
        assert app.editor.text == f"{BIG_PLACEHOLDER}\ntyped"
        await pilot.press("enter")
        await settle(pilot)
    assert sent(controller) == [f"{BIG}\ntyped"]


async def test_a_5000_line_paste_is_one_line_in_the_editor_and_every_line_is_sent(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press(*"review ")
        await paste(pilot, BIG)
        await pilot.press(*" and summarise")
        await pilot.pause()
        # One short line, the editor one row high between its borders: typing
        # around the paste edits 40 characters, not 5,000 lines.
        assert app.editor.text == f"review {BIG_PLACEHOLDER} and summarise"
        assert app.editor.document.line_count == 1
        assert app.editor.outer_size.height == 3
        await pilot.press("enter")
        await settle(pilot)
    [message] = sent(controller)
    assert message == f"review {BIG} and summarise"
    assert message.count("\n") == 5000


async def test_a_5000_line_paste_queued_as_a_follow_up_or_sent_as_a_steer_holds_every_line(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        model.set(busy=True)
        await pilot.pause()
        await paste(pilot, BIG)
        await pilot.press("ctrl+f")  # Alt+Enter's fallback: queue a follow-up
        await settle(pilot)
        await paste(pilot, BIG)
        assert app.editor.text == BIG_PLACEHOLDER
        await pilot.press("enter")  # while the agent works: a steer
        await settle(pilot)
    assert controller.called("submit") == [(BIG, True), (BIG, False)]


async def test_undo_after_deleting_a_paste_brings_it_back_and_it_is_sent_whole(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"see ")
        await paste(pilot, BIG)
        await pilot.press("backspace")
        assert app.editor.text == "see "
        await pilot.press("ctrl+underscore")
        assert app.editor.text == f"see {BIG_PLACEHOLDER}"
        await pilot.press("end", "enter")
        await settle(pilot)
    assert sent(controller) == [f"see {BIG}"]


async def test_undo_and_redo_never_leave_part_of_a_placeholder(app: PidurableApp) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"before ")
        await paste(pilot, LOG)
        await pilot.press(*" after", "left", "left", "left", "left", "left", "left")
        await pilot.press("backspace", *"between", "backspace", "backspace")
        seen = [app.editor.text]
        for key in ["ctrl+underscore"] * 6 + ["ctrl+y"] * 6:
            await pilot.press(key)
            seen.append(app.editor.text)
    assert "" in seen
    for text in seen:
        assert "[Pasted" not in text.replace("[Pasted text #1 +40 lines]", "")
        assert "lines]" not in text.replace("[Pasted text #1 +40 lines]", "")


async def test_a_copied_placeholder_copies_the_pasted_text_and_pastes_back_as_a_placeholder(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await paste(pilot, LOG)
        app.editor.select_all()
        await pilot.press("ctrl+x")
        assert app.editor.text == ""
        assert app.clipboard == LOG
        await pilot.press(*"again: ", "ctrl+v")
        # #2: undo could still bring #1 back, so the number is not reused.
        assert app.editor.text == "again: [Pasted text #2 +40 lines]"
        await pilot.press("enter")
        await settle(pilot)
    assert sent(controller) == [f"again: {LOG}"]


async def test_a_long_paste_of_escape_sequences_is_kept_and_sent_without_them(
    app: PidurableApp, controller: RecordingController
) -> None:
    hostile = "".join(f"row {n} {EVIL}\n" for n in range(1, 5001))
    async with app.run_test() as pilot:
        await paste(pilot, hostile)
        assert app.editor.text == BIG_PLACEHOLDER
        await pilot.press("ctrl+r")  # expanded in the editor: painted, so cleaned
        assert "\x1b" not in app.editor.text
        assert app.editor.document.line_count == 5001
        await pilot.press("enter")
        await settle(pilot)
    [message] = sent(controller)
    assert message == "".join(f"row {n} \n" for n in range(1, 5001))
