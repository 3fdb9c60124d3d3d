"""``pidurable serve``: host a session without a terminal, until stopped (issue 15).

It opens the session as ``pidurable`` would (a new one, ``-c`` the newest of
this directory, or ``--session PATH``), serves it on ``<store>.sock`` and runs
its work; clients (``pidurable -c`` in a terminal, anything speaking the wire)
attach to it, and their prompts and approval decisions run here. Approvals
wait for a client: nothing is decided without one (DESIGN.md section 7). One
line on stderr says what is served, how to attach and how to stop; SIGINT or
SIGTERM says ``bye`` to the clients and closes the session (exit 0). A problem
opening it is one line and exit status 2, as for ``pidurable``.

``--web HOST:PORT`` also serves the web page (``WebServer``) and prints its
URL with the access token on stdout, one line; ``HOST`` must be loopback unless
``--allow-remote`` is given (``_address``). A bad ``--web`` is one line and
exit status 2 before anything is opened.
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
from pi_durable_tui.app.host import SessionHost
from pi_durable_tui.app.web._address import WebAddress, parse_web_address
from pi_durable_tui.app.web._server import WebServer
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
    parser.add_argument(
        "--web",
        metavar="HOST:PORT",
        help="also serve the web page there (loopback, e.g. 127.0.0.1:8080; port 0 picks)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --web listen on a non-loopback host you name (the token crosses the network)",
    )
    return parser


async def serve(options: AppOptions, web_address: WebAddress | None = None) -> int:
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
    page = WebServer(host, web_address) if web_address is not None else None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    try:
        await host.start()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        if page is not None:
            try:
                url = await page.start()
            except OSError as error:
                sys.stderr.write(f"pidurable serve: cannot listen on --web: {error}\n")
                return 2
        app.harness.resume()
        if page is not None:
            print(url, flush=True)
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
        await host.close()  # bye to every client, the pages' WebSockets too
        if page is not None:
            await page.close()
        await app.close()
    return 0


def serve_main(argv: Sequence[str]) -> int:
    """Run ``pidurable serve``; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(list(argv))
    web_address = None
    if args.allow_remote and not args.web:
        parser.exit(2, "pidurable serve: --allow-remote goes with --web HOST:PORT\n")
    if args.web:
        try:
            web_address = parse_web_address(args.web, allow_remote=args.allow_remote)
        except ValueError as error:
            parser.exit(2, f"pidurable serve: {error}\n")
    options = AppOptions(
        cwd=os.getcwd(),
        session=args.session,
        continue_session=args.continue_session,
        model=args.model,
        faux_script=args.faux_script,
        permissions=PermissionChoices(mode=args.permission_mode),
    )
    return asyncio.run(serve(options, web_address))
