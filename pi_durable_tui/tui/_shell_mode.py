"""The editor's shell mode: a line starting with ``!`` runs as the user's shell command.

``!cmd`` runs ``cmd`` in the shown conversation's working directory and puts the
command and its output into the conversation for the model's next request,
without starting a turn; ``!!cmd`` runs it and only shows it (as Pi does). The
controller runs and commits it (``Controller.run_shell``); the screen shows the
card only from committed state, its output sanitised like tool output. While the
agent works the controller refuses it (Esc first, or wait); an attached screen
refuses it (the command would run on the host's machine). Esc stops it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from textual.worker import Worker

from pi_durable_tui.tui._commands import RefusalHost, refused

T = TypeVar("T")


def parse_shell_line(text: str) -> tuple[str, bool] | None:
    """``(command, into the model's context)`` for a line in shell mode, else ``None``.

    ``!cmd`` goes into the context, ``!!cmd`` is only shown; a bare ``!`` or ``!!``
    is no command (``None``: it is sent as a message).
    """
    stripped = text.strip()
    if not stripped.startswith("!"):
        return None
    context = not stripped.startswith("!!")
    command = stripped[1 if context else 2 :].strip()
    return (command, context) if command else None


class ShellHost(RefusalHost, Protocol):
    """What ``start_shell_line`` needs of the app."""

    def set_editor_text(self, text: str) -> None:
        """Put text back into the editor (before what is typed there)."""
        ...

    def call(
        self,
        what: str,
        action: Callable[[], Awaitable[T]],
        then: Callable[[T], None] | None = None,
        *,
        on_error: Callable[[], None] | None = None,
    ) -> Worker[None]:
        """Run a controller action in a worker; a failure becomes an error notice."""
        ...


def start_shell_line(host: ShellHost, text: str) -> bool:
    """Start the shell command a submitted line holds; whether it held one.

    A refused one (an attached screen; the controller's refusal while the agent
    works) is a notice, and the line goes back into the editor.
    """
    parsed = parse_shell_line(text)
    if parsed is None:
        return False
    command, context = parsed
    if refused(host, "shell"):
        host.set_editor_text(text)
        return True
    host.call(
        "!" if context else "!!",
        lambda: host.controller.run_shell(command, context=context),
        on_error=lambda: host.set_editor_text(text),
    )
    return True
