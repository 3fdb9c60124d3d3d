"""The screen renders no escape sequence, channel by channel (issue 13, DESIGN.md section 7).

Each test puts OSC 52 (clipboard), OSC 0 (title) and CSI 2J (clear) into one
channel the model, a tool, a file or a path feeds (the answer, thinking, a
``write`` path and preview, a ``bash`` command and its output, an ``edit``
diff, a tool error, a notice, the status line, a paste and a completed path in
the editor) and paints the real app. Every
painted line is searched for ESC, BEL and C1 characters: none. The values are
forced raw past the view model's own cleaning (``raw``), so what is tested is
the TUI's funnel (``tui/_terminal_text``): a widget cannot forget it.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual import events
from textual.geometry import Region
from textual.widget import Widget

from pi_durable_tui.app import Block, Notice, ThinkingPart, ToolCard
from pi_durable_tui.bench.hostile_escapes import EVIL, TITLE
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
from pi_durable_tui.tui import PidurableApp


def raw(value: Any, **fields: Any) -> Any:
    """``value`` with ``fields`` set as given, past the view model's cleaning."""
    for name, field_value in fields.items():
        object.__setattr__(value, name, field_value)
    return value


def card(name: str, status: str = "done", **fields: Any) -> Block:
    tool = raw(ToolCard(f"c-{name}", name, status), **fields)  # type: ignore[arg-type]
    return Block(f"e1/c-{name}", "tool", 1, tool=tool)


CHANNELS: dict[str, Block] = {
    "answer": raw(Block("e1", "assistant", 1), text=f"The answer {EVIL} ends here."),
    "thinking": raw(
        Block("e1", "assistant", 1, text="ok"),
        thinking=(raw(ThinkingPart("x"), text=f"thought {EVIL} over"),),
    ),
    "write path and preview": card(
        "write", path=f"notes{EVIL}.md", preview=f"line one {EVIL}\nline two", size_bytes=20
    ),
    "bash command and output": card(
        "bash", command=f"echo {EVIL}", output=f"printed {EVIL}\n", exit_code=0
    ),
    "edit diff": card("edit", path="a.py", diff=f"@@ -1 +1 @@\n-old\n+new {EVIL}"),
    "tool error": card("bash", "error", command="false", error=f"failed {EVIL}"),
    "user prompt": raw(Block("e0", "user", 0), text=f"please {EVIL}"),
    "error block": raw(Block("e2", "error", 2), text=f"provider said {EVIL}", detail=EVIL),
}


def painted(app: PidurableApp) -> str:
    """Every line every displayed widget paints, as the terminal would get its text."""
    lines: list[str] = []
    for widget in app.screen.walk_children(Widget, with_self=True):
        if widget.display and widget.size.area:
            region = Region(0, 0, widget.size.width, widget.size.height)
            lines.extend(strip.text for strip in widget.render_lines(region))
    return "\n".join(lines)


def assert_inert(text: str) -> None:
    for control in ("\x1b", "\x07", "\x9b", "\x9d", "\x9c"):
        assert control not in text, f"{control!r} painted"
    assert TITLE not in text


@pytest.mark.parametrize("channel", sorted(CHANNELS))
async def test_a_channel_holding_osc_52_osc_0_and_csi_2j_paints_none_of_them(channel: str) -> None:
    model = StaticScreenModel([CHANNELS[channel]])
    app = PidurableApp(model, RecordingController(model))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+o")  # expanded: previews, output and thinking in full
        await pilot.pause()
        text = painted(app)

    assert_inert(text)
    assert text.strip()


async def test_notices_and_the_status_line_paint_no_sequence() -> None:
    model = StaticScreenModel([Block("e1", "assistant", 1, text="ok")])
    app = PidurableApp(model, RecordingController(model))
    async with app.run_test(size=(120, 40)) as pilot:
        app.notice("error", f"a tool failed {EVIL}")
        app.status_line.show(f"Retrying in 3s (attempt 2): {EVIL}")
        await pilot.pause()
        text = painted(app)

    assert_inert(text)
    assert "a tool failed" in text
    assert "Retrying in 3s" in text


def test_a_notice_built_normally_is_already_clean() -> None:
    assert Notice("error", f"x{EVIL}y").text == "xy"


async def test_a_paste_and_a_completed_path_enter_the_editor_without_sequences() -> None:
    model = StaticScreenModel([])
    controller = RecordingController(model)
    controller.paths = [f"notes{EVIL}.md"]
    app = PidurableApp(model, controller)
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(events.Paste(f"pasted {EVIL} text "))  # as the terminal sends it
        await pilot.pause()
        await pilot.press("@", "n")
        await pilot.pause()
        menu = painted(app)
        await pilot.press("tab")
        await pilot.pause()
        text = painted(app)

    assert_inert(menu)
    assert_inert(text)
    assert app.editor.text == "pasted  text @notes.md "
