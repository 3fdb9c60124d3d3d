"""The command line's forms: options, the prompt, subcommands and piped input (issue 12).

- ``-p/--print`` is a flag; the prompt is the positional words, anywhere on the
  line (``pidurable -p --model faux/faux-1 "fix it"``), joined by single spaces
  as if they were quoted together.
- Without ``-p``, a prompt opens the terminal app and is sent as its first
  message (``pidurable "fix it"``, as ``claude "query"`` does).
- Subcommands (``SUBCOMMANDS``, which ``--help`` lists one line each): a word is
  a subcommand only as the very first argument. Anywhere else it is part of the
  prompt, so ``pidurable -p export`` and ``pidurable -- export`` send the word
  ``export`` to the model.
- With ``-p``, standard input that is not a terminal is read (at most
  ``MAX_STDIN_BYTES``): with a prompt, the prompt comes first, then a blank
  line, then the piped text; without one, the piped text is the prompt. Empty
  input is no input (``pidurable -c -p < /dev/null`` still resumes).
- Text from argv or stdin that is not valid UTF-8 (argv holds it as lone
  surrogates) is stored with replacement characters (``clean_text``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from pi_durable_tui import __version__

MAX_STDIN_BYTES = 4 * 1024 * 1024
"""The most piped input ``-p`` reads (4 MiB): more is refused, not cut."""


class UsageError(ValueError):
    """The command line cannot run as written (exit status 2, one line)."""


@dataclass(frozen=True, slots=True)
class Subcommand:
    """A ``pidurable NAME ...`` command: its one-line summary and what runs it.

    Args:
        summary: The line ``pidurable --help`` shows.
        run: Runs it with the arguments after its name; returns the exit status.
    """

    summary: str
    run: Callable[[Sequence[str]], int]


def _export(argv: Sequence[str]) -> int:
    from pi_durable_tui.app import export_main

    return export_main(argv)


def _serve(argv: Sequence[str]) -> int:
    from pi_durable_tui.app import serve_main

    return serve_main(argv)


def _acp(argv: Sequence[str]) -> int:
    from pi_durable_tui.app import acp_main

    return acp_main(argv)


SUBCOMMANDS: dict[str, Subcommand] = {
    "acp": Subcommand("run as an Agent Client Protocol agent on stdio, for editors", _acp),
    "export": Subcommand("write a session's transcript as JSON lines, Markdown or HTML", _export),
    "serve": Subcommand("host a session for other terminals and clients, until stopped", _serve),
}
"""The subcommands, by name; a new one joins this table (and ``--help`` lists it)."""


def subcommand_of(arguments: Sequence[str]) -> str | None:
    """The subcommand the command line names: its first argument, when it is one."""
    first = arguments[0] if arguments else None
    return first if first in SUBCOMMANDS else None


def _epilog() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    lines = [f"  {name:<{width}}  {command.summary}" for name, command in SUBCOMMANDS.items()]
    return (
        "subcommands (pidurable SUBCOMMAND --help for its options):\n"
        + "\n".join(lines)
        + "\n\nA subcommand's name counts only as the first argument:\n"
        "`pidurable -p export` and `pidurable -- export` send the word as a prompt."
    )


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of ``pidurable`` (subcommands are dispatched before it)."""
    parser = argparse.ArgumentParser(
        prog="pidurable",
        usage="pidurable [options] [PROMPT ...]\n       pidurable SUBCOMMAND [options]",
        description=(
            "A terminal coding agent on a durable core: every step is committed to a "
            "SQLite store before it is shown, so a killed session resumes where it stopped. "
            "A PROMPT opens the terminal app and sends it as the first message; with -p "
            "it runs headless and prints the answer."
        ),
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "prompt",
        nargs="*",
        metavar="PROMPT",
        help="the first message (several words are joined with spaces)",
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
        dest="print_mode",
        action="store_true",
        help="run headless: send PROMPT (and piped input; with -c and no prompt, resume) "
        "and print the final answer",
    )
    parser.add_argument(
        "--mode",
        choices=("text", "json"),
        default="text",
        help="with -p: print the answer (text), or the messages an attached client reads, "
        "one JSON line each (json)",
    )
    parser.add_argument(
        "--model",
        metavar="PROVIDER/ID[:THINKING]",
        help=(
            "the model, e.g. anthropic/claude-sonnet-4-6:high, openai/gpt-5.2, faux/faux-1 "
            "(default: the settings' model, else the first provider whose key is set)"
        ),
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
    parser.add_argument(
        "--permission-mode",
        choices=("plan", "ask", "auto-edit", "auto"),
        help="what runs without asking: plan (reads only), ask, auto-edit (default), auto",
    )
    parser.add_argument(
        "--leave-jobs-running",
        action="store_true",
        help="at exit, leave background jobs running instead of ending them",
    )
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="RULE",
        help="allow calls matching RULE without asking, e.g. 'bash(make test)' (repeatable)",
    )
    parser.add_argument(
        "--deny",
        action="append",
        default=[],
        metavar="RULE",
        help="refuse calls matching RULE, e.g. 'bash(curl:*)' (repeatable; wins over --allow)",
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


def parse_arguments(arguments: Sequence[str]) -> argparse.Namespace:
    """Parse a command line (not a subcommand's); ``args.prompt`` becomes text or ``None``.

    Exits with status 2 and argparse's usage message for a malformed line.
    """
    arguments = list(arguments)
    # Everything after ``--`` is the prompt's; argparse's intermixed parsing would
    # not keep the words around it together.
    cut = arguments.index("--") if "--" in arguments else len(arguments)
    args = build_parser().parse_intermixed_args(arguments[:cut])
    words: list[str] = [*args.prompt, *arguments[cut + 1 :]]
    args.prompt = clean_text(" ".join(words)) if words else None
    return args


def clean_text(text: str) -> str:
    """``text`` as valid Unicode: what UTF-8 cannot encode becomes U+FFFD.

    argv and the environment hold bytes that are not UTF-8 as lone surrogates
    (``surrogateescape``); they are turned back into those bytes and decoded with
    replacement, so one bad byte is one replacement character.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            data = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a surrogate no byte stands for (U+D800..U+DC7F)
            data = text.encode("utf-8", "surrogatepass")
        return data.decode("utf-8", "replace")
    return text


def piped_input(stdin: BinaryIO | None) -> str | None:
    """The text piped to the command (``None`` from a terminal, or when there is none).

    Raises:
        UsageError: It is larger than ``MAX_STDIN_BYTES``.
    """
    if stdin is None:
        return None
    try:
        if os.isatty(stdin.fileno()):
            return None
    except (OSError, ValueError):  # no file descriptor (closed, or replaced in-process)
        return None
    data = stdin.read(MAX_STDIN_BYTES + 1)
    if len(data) > MAX_STDIN_BYTES:
        raise UsageError(
            f"standard input is larger than {MAX_STDIN_BYTES // (1024 * 1024)} MiB; "
            "write it to a file and name the file in the prompt instead"
        )
    # The newline that ends the last line is the pipe's, not part of the message.
    text = data.decode("utf-8", "replace").rstrip("\r\n")
    return text if text.strip() else None


def headless_prompt(prompt: str | None, piped: str | None) -> str | None:
    """What ``-p`` sends: the prompt, a blank line, the piped text (either may be absent)."""
    if piped is None:
        return prompt
    if prompt is None:
        return piped
    return f"{prompt}\n\n{piped}"
