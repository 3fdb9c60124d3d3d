"""Ctrl+G: the draft goes to the user's own editor and comes back (Pi, Claude Code).

``edit_draft`` writes the editor's text, every pasted-text placeholder
expanded (``PromptEditor.message_text``), to a file only the user can read
(``0600`` in a private temporary directory, removed afterwards; a final
newline added, as text files end), suspends the screen (``App.suspend``: the
terminal as it was before pidurable started), runs ``$VISUAL``, else
``$EDITOR``, else ``vi`` (``app.editor_command``) on it and waits, then puts
the file's text back in place of the draft, one final newline stripped. An
editor that is not found, does not start or exits with a non-zero status
leaves the draft as it was, and one notice says what happened.

The text read back is untrusted like anything typed: it enters the document
through ``PromptEditor.replace_draft``, which makes it ``terminal_safe``, so an
escape sequence written in the file paints nothing.

The editor runs in pidurable's process group (Ctrl+Z stops both, ``fg`` brings
both back), and pidurable ignores Ctrl+C and Ctrl+Backslash until it exits
(``_keys_for_the_editor``): they are the editor's keys then.

While the editor runs, the event loop goes on (the agent keeps working, an
attached client keeps its feed) but the screen paints nothing: the editor owns
the terminal until it exits.
"""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from textual.app import SuspendNotSupported

from pi_durable_tui.app import NoticeLevel, terminal_safe

if TYPE_CHECKING:
    from pi_durable_tui.tui._editor import PromptEditor

_EDITOR_KEYS = (signal.SIGINT, signal.SIGQUIT)
"""The signals the terminal sends for Ctrl+C and Ctrl+Backslash: the editor's while it runs."""

DRAFT_NAME = "draft.md"
"""The edited file's name: ``.md`` lets an editor highlight the Markdown of a prompt."""


class DraftHost(Protocol):
    """What ``edit_draft`` needs from the app."""

    editor: PromptEditor

    def notice(self, level: NoticeLevel, text: str) -> int:
        """Show a one-line notice; returns its id."""
        ...

    def suspend(self) -> AbstractContextManager[None]:
        """Give the terminal back for the block (``App.suspend``)."""
        ...

    def batch_update(self) -> AbstractContextManager[None]:
        """Paint nothing until the block ends (``App.batch_update``)."""
        ...


async def edit_draft(host: DraftHost) -> None:
    """Edit the draft in the user's editor; see the module docstring.

    Args:
        host: The app.
    """
    editor = host.editor
    if editor.out_for_edit:
        return  # a second Ctrl+G of the same burst: one editor owns the terminal
    editor.out_for_edit = True
    try:
        await _edit(host, editor)
    finally:
        editor.out_for_edit = False


async def _edit(host: DraftHost, editor: PromptEditor) -> None:
    # REMINDER: imported here, not at the top: the screen's first paint imports no
    # layer below the app (tests/tui/test_opening.py), and this one reads ``env``.
    from pi_durable_tui.app import EditorUnavailable, editor_command

    try:
        command = editor_command()
    except EditorUnavailable as error:
        host.notice("warning", terminal_safe(str(error)))
        return
    label = terminal_safe(command.label)
    # REMINDER: no frame may be painted while the editor owns the terminal: the loop
    # keeps running (a streaming answer repaints), so the batch spans the suspension.
    with _draft_file(editor.message_text) as path, host.batch_update():
        try:
            with host.suspend():
                status = await _run(command.argv, command.environment, path)
        except SuspendNotSupported:
            host.notice("warning", "This screen cannot be suspended for an external editor.")
            return
        except OSError as error:
            host.notice("warning", f"{label} could not start: {error.strerror or error}")
            return
        if status != 0:
            host.notice("warning", f"{label} {_ended(status)}: the draft is unchanged.")
            return
        try:
            edited = path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            host.notice("warning", f"{label} left no file to read: the draft is unchanged.")
            return
        editor.replace_draft(edited_text(edited))


def edited_text(text: str) -> str:
    """The file's text as the draft: CR LF as LF, one final newline removed."""
    text = text.replace("\r\n", "\n")
    return text[:-1] if text.endswith("\n") else text


def _ended(status: int) -> str:
    if status < 0:
        try:
            return f"was ended by {signal.Signals(-status).name}"
        except ValueError:
            return f"was ended by signal {-status}"
    return f"exited with status {status}"


@contextmanager
def _draft_file(text: str) -> Iterator[Path]:
    """A file holding ``text`` in a private directory; both are gone when the block ends."""
    with tempfile.TemporaryDirectory(prefix="pidurable-draft-") as folder:  # mode 0700
        path = Path(folder) / DRAFT_NAME
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            # A text file ends with a newline (vi shows one without as [noeol]); the
            # newline read back is stripped, so an unchanged draft comes back the same.
            file.write(f"{text}\n" if text else "")
        yield path


async def _run(argv: tuple[str, ...], environment: dict[str, str], path: Path) -> int:
    """Run the editor on the real terminal (the process's own descriptors) and wait."""
    process = await asyncio.create_subprocess_exec(*argv, str(path), env=environment)
    with _keys_for_the_editor():
        return await process.wait()


@contextmanager
def _keys_for_the_editor() -> Iterator[None]:
    """Ignore Ctrl+C and Ctrl+Backslash here while the editor runs (as git does for its editor).

    The editor shares pidurable's process group, so Ctrl+Z stops both and ``fg``
    resumes both; but an editor that leaves the terminal in cooked mode (one
    that reads lines, ``code --wait``) lets Ctrl+C reach pidurable too, whose
    SIGINT ends the app. Ignored only after the editor started, so it still
    gets the default: Ctrl+C ends it, and the draft stays as it was.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may change handlers (never the case in the app)
        return
    # REMINDER: the handlers put back are asyncio's: its loop still routes the
    # signals it watches once they are restored.
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in _EDITOR_KEYS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
