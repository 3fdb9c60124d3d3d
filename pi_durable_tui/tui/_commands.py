"""The slash commands: one table drives completion, dispatch and the help screen.

Each ``Command`` names itself, its arguments, one line of help and the coroutine
that runs it against a ``CommandHost`` (the app, seen through the narrow protocol
below so this module never imports it). A command is ``/`` followed by a lower
case word at the start of the editor; ``/usr/bin ...`` (a path) and ``//text``
are sent as messages (``//`` sends one slash), an unknown ``/word`` is an error
so a typo never reaches the model (durable-behavior.md 5.2, issue 8). Custom
commands (Markdown files, issue 16) join the table at each use (``all_commands``):
they complete, show in help and run like the built-in ones, which win a name clash.
A command that acts on the process holding the session (``Command.acts_on``) is
first put to ``Controller.refusal``: an attached screen says its one line
instead of starting it (issue 15).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Protocol, TypeVar, get_args

from pi_durable_tui.app import (
    CommandInfo,
    Controller,
    ExportFormat,
    HostAction,
    NoticeLevel,
    ScreenModel,
    SessionInfo,
    TaskNode,
    last_answer,
)
from pi_durable_tui.tui._picker import PickerItem
from pi_durable_tui.tui._session_commands import ago, name_session, show_session
from pi_durable_tui.tui._terminal_text import Content

T = TypeVar("T")


class CommandHost(Protocol):
    """What commands need from the app."""

    @property
    def controller(self) -> Controller:
        """The controller actions go to."""
        ...

    @property
    def model(self) -> ScreenModel:
        """The view model (the fork picker lists its user blocks)."""
        ...

    def notice(self, level: NoticeLevel, text: str) -> int:
        """Show a one-line notice; returns its id."""
        ...

    def set_editor_text(self, text: str) -> None:
        """Put text into the editor (before what is typed there)."""
        ...

    def toggle_tasks(self) -> None:
        """Hide or show the task tree."""
        ...

    def copy_to_clipboard(self, text: str) -> None:
        """Put text on the terminal's clipboard (``App.copy_to_clipboard``: OSC 52)."""
        ...

    def theme_names(self) -> list[str]:
        """The themes ``/theme`` offers."""
        ...

    def switch_theme(self, name: str) -> None:
        """Use another theme (a notice says why when it cannot)."""
        ...

    def open_help(self) -> None:
        """Show the help screen."""
        ...

    def exit_app(self) -> None:
        """Leave the app (the controller is closed on the way out)."""
        ...

    async def pick(self, title: str, items: Sequence[PickerItem[T]]) -> T | None:
        """Show a picker and return the chosen value, or ``None`` when closed."""
        ...


class CommandError(ValueError):
    """A command line that cannot run; the message says what to type instead."""


@dataclass(frozen=True, slots=True)
class Command:
    """One slash command.

    Attributes:
        name: The word after ``/``.
        args: The argument synopsis for help and completion.
        summary: One line of help.
        run: The coroutine that runs it with the rest of the line.
        acts_on: What it does to the process holding the session, if anything
            (``refused`` asks the controller first).
    """

    name: str
    args: str
    summary: str
    run: Callable[[CommandHost, str], Awaitable[None]]
    acts_on: HostAction | None = None


class RefusalHost(Protocol):
    """What ``refused`` needs: the controller to ask and a notice to say its answer."""

    @property
    def controller(self) -> Controller:
        """The controller that may refuse."""
        ...

    def notice(self, level: NoticeLevel, text: str) -> int:
        """Show a one-line notice; returns its id."""
        ...


def refused(host: RefusalHost, action: HostAction | None) -> bool:
    """Whether the controller refuses ``action``; its line is then a notice.

    The one check before a command, a key or a picker that acts on the process
    holding the session: nothing opens or is sent when it refuses.
    """
    why = None if action is None else host.controller.refusal(action)
    if why is not None:
        host.notice("warning", why)
    return why is not None


