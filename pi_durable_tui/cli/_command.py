"""``main``: the choice of front end, and closing everything on every path (layer 7).

- ``pidurable [PROMPT]`` opens the terminal app on a new session for the working
  directory (sending PROMPT as its first message); ``-c/--continue`` opens the
  newest one and resumes what a killed process left; ``-r/--resume`` picks one in
  a picker on the screen (a numbered list on the terminal with ``-p``);
  ``--session PATH`` opens a given store.
- ``-p/--print`` runs headless and prints the final answer (with no prompt and
  nothing piped, it finishes the newest input of the session); ``--mode json``
  prints the wire's messages (``app._wire``) as JSON lines instead.
- ``pidurable SUBCOMMAND`` (``_arguments.SUBCOMMANDS``: ``export``) runs it.
- ``--env ssh://user@host[:port]/path`` (or ``"env"`` in the user's settings)
  runs the tools on that host; its sessions are filed under the URL, so ``-c``
  and ``-r`` with the same ``--env`` find them from any local directory.

Every path closes the harness and the store: errors, Ctrl-C, SIGTERM and SIGHUP
included, at any moment, start-up too (``SignalGuard``: one line, never a
traceback, exit status 130, 143 or 129). Problems the user can fix (a malformed
settings file, a locked or damaged store, no session to continue, a malformed
faux script, an unknown model, a bad ``--env`` URL, an SSH host that refuses or
is not trusted, too much piped input, the terminal app started with standard
input or output that is not a terminal) print one line on stderr and exit with
status 2; a run whose prompt was left unanswered exits with status 1. Output to
a pipe closed early (``| head``) ends the command quietly with status 141.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from pi_durable_tui import stack_dump
from pi_durable_tui.cli._arguments import (
    SUBCOMMANDS,
    UsageError,
    headless_prompt,
    parse_arguments,
    piped_input,
    subcommand_of,
)
from pi_durable_tui.cli._signals import Interrupted, SignalGuard

if TYPE_CHECKING:
    from pi_durable_tui.app import AppOptions, Lingering

EXIT_USAGE = 2
"""A problem to fix first (bad input): one line on stderr, nothing started."""
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports for ``cat`` writing into ``| head``."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pidurable`` command; returns the exit status.

    Args:
        argv: The arguments; ``None`` reads ``sys.argv`` and marks the call as the
            process's command: stop signals stay ignored after it returns, until
            the process exits. Called with arguments (from Python), it gives the
            previous signal handlers back when it returns.
    """
    signals = SignalGuard()
    try:
        signals.install()
        stack_dump.install()
        return _main(argv, signals)
    except Interrupted:
        return signals.stopped(signals.received, None)
    except BrokenPipeError:
        # The reader left (``| head``): what it did not read is of no use, and
        # Python's final flush must not print a second BrokenPipeError at exit.
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    finally:
        if argv is None:
            signals.ignore()
        else:
            signals.restore()


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor (replaced in-process)
        pass


def _main(argv: Sequence[str] | None, signals: SignalGuard) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    name = subcommand_of(arguments)
    if name is not None:
        with signals.deferred():
            _import_session_layers()
        return SUBCOMMANDS[name].run(arguments[1:])
    args = parse_arguments(arguments)
    if args.print_mode and not args.resume:  # with -r, the terminal answers the picker
        try:
            piped = piped_input(getattr(sys.stdin, "buffer", None))
        except UsageError as error:
            return _startup_failed(error, str(error))
        args.prompt = headless_prompt(args.prompt, piped)
    try:
        _locate(args)
    except ValueError as error:  # a bad --env URL or env setting, a malformed settings file
        from pi_durable_tui.app import describe_startup_error

        return _startup_failed(error, describe_startup_error(error))
    if args.print_mode or args.list_models:
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
        if args.print_mode:  # the terminal app picks on its screen
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
    from pi_durable_tui.app import output_redactor, terminal_safe

    # The message may quote a settings file the model wrote: no key, no sequence.
    sys.stderr.write(f"pidurable: {terminal_safe(output_redactor().text(message))}\n")
    return EXIT_USAGE


def _import_session_layers() -> None:
    """Import what opening a session needs: the app's session code and every layer below."""
    import pi_durable_tui.app

    pi_durable_tui.app.AgentApp  # noqa: B018 -- resolving the lazy name imports the layers


def _app_options(args: argparse.Namespace, session: str | None) -> AppOptions:
    from pi_durable_tui.app import AppOptions, PermissionChoices

    permissions = PermissionChoices(
        mode=args.permission_mode,
        allow=tuple(args.allow),
        deny=tuple(args.deny),
        interactive=args.prompt is None,
    )
    return AppOptions(
        cwd=os.getcwd(),
        session=session,
        continue_session=args.continue_session,
        model=args.model,
        base_url=args.base_url,
        faux_script=args.faux_script,
        demo=args.demo,
        env=args.env,
        permissions=permissions,
    )


