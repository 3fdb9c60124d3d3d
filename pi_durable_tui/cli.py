"""The ``pidurable`` command: argument parsing and the choice of front end.

Layer 7 of DESIGN.md. Only what exists is offered: the interactive agent, print
mode and JSON mode arrive with the harness and the TUI; until then the command
says so plainly instead of pretending.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pi_durable_tui import __version__

_NOT_YET = (
    "pidurable {version}: the interactive agent is not built yet.\n"
    "What works today:\n"
    "  python -m pi_durable_tui.examples.<name>   runnable kernel examples (see README)\n"
    "  python -m pi_durable_tui.bench storage     storage benchmark\n"
    "  python -m pi_durable_tui.ai --help         stream one answer from a model provider\n"
)


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of ``pidurable``.

    Returns:
        The parser, with only the options that work in this version.
    """
    parser = argparse.ArgumentParser(
        prog="pidurable",
        description=(
            "A terminal coding agent on a durable core: every step is committed to a "
            "SQLite store before it is shown, so a killed session resumes where it stopped."
        ),
    )
    parser.add_argument("--version", action="version", version=f"pidurable {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pidurable`` command.

    Args:
        argv: Arguments without the program name; ``sys.argv[1:]`` when omitted.

    Returns:
        The process exit status.
    """
    parser = build_parser()
    parser.parse_args(argv)
    sys.stderr.write(_NOT_YET.format(version=__version__))
    return 2
