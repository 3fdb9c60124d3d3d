"""Ctrl+G edits the draft in ``$VISUAL`` / ``$EDITOR`` and puts the saved text back.

The editors are small shell scripts written into ``tmp_path``; they run as real
processes. ``App.suspend`` is replaced by a recording stand-in: Textual's
headless driver cannot suspend (``SuspendNotSupported``), and the real
suspension is exercised in a real terminal by
``tests/e2e/test_tui_keys.py::test_ctrl_g_edits_the_draft_in_visual_and_the_edited_message_is_sent``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from textual.pilot import Pilot

from pi_durable_tui.app import editor_command
from pi_durable_tui.bench.hostile_escapes import EVIL
from pi_durable_tui.bench.tui_model import RecordingController
from pi_durable_tui.tui import PidurableApp
from tests.deadlines import WAIT
from tests.tui.test_paste import LOG, paste, sent

Script = Callable[[str], str]


@pytest.fixture
def script(tmp_path: Path) -> Script:
    """Write an executable ``sh`` script (its file is ``$1``); returns its path."""
    count = 0

    def write(body: str) -> str:
        nonlocal count
        count += 1
        path = tmp_path / f"editor{count}"
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o700)
        return str(path)

    return write


@pytest.fixture
def suspended(app: PidurableApp, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Stand in for ``App.suspend`` (headless cannot suspend); records whether painting was off.

    Each entry says whether a batch update held every paint back while suspended.
    """
    entries: list[bool] = []

    @contextmanager
    def suspend() -> Iterator[None]:
        entries.append(app._batch_count > 0)
        yield

    monkeypatch.setattr(app, "suspend", suspend)
    return entries


@pytest.fixture(autouse=True)
def no_editor_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)


def notices(app: PidurableApp) -> list[str]:
    return [notice.text for notice in app.notice_bar.shown_notices]


async def until(pilot: Pilot[None], done: Callable[[], bool], what: str) -> None:
    """Wait (``WAIT`` at most) until ``done`` holds: the editor is a real process."""
    deadline = time.monotonic() + WAIT
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"never happened: {what}")
        await pilot.pause(0.01)
    await pilot.pause()


def edit_over(app: PidurableApp) -> bool:
    return all(worker.is_finished for worker in app.workers)


async def test_ctrl_g_puts_what_visual_saved_in_place_of_the_draft_and_enter_sends_it(
    app: PidurableApp,
    controller: RecordingController,
    suspended: list[bool],
    script: Script,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VISUAL", script('printf "and a second line\\n" >> "$1"'))
    monkeypatch.setenv("EDITOR", script("exit 1"))  # VISUAL wins
    async with app.run_test() as pilot:
        await pilot.press(*"first line", "ctrl+g")
        await until(pilot, lambda: app.editor.text != "first line", "the edited draft")
        assert app.editor.text == "first line\nand a second line"  # the final newline went
        assert app.editor.cursor_location == (1, len("and a second line"))
        assert suspended == [True]
        assert notices(app) == []
        await pilot.press("enter")
        await until(pilot, lambda: bool(sent(controller)), "the send")
    assert sent(controller) == ["first line\nand a second line"]


async def test_the_editor_gets_the_pasted_texts_in_full_in_a_private_file_removed_afterwards(
    app: PidurableApp,
    suspended: list[bool],
    script: Script,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = tmp_path / "seen"
    monkeypatch.setenv(
        "EDITOR",
        script(
            f'cp "$1" {seen}/text; stat -c %a "$1" > {seen}/file_mode; '
            f'stat -c %a "$(dirname "$1")" > {seen}/dir_mode; echo "$1" > {seen}/path'
        ),
    )
    seen.mkdir()
    async with app.run_test() as pilot:
        await pilot.press(*"explain ")
        await paste(pilot, LOG)
        assert app.editor.text == "explain [Pasted text #1 +40 lines]"
        await pilot.press("ctrl+g")
        await until(pilot, lambda: edit_over(app) and bool(suspended), "the edit")
        assert (seen / "text").read_text() == f"explain {LOG}\n"
        # Shown whole now: the user just read it, and nothing is left to expand.
        assert app.editor.text == f"explain {LOG}"
    assert (seen / "file_mode").read_text().strip() == "600"
    assert (seen / "dir_mode").read_text().strip() == "700"
    edited = Path((seen / "path").read_text().strip())
    assert not edited.exists()
    assert not edited.parent.exists()


async def test_an_editor_that_exits_non_zero_leaves_the_draft_and_says_so(
    app: PidurableApp, suspended: list[bool], script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = script('echo replaced > "$1"; exit 1')
    monkeypatch.setenv("VISUAL", failing)
    async with app.run_test() as pilot:
        await pilot.press(*"my draft", "ctrl+g")
        await until(pilot, lambda: bool(notices(app)), "the notice")
        assert app.editor.text == "my draft"
        assert notices(app) == [
            f"$VISUAL ({failing}) exited with status 1: the draft is unchanged."
        ]
        assert suspended == [True]


async def test_an_editor_that_is_not_found_is_named_and_nothing_is_suspended(
    app: PidurableApp, suspended: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", "nano-that-is-not-installed --wait")
    async with app.run_test() as pilot:
        await pilot.press(*"my draft", "ctrl+g")
        await until(pilot, lambda: bool(notices(app)), "the notice")
        assert notices(app) == [
            "$EDITOR (nano-that-is-not-installed --wait) not found: set VISUAL or EDITOR"
        ]
        assert app.editor.text == "my draft"
    assert suspended == []


async def test_text_back_from_the_editor_writes_no_control_sequence(
    app: PidurableApp,
    suspended: list[bool],
    script: Script,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hostile = tmp_path / "hostile.txt"
    hostile.write_text(f"safe words {EVIL} end")
    monkeypatch.setenv("VISUAL", script(f'cp {hostile} "$1"'))
    async with app.run_test() as pilot:
        await pilot.press("ctrl+g")
        await until(pilot, lambda: "end" in app.editor.text, "the edited draft")
        assert app.editor.text.startswith("safe words ")
        assert "\x1b" not in app.editor.text
        assert "\x07" not in app.editor.text


def test_visual_else_editor_else_vi_and_the_editor_sees_no_secrets(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("vi", "nano", "code"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o700)
    base = {"PATH": str(bin_dir), "HOME": "/home/u", "OPENAI_API_KEY": "sk-secret"}
    default = editor_command(base)
    assert default.argv == (str(bin_dir / "vi"),)
    assert default.label == "vi"
    assert default.environment == {"PATH": str(bin_dir), "HOME": "/home/u"}
    editor = editor_command({**base, "EDITOR": "nano", "VISUAL": " "})
    assert (editor.argv, editor.label) == ((str(bin_dir / "nano"),), "$EDITOR (nano)")
    visual = editor_command({**base, "EDITOR": "nano", "VISUAL": "code --wait"})
    assert visual.argv == (str(bin_dir / "code"), "--wait")
    assert visual.label == "$VISUAL (code --wait)"


async def test_two_ctrl_g_in_one_burst_open_one_editor(
    app: PidurableApp, suspended: list[bool], script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VISUAL", script('sleep 0.2; printf "more\\n" >> "$1"'))
    async with app.run_test() as pilot:
        await pilot.press(*"draft", "ctrl+g", "ctrl+g")
        await until(pilot, lambda: app.editor.text != "draft" and edit_over(app), "the edit")
        assert app.editor.text == "draft\nmore"
    assert suspended == [True]
