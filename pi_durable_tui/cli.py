"""The ``pidurable`` command: argument parsing and the choice of front end (layer 7).

- ``pidurable`` opens the terminal app on a new session for the working
  directory; ``-c/--continue`` opens the newest one and resumes what a killed
  process left; ``-r/--resume`` picks one in a picker on the screen (a numbered
  list on the terminal with ``-p``); ``--session PATH`` opens a given store.
- ``-p/--print [PROMPT]`` runs headless and prints the final answer (with no
  prompt, it finishes the newest input of the session);
  ``--mode json`` prints agent events as JSON lines instead.
- ``pidurable export --format jsonl|markdown|html`` writes a transcript.
- ``--env ssh://user@host[:port]/path`` (or ``"env"`` in the user's settings)
  runs the tools on that host; its sessions are filed under the URL, so ``-c``
  and ``-r`` with the same ``--env`` find them from any local directory.

Every path closes the harness and the store: errors, Ctrl-C and SIGTERM
included, at any moment, start-up too (``SignalGuard``: one line, never a
traceback, exit status 130 or 143). Problems the user can fix (a malformed
settings file, a locked or damaged store, no session to continue, a malformed
faux script, an unknown model, a bad ``--env`` URL, an SSH host that refuses or
is not trusted) print one line on stderr and exit with status 2;
a run whose prompt was left unanswered exits with status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pi_durable_tui import __version__, stack_dump

if TYPE_CHECKING:
    import asyncio

    from pi_durable_tui.app import AppOptions

EXIT_USAGE = 2
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived before the event loop took the signals over.

    A ``KeyboardInterrupt``, so that asyncio lets it through wherever it lands.

    Args:
        signum: The signal.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class SignalGuard:
    """Turns Ctrl-C (SIGINT) and SIGTERM into one orderly stop, at any moment.

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
    ``128 + signal`` (130 for Ctrl-C, 143 for SIGTERM). A signal before the
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

    def install(self) -> None:
        """Take SIGINT and SIGTERM over before the event loop exists (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may handle signals: leave them as they are
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

    def _cancel(self, signum: int) -> None:
        if self.received is None:
            self.received = signum
            if self._target is not None:
                self.cancelled = True
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
        word = "interrupted" if number == signal.SIGINT else "terminated"
        tail = f"; the session is saved: `{hint}` continues it" if hint else ""
        sys.stderr.write(f"pidurable: {word}{tail}\n")
        return 128 + number


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of ``pidurable``."""
    parser = argparse.ArgumentParser(
        prog="pidurable",
        description=(
            "A terminal coding agent on a durable core: every step is committed to a "
            "SQLite store before it is shown, so a killed session resumes where it stopped."
        ),
    )
    parser.add_argument("--version", action="version", version=f"pidurable {__version__}")
    sessions = parser.add_mutually_exclusive_group()
    sessions.add_argument(
        "-c",
        "--continue",
        dest="continue_session",
        action="store_true",
        help="open the newest session of this directory and resume its work",
    )
    sessions.add_argument(
        "-r", "--resume", action="store_true", help="pick a session of this directory to open"
    )
    sessions.add_argument(
        "--session",
        metavar="ID",
        help="open the session store at this path (with a database: the session ID in it)",
    )
    parser.add_argument(
        "-p",
        "--print",
        dest="prompt",
        nargs="?",
        const="",
        default=None,
        metavar="PROMPT",
        help="run headless: send PROMPT (or, with -c, resume) and print the final answer",
    )
    parser.add_argument(
        "--mode",
        choices=("text", "json"),
        default="text",
        help="with -p: print the answer (text) or agent events as JSON lines (json)",
    )
    parser.add_argument(
        "--model",
        metavar="PROVIDER/ID[:THINKING]",
        help="the model, e.g. anthropic/claude-sonnet-4-5:high, openai/gpt-5, faux/faux-1",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="an OpenAI-compatible server (llama.cpp, Ollama, vLLM, LM Studio) for --model",
    )
    parser.add_argument("--faux-script", metavar="FILE", help="serve provider faux from a script")
    parser.add_argument(
        "--env",
        metavar="URL",
        help="run the tools on another host: ssh://user@host[:port]/path ('local': here)",
    )
    parser.add_argument("--request-id", metavar="ID", help="with -p: make the prompt idempotent")
    parser.add_argument("--list-models", action="store_true", help="list the known models")
    parser.add_argument(
        "--demo",
        nargs="?",
        const="coding",
        choices=("coding", "planner"),
        help="run an offline scripted demo (coding, or planner)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pidurable`` command; returns the exit status.

    Args:
        argv: The arguments; ``None`` reads ``sys.argv`` and marks the call as the
            process's command: stop signals stay ignored after it returns, until
            the process exits. Called with arguments (from Python), it gives the
            previous signal handlers back when it returns.
    """
    signals = SignalGuard()
    signals.install()
    stack_dump.install()
    try:
        return _main(argv, signals)
    except Interrupted:
        return signals.stopped(signals.received, None)
    finally:
        if argv is None:
            signals.ignore()
        else:
            signals.restore()


def _main(argv: Sequence[str] | None, signals: SignalGuard) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["export"]:
        with signals.deferred():
            _import_session_layers()
        from pi_durable_tui.app import export_main

        return export_main(arguments[1:])
    args = build_parser().parse_args(arguments)
    try:
        _locate(args)
    except ValueError as error:  # a bad --env URL or env setting, a malformed settings file
        from pi_durable_tui.app import describe_startup_error

        return _startup_failed(error, describe_startup_error(error))
    if args.prompt is not None or args.list_models:
        # The heavy imports happen here, before the event loop starts: a signal in
        # their middle ends the command right after them (``Interrupted``), with
        # nothing open. The terminal app imports them after its first paint instead.
        with signals.deferred():
            _import_session_layers()
    if args.list_models:
        from pi_durable_tui.app import describe_startup_error, list_models_text

        try:
            sys.stdout.write(list_models_text(os.getcwd(), args.faux_script))
        except Exception as error:
            return _startup_failed(error, describe_startup_error(error))
        return 0
    session = args.session
    if args.resume:
        from pi_durable_tui.app import (
            NoSession,
            SessionUnavailable,
            describe_startup_error,
            newest_session,
        )

        try:
            newest_session(args.sessions_key)  # nothing to pick needs no picker
        except (NoSession, SessionUnavailable) as error:
            return _startup_failed(error, describe_startup_error(error))
        if args.prompt is not None:  # the terminal app picks on its screen
            session = _pick_session(args.sessions_key)
            if session is None:
                return EXIT_USAGE
    import asyncio

    try:
        return asyncio.run(_run(args, session, signals))
    except asyncio.CancelledError:  # a stop that reached the loop's edge
        return signals.stopped(signals.received, None)


def _locate(args: argparse.Namespace) -> None:
    """Set ``args.sessions_key`` and ``args.where`` from ``--env`` or the user's setting.

    ``sessions_key`` is what this directory's sessions are filed under (it, or the
    URL); ``where`` is the working directory as the footer shows it.

    Raises:
        LocationError: A bad URL; SettingsError: a malformed user settings file.
    """
    from pi_durable_tui.app import resolve_location

    location = resolve_location(os.getcwd(), args.env)
    args.sessions_key = location.key
    target = location.target
    args.where = os.getcwd() if target is None else location.show(target.path)


def _startup_failed(error: Exception, message: str | None) -> int:
    if message is None:
        raise error
    from pi_durable_tui.app import output_redactor

    sys.stderr.write(f"pidurable: {output_redactor().text(message)}\n")
    return EXIT_USAGE


def _import_session_layers() -> None:
    """Import what opening a session needs: the app's session code and every layer below."""
    import pi_durable_tui.app

    pi_durable_tui.app.AgentApp  # noqa: B018 -- resolving the lazy name imports the layers


