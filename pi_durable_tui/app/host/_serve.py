"""``pidurable serve``: host a session without a terminal, until stopped (issue 15).

It opens the session as ``pidurable`` would (a new one, ``-c`` the newest of
this directory, or ``--session PATH``), serves it on ``<store>.sock`` and runs
its work; clients (``pidurable -c`` in a terminal, anything speaking the wire)
attach to it, and their prompts and approval decisions run here. Approvals
wait for a client: nothing is decided without one (DESIGN.md section 7). One
line on stderr says what is served, how to attach and how to stop; SIGINT or
SIGTERM says ``bye`` to the clients and closes the session (exit 0). A problem
opening it is one line and exit status 2, as for ``pidurable``.

(The web page and its ``--web`` option are the next step of issue 15.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence

from pi_durable_tui.app._startup_errors import describe_startup_error
from pi_durable_tui.app.agent import AgentApp, AppOptions, PermissionChoices
from pi_durable_tui.app.host._host import SessionHost
from pi_durable_tui.harness import MODES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pidurable serve", description="Host a session for other clients, until stopped."
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "-c",
        "--continue",
        dest="continue_session",
        action="store_true",
        help="serve the newest session of this directory",
    )
    which.add_argument("--session", metavar="PATH", help="serve the session stored at PATH")
    parser.add_argument("--model", help="provider/model-id[:thinking] for a new session")
    parser.add_argument("--faux-script", metavar="FILE", help="serve provider faux from FILE")
    parser.add_argument("--permission-mode", choices=MODES, help="the session's permission mode")
    return parser


async def serve(options: AppOptions) -> int:
    """Open, serve until SIGINT or SIGTERM, close; returns the exit status."""
    try:
        app = await AgentApp.open(options)
    except Exception as error:
        line = describe_startup_error(error)
        if line is None:
            raise
        sys.stderr.write(f"pidurable serve: {line}\n")
        return 2
    host = SessionHost(app, name=None)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    try:
        await host.start()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        app.harness.resume()
        sys.stderr.write(
            f"pidurable serve: serving {app.session_id} on {host.path} (pid {os.getpid()}); "
            f"attach with: pidurable --session {app.store}; stop with Ctrl+C "
            f"or kill {os.getpid()}\n"
        )
        sys.stderr.flush()
        await stop.wait()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signum)
        await host.close()
        await app.close()
    return 0


def serve_main(argv: Sequence[str]) -> int:
    """Run ``pidurable serve``; returns the exit status."""
    args = _parser().parse_args(list(argv))
    options = AppOptions(
        cwd=os.getcwd(),
        session=args.session,
        continue_session=args.continue_session,
        model=args.model,
        faux_script=args.faux_script,
        permissions=PermissionChoices(mode=args.permission_mode),
    )
    return asyncio.run(serve(options))
