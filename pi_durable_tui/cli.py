"""The ``pidurable`` command: argument parsing and the choice of front end (layer 7).

- ``pidurable`` opens the terminal app on a new session for the working
  directory; ``-c/--continue`` opens the newest one and resumes what a killed
  process left; ``-r/--resume`` picks one; ``--session PATH`` opens a given store.
- ``-p/--print [PROMPT]`` runs headless and prints the final answer;
  ``--mode json`` prints agent events as JSON lines instead.
- ``pidurable export --format jsonl|markdown|html`` writes a transcript.

Every path closes the harness and the store: errors, Ctrl-C (one line, never a
traceback) and SIGTERM included. Problems the user can fix (a malformed settings
file, a locked or damaged store, no session to continue, a malformed faux script,
an unknown model) print one line on stderr and exit with status 2; a run whose
prompt was left unanswered exits with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence

from pi_durable_tui import __version__

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


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
    sessions.add_argument("--session", metavar="PATH", help="open the session store at PATH")
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
    """Run the ``pidurable`` command; returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["export"]:
        from pi_durable_tui.app import export_main

        return export_main(arguments[1:])
    args = build_parser().parse_args(arguments)
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        sys.stderr.write("pidurable: interrupted; run `pidurable -c` to continue\n")
        return EXIT_INTERRUPTED


async def _run(args: argparse.Namespace) -> int:
    from pi_durable_tui.app import AgentApp, AppOptions, describe_startup_error, run_print

    if args.list_models:
        from pi_durable_tui.app import list_models_text

        sys.stdout.write(list_models_text(args.faux_script))
        return 0
    if args.prompt is None:
        sys.stderr.write("pidurable: the terminal app is not available yet; use -p PROMPT\n")
        return EXIT_USAGE
    options = AppOptions(
        cwd=os.getcwd(),
        session=args.session,
        continue_session=args.continue_session,
        model=args.model,
        base_url=args.base_url,
        faux_script=args.faux_script,
    )
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        assert task is not None
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        app = await AgentApp.open(options)
    except Exception as error:
        message = describe_startup_error(error)
        if message is None:
            raise
        sys.stderr.write(f"pidurable: {message}\n")
        return EXIT_USAGE
    try:
        prompt = args.prompt or None
        if args.mode == "json":
            from pi_durable_tui.app import run_json

            return await run_json(app, prompt, sys.stdout, sys.stderr, request_id=args.request_id)
        return await run_print(app, prompt, sys.stdout, sys.stderr, request_id=args.request_id)
    except asyncio.CancelledError:
        sys.stderr.write("pidurable: terminated; run `pidurable -c` to continue\n")
        return 143
    finally:
        await app.close()
