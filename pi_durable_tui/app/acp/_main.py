"""``pidurable acp``: pidurable as an Agent Client Protocol agent on stdio (issue 15).

Zed, Toad and JetBrains IDEs start it and speak JSON-RPC 2.0 on its standard
input and output. The real standard output is kept for the protocol alone:
file descriptor 1 is pointed at standard error for everything else this
process or its children might print, so no stray byte corrupts the stream.
Every line written passes the secret redactor first. End of input closes the
sessions and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from pi_durable_tui.app.acp._agent import AcpAgent, AgentOptions
from pi_durable_tui.app.acp._rpc import MAX_LINE, Connection
from pi_durable_tui.app.agent import output_redactor
from pi_durable_tui.harness import MODES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pidurable acp",
        description="Run as an Agent Client Protocol agent on stdio (for editors).",
    )
    parser.add_argument("--model", help="provider/model-id[:thinking] for new sessions")
    parser.add_argument("--faux-script", metavar="FILE", help="serve provider faux from FILE")
    parser.add_argument("--permission-mode", choices=MODES, help="the sessions' permission mode")
    return parser


def _line_writer(out: TextIO, redact: Callable[[str], str]) -> Callable[[str], None]:
    def write(line: str) -> None:
        out.write(redact(line))
        out.flush()

    return write


async def run(options: AgentOptions, out: TextIO) -> int:
    """Serve one client on stdin and ``out`` until end of input; returns the exit status."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    redact = output_redactor().text
    agent = AcpAgent(options, redact)
    connection = Connection(reader, _line_writer(out, redact), agent.handle)
    agent.connection = connection
    try:
        await connection.serve()
    finally:
        await agent.close()
    return 0


def acp_main(argv: Sequence[str]) -> int:
    """Run ``pidurable acp``; returns the exit status."""
    args = _parser().parse_args(list(argv))
    options = AgentOptions(
        model=args.model, faux_script=args.faux_script, permission_mode=args.permission_mode
    )
    # REMINDER: the protocol owns the real stdout; anything else printed goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        return asyncio.run(run(options, out))
    finally:
        out.close()