async def _run(args: argparse.Namespace, session: str | None, signals: SignalGuard) -> int:
    import asyncio

    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    signals.attach(loop, task)
    try:
        if not args.print_mode:
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
    app.leave_jobs_running = bool(args.leave_jobs_running)
    signals.notify(app.stop_by)  # JSON mode's last line and the stop marker name the signal
    work = run_headless(
        app,
        args.prompt,
        sys.stdout,
        sys.stderr,
        mode=args.mode,
        request_id=args.request_id,
    )
    try:
        status = await signals.guarded(work, app.close)
    except Exception as error:  # a commit failed: a full disk, another client's lock...
        from pi_durable_tui.app import describe_run_failure

        line = describe_run_failure(error, app.store, app.session_id, _continue_hint(args))
        return _startup_failed(error, line)
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
    missing = _not_a_terminal()
    if missing is not None:
        # Textual on a file or a pipe paints escape sequences into it and waits for
        # keys that never come: refuse before anything starts.
        sys.stderr.write(f"pidurable: {NEEDS_TERMINAL.format(stream=missing)}\n")
        return EXIT_USAGE
    failures: list[BaseException] = []

    async def open_session() -> tuple[ScreenModel, Controller]:
        await asyncio.to_thread(_import_session_layers)
        from pi_durable_tui.app import (
            AgentApp,
            SessionUnavailable,
            attach_if_hosted,
            start_hosted_screen,
        )

        try:
            app = await AgentApp.open(_app_options(args, session))
        except SessionUnavailable as error:
            # Open in another pidurable that serves it (issue 15): attach to that host.
            attached = await attach_if_hosted(error)
            if attached is None:
                raise
            screen.log_path = error.store.parent / "pidurable.log"
            return attached
        screen.log_path = app.store.parent / "pidurable.log"
        screen.redact = app.harness.redactor.text
        app.leave_jobs_running = bool(args.leave_jobs_running)
        signals.notify(app.stop_by)  # the stop marker says which signal stopped the work
        return await start_hosted_screen(
            app, reopened=reopened, prompt=args.prompt, linger=lingering
        )

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
    opening = OpeningSession(
        args.where,
        open_session,
        failed,
        waiting=waiting,
        on_open=lambda model, controller: screen.hand_over(model, controller),
    )
    screen = PidurableApp(
        opening,
        opening,
        theme=settings_theme(cwd) or DEFAULT_THEME,
        on_painted=painted,
    )

    lingering: list[Lingering] = []
    """Sessions left open for terminals still attached when this screen quit (issue 15)."""

    async def run() -> int:
        with _stderr_on_the_terminal():
            await screen.run_async()
        for served in lingering:
            print(f"pidurable: {served.message()}", file=sys.stderr, flush=True)
            await served.wait()
        return int(screen.return_code or 0)

    async def close() -> None:
        await opening.close()
        for served in lingering:
            await served.close()

    status = await signals.guarded(run(), close)
    if status is None:
        return signals.stopped(signals.received, _continue_hint(args) if opening.opened else None)
    if failures:
        from pi_durable_tui.app import describe_startup_error

        failure = failures[0]
        if not isinstance(failure, Exception):
            raise failure
        return _startup_failed(failure, describe_startup_error(failure))
    return status


NEEDS_TERMINAL = (
    "the interactive app needs a terminal, and standard {stream} is not one: "
    'use `pidurable -p "prompt"` (or `-p --mode json`) to run without one'
)
"""The one line (after ``pidurable: ``) for the terminal app started off a terminal."""


def _not_a_terminal() -> str | None:
    """Which of standard input and output is not a terminal (``None``: both are).

    A stream without a file descriptor (closed, or replaced in-process) is no terminal.
    """
    for name, stream in (("input", sys.stdin), ("output", sys.stdout)):
        try:
            if stream is None or not os.isatty(stream.fileno()):
                return name
        except (OSError, ValueError, AttributeError):
            return name
    return None


@contextlib.contextmanager
def _stderr_on_the_terminal() -> Iterator[None]:
    """While the screen runs, let standard error be the terminal standard output is.

    Textual draws on standard error: with ``pidurable 2>err.log`` it painted the
    screen into the file, and the terminal showed nothing. What pidurable itself
    prints after the screen ends (a stop hint, a startup error) goes to the file
    again; its log is ``pidurable.log`` beside the store either way.
    """
    if _is_terminal(2) or not _is_terminal(1):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(1, 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _continue_hint(args: argparse.Namespace) -> str:
    command = f"pidurable --session {args.session}" if args.session else "pidurable -c"
    if args.env is not None:
        command += f" --env {args.env}"
    return command + (" -p" if args.print_mode else "")


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