def _app_options(args: argparse.Namespace, session: str | None) -> AppOptions:
    from pi_durable_tui.app import AppOptions

    return AppOptions(
        cwd=os.getcwd(),
        session=session,
        continue_session=args.continue_session,
        model=args.model,
        base_url=args.base_url,
        faux_script=args.faux_script,
        demo=args.demo,
        env=args.env,
    )


async def _run(args: argparse.Namespace, session: str | None, signals: SignalGuard) -> int:
    import asyncio

    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    signals.attach(loop, task)
    try:
        if args.prompt is None:
            return await _run_screen(args, session, signals)
        return await _run_headless(args, session, signals)
    finally:
        signals.detach(loop)


async def _run_headless(args: argparse.Namespace, session: str | None, signals: SignalGuard) -> int:
    import asyncio

    from pi_durable_tui.app import AgentApp, describe_startup_error, run_headless

    try:
        app = await AgentApp.open(_app_options(args, session))
    except asyncio.CancelledError:
        return signals.stopped(signals.received, None)
    except Exception as error:
        return _startup_failed(error, describe_startup_error(error))
    work = run_headless(
        app,
        args.prompt or None,
        sys.stdout,
        sys.stderr,
        mode=args.mode,
        request_id=args.request_id,
    )
    status = await signals.guarded(work, app.close)
    if status is None:
        return signals.stopped(signals.received, _continue_hint(args))
    return status