async def fork_from_picker(host: CommandHost) -> None:
    """Offer the user messages of the shown conversation; fork at the chosen one.

    The entry's text goes into the editor (``Controller.fork`` returns it).

    Args:
        host: The app.
    """
    users = [b for b in reversed(host.model.blocks) if b.kind == "user" and b.entry_id is not None]
    if not users:
        host.notice("info", "There is no earlier message to fork from.")
        return
    items = [
        PickerItem(block.text.strip().splitlines()[0] if block.text.strip() else "", block.entry_id)
        for block in users
    ]
    entry_id = await host.pick("Fork from an earlier message", items)
    if entry_id is not None:
        host.set_editor_text(await host.controller.fork(entry_id))


async def _model(host: CommandHost, arg: str) -> None:
    if arg:
        await host.controller.set_model(arg)
        return
    # A model without its key can be picked: picking it says what to set, rather
    # than a disabled line where Enter did nothing (issue 12).
    items = [
        PickerItem(
            Content.assemble(
                (choice.ref, "bold" if choice.configured else "$text-muted"),
                (f"  {choice.name}", "$text-muted"),
                ("  reasoning" if choice.reasoning else "", "$secondary"),
                ("" if choice.configured else f"  (set {choice.missing_key})", "$warning"),
            ),
            choice,
            search=f"{choice.ref} {choice.name}",
        )
        for choice in host.controller.models()
    ]
    if not items:
        # Nothing to list while the session opens, or when another process hosts
        # it (it knows the providers); a name still works in both.
        raise CommandError(NO_MODEL_LIST)
    chosen = await host.pick("Model", items)
    if chosen is None:
        return
    if not chosen.configured:
        raise CommandError(chosen.setup_hint)
    await host.controller.set_model(chosen.ref)


async def _compact(host: CommandHost, arg: str) -> None:
    await host.controller.compact(arg or None)


async def _agents(host: CommandHost, arg: str) -> None:
    items = [
        PickerItem(
            Content.assemble(
                (info.label, "bold"),
                f"  {info.title}",
                ("  (shown)" if info.shown else "", "$accent"),
                ("  busy" if info.busy else "", "$warning"),
            ),
            info.conversation_id,
            search=f"{info.label} {info.title}",
        )
        for info in await host.controller.conversations()
    ]
    conversation_id = await host.pick("Conversations", items)
    if conversation_id is not None:
        await host.controller.switch_conversation(conversation_id)


def _task_rows(nodes: Sequence[TaskNode], depth: int = 0) -> Iterator[tuple[int, TaskNode]]:
    for node in nodes:
        yield depth, node
        yield from _task_rows(node.children, depth + 1)


NO_MODEL_LIST = (
    "No models to list yet (the session is still opening, or another process hosts it): "
    "try /model again in a moment, or type /model provider/id"
)
"""Said by ``/model`` when the controller offers no models to pick from."""

TASKS_STOP_USAGE = "Usage: /tasks stop N, where N is a task number /tasks lists"


async def _tasks(host: CommandHost, arg: str) -> None:
    # The one place the screen shows task ids and kinds (issue 12): everywhere else
    # tasks and conversations go by their labels.
    words = arg.split()
    if words and words[0] == "stop":
        if len(words) != 2 or not words[1].isdigit():
            raise CommandError(TASKS_STOP_USAGE)
        host.notice("info", await host.controller.stop_task(int(words[1])))
        return
    if words:
        raise CommandError(TASKS_STOP_USAGE)
    items = [
        PickerItem(
            Content.assemble(
                ("  " * depth + node.label, "bold"),
                f"  {node.status}",
                (f"  {node.kind} · task {node.task_id}", "$text-muted"),
                (
                    ""
                    if node.subagent_conversation_id is None
                    else f" · conversation {node.subagent_conversation_id} (enter opens)",
                    "$text-muted",
                ),
            ),
            node.subagent_conversation_id,
            search=f"{node.label} {node.kind} {node.task_id}",
        )
        for depth, node in _task_rows(host.model.tasks)
    ]
    conversation_id = await host.pick("Live tasks (ctrl+t shows or hides the tree)", items)
    if conversation_id is not None:
        await host.controller.switch_conversation(conversation_id)


async def _fork(host: CommandHost, arg: str) -> None:
    await fork_from_picker(host)


async def _new(host: CommandHost, arg: str) -> None:
    await host.controller.new_session()


def _size(size: int) -> str:
    return f"{size / 1024:.0f} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MB"


SESSIONS_TITLE = "Sessions of this directory"


