"""Custom slash commands: Markdown files that become ``/name`` messages (issue 16).

Each ``*.md`` file under ``.pidurable/commands/``, ``$PIDURABLE_HOME/commands/``
or ``.claude/commands/`` (``markdown_roots``; a name found first wins) is the
command ``/<file name without .md>``; a file in a subdirectory is
``/<dir>:<name>``. Running it sends the file's body as the user message, with
``$ARGUMENTS`` replaced by everything after the name and ``$1``, ``$2``, ... by
its words (shell quoting groups words; a missing word is empty). When the body
names no argument at all, the arguments are appended as ``ARGUMENTS: ...``, so
they never vanish. Front matter is optional: ``description`` (else the body's
first line), ``argument-hint``, ``model`` and ``allowed-tools``.

``model`` and ``allowed-tools`` are read but not applied, and running the
command says so in a note: pidurable has no per-message model or tool set, and a
file in a repository must never widen what the agent may do. The message is
what the user would have typed, so the usual rules apply to what follows.

``expand_command_line`` is the one function the screen's controller and the
headless mode call, so ``pidurable -p "/review calc.py"`` sends what typing
``/review calc.py`` sends.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_durable_tui.app.files._front_matter import (
    FrontMatterError,
    markdown_roots,
    read_markdown_file,
    text_field,
)

COMMAND_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(?::[A-Za-z0-9][A-Za-z0-9_.-]*)*")
"""What a custom command's name may be: file-name words, ``:`` between directories."""
_COMMAND_LINE = re.compile(r"/(\S+)(?:\s+(.*))?", re.DOTALL)
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9][0-9]*)")
_DESCRIPTION_CHARS = 80


@dataclass(frozen=True, slots=True)
class CustomCommand:
    """A command file, as found (the body is read again when it runs)."""

    name: str
    description: str
    argument_hint: str
    path: Path
    source: str


@dataclass(frozen=True, slots=True)
class CommandScan:
    """The usable commands, sorted by name, and one line per unusable file."""

    commands: tuple[CustomCommand, ...] = ()
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Expansion:
    """What running a command sends, and the notes to show about it."""

    command: CustomCommand
    text: str
    notes: tuple[str, ...] = ()


class UnknownCommand(LookupError):
    """A command name no command file has (any more)."""


def discover_commands(cwd: str) -> CommandScan:
    """Find the custom commands of the project in ``cwd`` and of the user."""
    found: dict[str, CustomCommand] = {}
    problems: list[str] = []
    for root in markdown_roots(cwd, "commands"):
        try:
            paths = sorted(p for p in root.directory.rglob("*.md") if p.is_file())
        except OSError:
            continue
        for path in paths:
            *directories, file_name = path.relative_to(root.directory).parts
            name = ":".join([*directories, file_name[: -len(".md")]])
            if name in found:
                continue
            try:
                found[name] = _read_command(name, path, root.source)[0]
            except FrontMatterError as error:
                problems.append(f"Command skipped: {error}")
    return CommandScan(tuple(sorted(found.values(), key=lambda c: c.name)), tuple(problems))


def _read_command(name: str, path: Path, source: str) -> tuple[CustomCommand, dict[str, Any], str]:
    if not COMMAND_NAME.fullmatch(name):
        raise FrontMatterError(f"{path}: /{name} is not a command name (use letters, digits, -_.)")
    document = read_markdown_file(path)
    description = text_field(document.meta, "description", path) or _first_line(document.body)
    hint = text_field(document.meta, "argument-hint", path) or ""
    command = CustomCommand(name, description, hint, path, source)
    return command, document.meta, document.body


def _first_line(body: str) -> str:
    line = next((line.strip() for line in body.splitlines() if line.strip()), "")
    line = line.lstrip("#").strip()
    return line if len(line) <= _DESCRIPTION_CHARS else line[: _DESCRIPTION_CHARS - 3] + "..."


def expand_arguments(body: str, arguments: str) -> str:
    """Fill ``$ARGUMENTS`` and ``$1``, ``$2``, ... of ``body`` (module docstring)."""
    arguments = arguments.strip()
    if not _PLACEHOLDER.search(body):
        return f"{body.rstrip()}\n\nARGUMENTS: {arguments}" if arguments else body
    try:
        words = shlex.split(arguments)
    except ValueError:  # an unclosed quote: plain words then
        words = arguments.split()

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "ARGUMENTS":
            return arguments
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    return _PLACEHOLDER.sub(fill, body)


def expand_command(name: str, arguments: str, cwd: str) -> Expansion:
    """Read the command ``name`` now and fill in ``arguments``.

    Raises:
        UnknownCommand: No command file has that name.
        FrontMatterError: Its file cannot be used (the message names it).
    """
    # REMINDER: the name is checked before it becomes a path: no segment can be ``..``.
    if not COMMAND_NAME.fullmatch(name):
        raise UnknownCommand(f"No command /{name}")
    *directories, stem = name.split(":")
    for root in markdown_roots(cwd, "commands"):
        path = root.directory.joinpath(*directories, f"{stem}.md")
        if path.is_file():
            command, meta, body = _read_command(name, path, root.source)
            return Expansion(command, expand_arguments(body, arguments), _notes(command, meta))
    raise UnknownCommand(f"No command /{name}: there is no {name.replace(':', '/')}.md any more")


def expand_command_line(text: str, cwd: str) -> Expansion | None:
    """The expansion of ``text`` when it is ``/name arguments`` of a custom command.

    Returns:
        ``None`` when ``text`` does not start with the name of a command file.

    Raises:
        FrontMatterError: The command's file cannot be used.
    """
    match = _COMMAND_LINE.fullmatch(text.strip())
    if match is None:
        return None
    try:
        return expand_command(match.group(1), match.group(2) or "", cwd)
    except UnknownCommand:
        return None


def _notes(command: CustomCommand, meta: dict[str, Any]) -> tuple[str, ...]:
    notes: list[str] = []
    if meta.get("model"):
        notes.append(
            f"/{command.name}: its model ({meta['model']}) is not applied; pidurable has no "
            "per-message model (use /model to switch)."
        )
    if meta.get("allowed-tools"):
        notes.append(
            f"/{command.name}: allowed-tools is not applied; a command file cannot change the "
            "tools offered or what they may do."
        )
    return tuple(notes)