async def _run_screen(args: argparse.Namespace, session: str | None, signals: SignalGuard) -> int:
    """Run the terminal app: paint first, then open the session behind the screen.

    The screen starts on an ``OpeningSession`` (issue 8: first paint at most twice
    a bare Textual app's); once it has painted, the session layers are imported on
    a thread (keys still echo) and the session opens. A problem the user can fix
    (a locked store, no session to continue...) leaves the screen and prints one
    line, as before a screen existed.
    """
    import asyncio

    from pi_durable_tui.app import (
        Controller,
        OpeningSession,
        ScreenModel,
        SessionInfo,
        settings_theme,
    )
    from pi_durable_tui.tui import DEFAULT_THEME, PidurableApp

    cwd = os.getcwd()
    reopened = bool(args.continue_session or args.resume or session)
    if args.continue_session and session is None:
        # Found before the first paint: "nothing to continue" needs no screen.
        from pi_durable_tui.app import NoSession, SessionUnavailable, newest_session

        try:
            session = str(newest_session(args.sessions_key))
        except (NoSession, SessionUnavailable) as error:
            from pi_durable_tui.app import describe_startup_error

            return _startup_failed(error, describe_startup_error(error))
    stored: list[SessionInfo] = []
    if args.resume:
        from pi_durable_tui.app import SessionUnavailable, session_infos

        try:
            stored = session_infos(args.sessions_key)
        except SessionUnavailable as error:
            from pi_durable_tui.app import describe_startup_error

            return _startup_failed(error, describe_startup_error(error))
    failures: list[BaseException] = []

    async def open_session() -> tuple[ScreenModel, Controller]:
        await asyncio.to_thread(_import_session_layers)
        from pi_durable_tui.app import AgentApp, start_screen

        app = await AgentApp.open(_app_options(args, session))
        screen.log_path = app.store.parent / "pidurable.log"
        screen.redact = app.harness.redactor.text
        return await start_screen(app, reopened=reopened)

    def failed(error: BaseException) -> None:
        failures.append(error)
        screen.exit(return_code=EXIT_USAGE)

    async def pick_then_open() -> None:
        nonlocal session
        session = await screen.pick_session(stored)
        if session is None:
            screen.exit()  # the picker was closed: nothing to open
        else:
            opening.start()

    def painted() -> None:
        if stored:
            screen.run_worker(pick_then_open(), exit_on_error=False)
        else:
            opening.start()

    waiting = "Pick a session to open (esc: leave)" if stored else None
    opening = OpeningSession(args.where, open_session, failed, waiting=waiting)
    screen = PidurableApp(
        opening,
        opening,
        theme=settings_theme(cwd) or DEFAULT_THEME,
        on_painted=painted,
    )

    async def run() -> int:
        await screen.run_async()
        return int(screen.return_code or 0)

    status = await signals.guarded(run(), opening.close)
    if status is None:
        return signals.stopped(signals.received, _continue_hint(args) if opening.opened else None)
    if failures:
        from pi_durable_tui.app import describe_startup_error

        failure = failures[0]
        if not isinstance(failure, Exception):
            raise failure
        return _startup_failed(failure, describe_startup_error(failure))
    return status


def _continue_hint(args: argparse.Namespace) -> str:
    command = f"pidurable --session {args.session}" if args.session else "pidurable -c"
    if args.env is not None:
        command += f" --env {args.env}"
    return command + (" -p" if args.prompt is not None else "")


def _pick_session(key: str) -> str | None:
    """``-r/--resume``: list this directory's sessions and read a choice from the terminal."""
    import datetime

    from pi_durable_tui.app import list_sessions

    sessions = list_sessions(key)
    for number, stored in enumerate(sessions[:20], 1):
        when = datetime.datetime.fromtimestamp(stored.last_activity_ms / 1000)
        size = f"{stored.size_bytes / 1024:.0f} KiB"
        title = stored.title or "(no message yet)"
        sys.stdout.write(f"{number:>3}  {when:%Y-%m-%d %H:%M}  {size:>9}  {title[:70]}\n")
    try:
        answer = input(f"Open which session? [1-{min(len(sessions), 20)}, Enter for 1] ").strip()
    except EOFError:
        return None
    index = int(answer) - 1 if answer.isdigit() else 0
    if not 0 <= index < min(len(sessions), 20):
        sys.stderr.write(f"pidurable: no session numbered {answer}\n")
        return None
    return str(sessions[index].path)
