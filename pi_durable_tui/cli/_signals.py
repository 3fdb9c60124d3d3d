"""Stop signals: Ctrl-C, SIGTERM and SIGHUP end the command in order, at any moment.

Every path closes the harness and the store, start-up included: one line on
stderr, never a traceback, and the exit status ``128 + signal`` (130, 143, 129).
SIGHUP (the terminal was closed, or a parent hung up its ``-p`` child) is a stop
like SIGTERM, not Python's default (an instant death with the store left open).
The session learns which signal stopped it (``SignalGuard.notify``) before its
work is cancelled: ``--mode json`` ends with a ``result`` naming it, and the
session's stop marker lets the next ``--continue`` say the work was stopped, not
cut by a crash.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that stop the command in order: Ctrl-C, ``kill``, a closed terminal."""
_WORDS: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGHUP: "hung up"}


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15: how JSON mode and the recovery report name a stop signal."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Interrupted(KeyboardInterrupt):
    """A stop signal (SIGINT, SIGTERM, SIGHUP) arrived before the event loop took the signals over.

    A ``KeyboardInterrupt``, so that asyncio lets it through wherever it lands.

    Args:
        signum: The signal.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class SignalGuard:
    """Turns Ctrl-C (SIGINT), SIGTERM and SIGHUP into one orderly stop, at any moment.

    - From ``install`` (the first thing ``main`` does) until the event loop runs,
      the first signal raises ``Interrupted``: nothing is open yet, so the command
      ends at once; inside ``deferred()`` (the heavy imports) it is raised when
      the block ends instead, since an exception in the middle of a compiled
      module's initialisation (pydantic-core) makes it panic with a traceback.
    - While the loop runs (``attach``), the first signal cancels the main task;
      opening and closing the session finish anyway (``AgentApp``), so the store
      is closed on every path. Once the work is over (``release``), a signal
      only is recorded: the close in progress must end.
    - After the loop (``detach``, ``ignore``), signals are recorded and ignored
      until the process exits.

    The stop prints one line, never a traceback, and the exit status is
    ``128 + signal`` (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP: a closed
    terminal, or a parent that hangs its ``-p`` child up). A signal before the
    interpreter runs ``main`` gets Python's default handling.
    """

    def __init__(self) -> None:
        self.received: int | None = None
        """The first stop signal received, if any."""
        self.cancelled = False
        """Whether that signal cancelled the work (rather than arriving while it closed)."""
        self._target: asyncio.Task[int] | None = None
        self._deferring = False
        self._previous: dict[int, Any] = {}
        self._listeners: list[Callable[[str], None]] = []

    def install(self) -> None:
        """Take the stop signals over before the event loop exists (main thread only).

        Raises:
            Interrupted: When a stop signal arrived while the handlers were installed.
        """
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may handle signals: leave them as they are
        # REMINDER: a signal may arrive between two of these calls; it is held
        # back until all are in place, so ``_previous`` is whole for ``restore``.
        with self.deferred():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._raise)

    def _raise(self, signum: int, _frame: object) -> None:
        if self.received is None:
            self.received = signum
            if not self._deferring:
                raise Interrupted(signum)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Hold back a stop signal's ``Interrupted`` until the block has run.

        Raises:
            Interrupted: After the block, when a stop signal arrived before or in it.
        """
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
        if self.received is not None:
            raise Interrupted(self.received)

    def attach(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[int]) -> None:
        """Route the signals through ``loop``: the first one cancels ``task``."""
        self._target = task
        for signum in self._previous:
            loop.add_signal_handler(signum, self._cancel, signum)

    def notify(self, listener: Callable[[str], None]) -> None:
        """Tell ``listener`` the signal's name (``SIGTERM``) when a stop signal cuts the work.

        Called before the work is cancelled, so whatever runs on the way out (JSON
        mode's last line, the session's stop marker) knows why; at once when a
        signal already cut the work.
        """
        self._listeners.append(listener)
        if self.cancelled and self.received is not None:
            listener(signal_name(self.received))

    def _cancel(self, signum: int) -> None:
        if self.received is None:
            self.received = signum
            if self._target is not None:
                self.cancelled = True
                for listener in self._listeners:
                    listener(signal_name(signum))
                self._target.cancel()

    async def guarded(
        self, work: Awaitable[int], close: Callable[[], Awaitable[object]]
    ) -> int | None:
        """Await ``work``, then ``close`` on every path; ``None`` when a stop signal cut it.

        Args:
            work: The command's work (its exit status).
            close: Closes what the work used; it runs to its end, signals or not.

        Raises:
            asyncio.CancelledError: The work was cancelled, not by a stop signal.
        """
        import asyncio

        status: int | None = None
        try:
            status = await work
        except asyncio.CancelledError:
            if not self.cancelled:
                raise
        finally:
            self.release()  # the close below must run to its end
            await close()
        # REMINDER: work may end quietly when its task is cancelled (a Textual app
        # does), so the guard, not the CancelledError, says whether a signal stopped it.
        return None if self.cancelled else status

    def release(self) -> None:
        """Cancel nothing any more (the work is over; closing must finish)."""
        self._target = None

    def detach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Take the signals back from ``loop`` before it closes (it would restore the defaults)."""
        for signum in self._previous:
            loop.remove_signal_handler(signum)
            signal.signal(signum, self._record)

    def ignore(self) -> None:
        """Record and ignore the signals until the process exits."""
        for signum in self._previous:
            signal.signal(signum, self._record)

    def restore(self) -> None:
        """Give back the handlers ``install`` replaced."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _record(self, signum: int, _frame: object) -> None:
        if self.received is None:
            self.received = signum

    @staticmethod
    def stopped(signum: int | None, hint: str | None) -> int:
        """Print the one line of a stop by ``signum`` and return the exit status.

        Args:
            signum: The signal that stopped the command.
            hint: The command that continues the session, when one was opened.
        """
        number = signum if signum is not None else signal.SIGINT
        word = _WORDS.get(number, "terminated")
        tail = f"; the session is saved: `{hint}` continues it" if hint else ""
        # REMINDER: after SIGHUP the terminal may be gone; the line is best effort,
        # the exit status is not.
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"pidurable: {word}{tail}\n")
            sys.stderr.flush()
        return 128 + number
