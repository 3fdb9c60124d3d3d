"""Leaving the app cleanly on every path, and the log file crashes go to.

``GuardedApp`` is the base of ``PidurableApp``: whatever ends the app (a key, a
command, an exception, a failure before the first screen), its ``close_hook``
runs exactly once, and an unhandled exception's traceback goes to the log file
the app was given (the session directory's, chosen by the CLI); after the
terminal is restored, one unwrapped line says where (issue 8, Exit). What goes
to the log and that line passes the session's redactor (``redact``, set by the
CLI once the session is open; until then the app's ``output_redactor``), so a
traceback quoting a key writes ``[redacted]`` (issue 13).
"""

from __future__ import annotations

import datetime
import sys
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.app import App, AutopilotCallbackType


def append_traceback(
    path: Path, error: BaseException, what: str, redact: Callable[[str], str]
) -> bool:
    """Append a timestamped traceback to ``path``.

    Args:
        path: The log file (created with its directory if missing).
        error: The exception.
        what: What was running (``crash``, ``submit``, ...).
        redact: Hides secret values in the text written.

    Returns:
        Whether the traceback was written (a log that cannot be written is no
        reason to fail twice).
    """
    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    text = redact("".join(traceback.format_exception(error)))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as log:
            log.write(f"--- {stamp} {what}\n{text}\n")
    except OSError:
        return False
    return True


class GuardedApp(App[None]):
    """An app that closes what it was given once, and logs its crash.

    Args:
        close_hook: Awaited once when the app ends, however it ends.
        log_path: Where tracebacks go; ``None`` keeps Textual's own crash output.
        ansi_color: Passed to ``App``.
    """

    def __init__(
        self,
        close_hook: Callable[[], Awaitable[None]],
        log_path: Path | None,
        *,
        ansi_color: bool | None = None,
    ) -> None:
        super().__init__(ansi_color=ansi_color)
        self.log_path = log_path
        self.redact: Callable[[str], str] | None = None
        """Hides secrets in what is logged; the session's redactor once it is open."""
        self._close_hook = close_hook
        self._closed_once = False
        self._crash_logged: str | None = None

    def log_traceback(self, error: BaseException, what: str) -> bool:
        """Append ``error``'s traceback to the log, redacted; whether it was written."""
        if self.log_path is None:
            return False
        return append_traceback(self.log_path, error, what, self.redacted)

    def redacted(self, text: str) -> str:
        """``text`` with every secret value ``[redacted]``."""
        if self.redact is None:
            from pi_durable_tui.app import output_redactor

            self.redact = output_redactor().text
        return self.redact(text)

    async def close_once(self) -> None:
        """Run the close hook unless it ran; a failure of it is logged, not raised."""
        if self._closed_once:
            return
        self._closed_once = True
        try:
            await self._close_hook()
        except Exception as error:
            self.log_traceback(error, "close")

    async def on_unmount(self) -> None:
        """The usual way out: close when the app unmounts."""
        await self.close_once()

    async def run_async(
        self,
        *,
        headless: bool = False,
        inline: bool = False,
        inline_no_clear: bool = False,
        mouse: bool = True,
        size: tuple[int, int] | None = None,
        auto_pilot: AutopilotCallbackType | None = None,
    ) -> None:
        """Run the app; the close hook runs even if the app never mounted."""
        try:
            return await super().run_async(
                headless=headless,
                inline=inline,
                inline_no_clear=inline_no_clear,
                mouse=mouse,
                size=size,
                auto_pilot=auto_pilot,
            )
        finally:
            await self.close_once()
            if self._crash_logged is not None:
                # Written after the terminal is restored, unwrapped, so the path can be copied.
                sys.stderr.write(
                    f"pidurable stopped on an error: {self.redacted(self._crash_logged)}\n"
                    f"The traceback is in {self.log_path}\n"
                )

    def _handle_exception(self, error: Exception) -> None:
        # Textual's hook for an unhandled exception: log it before Textual exits.
        if self.log_traceback(error, "crash"):
            self._crash_logged = f"{type(error).__name__}: {error}"
        super()._handle_exception(error)

    def _fatal_error(self) -> None:
        # Textual prints a full traceback after exit; with a log, run_async says where it is.
        if self._crash_logged is None:
            super()._fatal_error()
            return
        self.bell()
        self._close_messages_no_wait()
