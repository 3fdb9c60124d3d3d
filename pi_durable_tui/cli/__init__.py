"""Layer 7: the ``pidurable`` command (DESIGN.md section 1).

Its one public face; behind it, in the direction imports run:

1. ``_signals``: Ctrl-C, SIGTERM and SIGHUP end the command in order;
   ``_arguments``: the command line's forms (options, the prompt anywhere on the
   line, subcommands, piped input);
2. ``_command``: ``main``, the choice between the terminal app, print mode and
   JSON mode, and the subcommands.
"""

from pi_durable_tui.cli._arguments import (
    MAX_STDIN_BYTES,
    SUBCOMMANDS,
    Subcommand,
    build_parser,
    clean_text,
)
from pi_durable_tui.cli._command import EXIT_BROKEN_PIPE, EXIT_USAGE, main
from pi_durable_tui.cli._signals import STOP_SIGNALS, Interrupted, SignalGuard

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_USAGE",
    "MAX_STDIN_BYTES",
    "STOP_SIGNALS",
    "SUBCOMMANDS",
    "Interrupted",
    "SignalGuard",
    "Subcommand",
    "build_parser",
    "clean_text",
    "main",
]