def session_items(sessions: Sequence[SessionInfo]) -> list[PickerItem[str]]:
    """The rows of the session picker (``/resume``, ``pidurable -r``).

    A named session (``/name``) shows its name, then its first message muted;
    any other its first message. Then its age and size.
    """
    items = []
    for session in sessions:
        first = session.first_message.splitlines()[0] if session.first_message else ""
        label = (
            Content.assemble((session.name, "bold"), (f"  {first}" if first else "", "$text-muted"))
            if session.name
            else Content(first or "(empty)")
        )
        items.append(
            PickerItem(
                Content.assemble(
                    label,
                    (
                        f"  {ago(session.last_activity_ms)}  {_size(session.size_bytes)}",
                        "$text-muted",
                    ),
                ),
                session.path,
                search=f"{session.name} {session.first_message}".strip(),
            )
        )
    return items


async def _resume(host: CommandHost, arg: str) -> None:
    path = await host.pick(SESSIONS_TITLE, session_items(await host.controller.sessions()))
    if path is not None:
        await host.controller.open_session(path)


_FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)


_BY_SUFFIX: dict[str, ExportFormat] = {
    ".jsonl": "jsonl",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
}
"""The format a path alone names by its ending (``/export ~/notes/x.md``)."""


async def _export(host: CommandHost, arg: str) -> None:
    words = arg.split(maxsplit=1)
    fmt = words[0] if words else "html"
    target = words[1] if len(words) > 1 else None
    if fmt not in _FORMATS:
        # A line that starts with no format is the path; its ending names the format.
        target = arg.strip()
        ending = PurePath(target).suffix.lower()
        if ending not in _BY_SUFFIX:
            raise CommandError(
                f"Unknown export format {fmt!r}; use {', '.join(_FORMATS)}, "
                "or a path ending in .jsonl, .md or .html."
            )
        fmt = _BY_SUFFIX[ending]
    path = await host.controller.export(fmt, target)
    host.notice("info", f"Exported the transcript to {path}")


async def _copy(host: CommandHost, arg: str) -> None:
    # REMINDER: Textual writes the text base64-encoded inside one OSC 52 sequence,
    # so nothing in an answer can end the sequence early and inject another.
    text = last_answer(host.model.blocks)
    if text is None:
        host.notice("info", "There is no answer to copy yet.")
        return
    host.copy_to_clipboard(text)
    host.notice("info", f"Copied the last answer to the clipboard ({len(text):,} characters).")


async def _theme(host: CommandHost, arg: str) -> None:
    name = arg or await host.pick("Theme", [PickerItem(n, n) for n in host.theme_names()])
    if name:
        host.switch_theme(name)


async def _skills(host: CommandHost, arg: str) -> None:
    skills = host.controller.skills()
    if not skills:
        host.notice(
            "info",
            "No skills: add a directory with a SKILL.md (front matter name, description) "
            "to .pidurable/skills/ or ~/.pidurable/skills/.",
        )
        return
    items = [
        PickerItem(
            Content.assemble(
                (skill.name, "bold"),
                f"  {skill.description}",
                (f"  {skill.source}: {skill.path}", "$text-muted"),
            ),
            skill.name,
            search=f"{skill.name} {skill.description}",
        )
        for skill in skills
    ]
    name = await host.pick("Skills (the model reads one when a task matches it)", items)
    if name is not None:
        host.set_editor_text(f"Use the {name} skill: ")


async def _reload(host: CommandHost, arg: str) -> None:
    failures = await host.controller.reload_extensions()
    for line in failures:
        host.notice("error", line)
    if not failures:
        host.notice("info", "Reloaded the extension files: the next tool call uses the new code.")


async def _mcp(host: CommandHost, arg: str) -> None:
    lines = await host.controller.mcp_servers()
    items = [PickerItem(Content(line), str(index)) for index, line in enumerate(lines)]
    await host.pick("MCP servers: state and tools", items)


async def _permissions(host: CommandHost, arg: str) -> None:
    lines = await host.controller.permissions()
    items = [PickerItem(Content(line), str(index)) for index, line in enumerate(lines)]
    await host.pick("Permissions in force (F4 cycles the mode)", items)


async def _clients(host: CommandHost, arg: str) -> None:
    lines = await host.controller.clients()
    items = [PickerItem(Content(line), str(index)) for index, line in enumerate(lines)]
    await host.pick("Attached to this session (pidurable -c in another terminal joins)", items)


async def _help(host: CommandHost, arg: str) -> None:
    host.open_help()


async def _quit(host: CommandHost, arg: str) -> None:
    host.exit_app()


COMMANDS: tuple[Command, ...] = (
    Command("model", "[provider/model]", "Pick the model of the shown conversation", _model),
    Command("compact", "[instructions]", "Summarize earlier context now", _compact),
    Command("agents", "", "Switch to the main or a subagent conversation", _agents),
    Command(
        "tasks",
        "[stop N]",
        "List the live tasks with their ids and kinds; stop N stops task N (a job)",
        _tasks,
    ),
    Command("fork", "", "Fork the conversation from an earlier message", _fork, "fork"),
    Command("new", "", "Start a new session in this directory", _new, "new"),
    Command("resume", "", "Open another session of this directory", _resume, "resume"),
    Command(
        "export",
        "[jsonl|markdown|html] [path]",
        "Write the transcript to a file",
        _export,
        "export",
    ),
    Command(
        "session", "", "Show the session: store, ID, model, spend, context, tasks", show_session
    ),
    Command(
        "name",
        "[name]",
        "Name the session (the resume picker shows it); alone, show it",
        name_session,
    ),
    Command("copy", "", "Copy the last answer (its Markdown) to the clipboard (OSC 52)", _copy),
    Command("theme", "[name]", "Pick a colour theme", _theme),
    Command("skills", "", "List the skills the model may use", _skills),
    Command("reload", "", "Import the extension files again (running calls finish)", _reload),
    Command("mcp", "", "List the MCP servers, their state and tools", _mcp),
    Command("permissions", "", "List the permission mode and rules in force", _permissions),
    Command("clients", "", "List the terminals and clients attached to this session", _clients),
    Command("help", "", "List every key and command", _help),
    Command("quit", "", "Exit pidurable", _quit),
)
_BY_NAME = {command.name: command for command in COMMANDS}
_COMMAND_LINE = re.compile(r"/([A-Za-z0-9][A-Za-z0-9_.:-]*)(?:\s+(.*))?", re.DOTALL)
_BUILT_IN_SHAPE = re.compile(r"[a-z][a-z-]*")


def custom_command(info: CommandInfo) -> Command:
    """The table row of a custom command: running it sends its file's text (issue 16)."""

    async def run(host: CommandHost, arg: str) -> None:
        await host.controller.run_custom_command(info.name, arg)

    return Command(info.name, info.argument_hint, f"{info.description} ({info.source})", run)


def all_commands(custom: Sequence[CommandInfo] = ()) -> list[Command]:
    """The built-in commands, then the custom ones whose names they do not take."""
    return [*COMMANDS, *(custom_command(c) for c in custom if c.name not in _BY_NAME)]


def parse_command(text: str, custom: Sequence[CommandInfo] = ()) -> tuple[Command, str] | None:
    """Return the command a submitted text names, with its argument text.

    Args:
        text: What the user submitted.
        custom: The custom commands (a built-in command of the same name wins).

    Returns:
        ``(command, argument)``, or ``None`` when the text is a message.

    Raises:
        CommandError: The text names no known command.
    """
    stripped = text.strip()
    match = _COMMAND_LINE.fullmatch(stripped)
    if match is None:
        return None
    name = match.group(1)
    command = _BY_NAME.get(name) or next(
        (custom_command(c) for c in custom if c.name == name), None
    )
    if command is None:
        if not _BUILT_IN_SHAPE.fullmatch(name):
            return None  # ``/1.5x`` or ``/Users`` was never a command: it is a message
        raise CommandError(
            f"Unknown command /{name} (F1 lists the commands; start with // to "
            "send a message that begins with /)."
        )
    return command, (match.group(2) or "").strip()


def as_message(text: str) -> str:
    """Return the message a non-command text sends (``//x`` sends ``/x``)."""
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("//") else text


def matching_commands(prefix: str, custom: Sequence[CommandInfo] = ()) -> list[Command]:
    """Return the commands whose name starts with ``prefix`` (without the slash)."""
    return [command for command in all_commands(custom) if command.name.startswith(prefix)]
