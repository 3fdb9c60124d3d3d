"""What extension and tool authors write: tools, sections, hooks, wrappers, extensions (7.1-7.4).

- ``define_tool`` builds a ``Tool``: a name, a description, a pydantic model of
  its parameters (the JSON schema sent to the model, and the validator of the
  arguments it sends back), ``execute(args, api)``, its ``replay`` policy (R95),
  its ``execution_mode`` (R89) and its output limits (R102).
- ``section(key, render)`` renders one part of the system prompt (R78).
- ``hook(task_name, ...)`` registers callbacks for a built-in task (R117).
- ``wrap_tool`` / ``wrap_section`` transform another extension's tool or section
  at resolution time (R30, R31).
- ``define_extension`` bundles them, with durable task definitions
  (``define_task``), under one name.

Everything here is immutable and compared by identity: installing a changed
extension is a new object, which is how hot reload is noticed (R35).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar

from pydantic import BaseModel

from pi_durable_tui.ai import ImageContent, TextContent, Usage
from pi_durable_tui.harness.extensions._bounds import OutputLimits
from pi_durable_tui.harness.extensions._ports import Severity as Severity
from pi_durable_tui.harness.permissions import SubjectKind
from pi_durable_tui.storage.json_ops import Json, JsonObject

if TYPE_CHECKING:
    from pi_durable_tui.harness.extensions._ports import ToolApi

Replay = Literal["safe", "unsafe"]
ExecutionMode = Literal["parallel", "sequential"]
P = TypeVar("P", bound=BaseModel)

_SECTION_KEY = re.compile(r"^[a-z][a-z0-9_-]*$")


@dataclass(frozen=True, slots=True)
class ToolAccess:
    """What a tool's calls touch, for the permission engine (issue 13).

    Args:
        kind: ``path``: the main argument is a file the tool changes (or reads);
            ``command``: a shell command line (read-only commands are recognized).
        argument: Returns the main argument from the validated arguments.
    """

    kind: SubjectKind
    argument: Callable[[Any], str]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A model-visible remark about a tool call, rendered in the ``<harness>`` block (R98)."""

    severity: Severity
    message: str
    code: str | None = None

    def to_json(self) -> JsonObject:
        """Return the stored form ``{"severity", "message", "code"?}``."""
        data: JsonObject = {"severity": self.severity, "message": self.message}
        if self.code is not None:
            data["code"] = self.code
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Diagnostic:
        """Build a diagnostic from its stored form."""
        return cls(data["severity"], data["message"], data.get("code"))


@dataclass(frozen=True, slots=True)
class ToolControl:
    """What a tool result asks of the turn (R90).

    Args:
        terminate: End the run after this round when every call terminates.
        handoff: Start a fresh context holding this text (a ``pi.reset``).
        add_tools: Offer these tools from the next request on.
    """

    terminate: bool = False
    handoff: str | None = None
    add_tools: tuple[str, ...] = ()

    def to_json(self) -> JsonObject:
        """Return the stored form (only the fields that are set)."""
        data: JsonObject = {}
        if self.terminate:
            data["terminate"] = True
        if self.handoff is not None:
            data["handoff"] = self.handoff
        if self.add_tools:
            data["add_tools"] = list(self.add_tools)
        return data


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What ``execute`` returns. Every field is optional (R97).

    Args:
        content: What the model sees. ``None`` means "the retained output" (what the
            tool wrote with ``api.output``). A string is one text item.
        details: Application data for the screen; never sent to the model.
        is_error: Report a failure to the model without failing the task.
        diagnostics: Remarks added after those recorded with ``api.diagnostic``.
        usage: Model spend of the tool itself (added to ``pi.usage.tools``).
        control: Turn control (terminate, handoff, add tools).
    """

    content: str | Sequence[TextContent | ImageContent] | None = None
    details: Json = None
    is_error: bool = False
    diagnostics: tuple[Diagnostic, ...] = ()
    usage: Usage | None = None
    control: ToolControl | None = None


@dataclass(frozen=True, eq=False)
class Tool(Generic[P]):
    """A tool the model can call. Build it with ``define_tool``."""

    name: str
    description: str
    parameters: type[P]
    execute: Callable[[P, ToolApi], Awaitable[ToolResult | None]]
    replay: Replay = "unsafe"
    execution_mode: ExecutionMode = "parallel"
    output: OutputLimits = field(default_factory=OutputLimits)
    prepare_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    read_only: bool = False
    access: ToolAccess | None = None
    deferred: bool = False

    @functools.cached_property
    def _spec(self) -> JsonObject:
        schema = self.parameters.model_json_schema()
        schema.pop("title", None)
        return {"name": self.name, "description": self.description, "parameters": schema}

    def spec(self) -> JsonObject:
        """Return the declaration sent to the model: name, description, JSON schema.

        Built once per tool (pydantic's schema generation is slow) and copied, so a
        caller may change what it gets.
        """
        return copy.deepcopy(self._spec)

    @property
    def declaration(self) -> JsonObject:
        """The declaration ``spec()`` copies, shared: read it, never change it.

        Every request reads every offered tool's declaration (issue 14: deep copies
        of them were 6% of a tool round's CPU); what is stored from it is copied
        where it is stored (``system_message``).
        """
        return self._spec


def define_tool(
    name: str,
    *,
    description: str,
    parameters: type[P],
    execute: Callable[[P, ToolApi], Awaitable[ToolResult | None]],
    replay: Replay = "unsafe",
    execution_mode: ExecutionMode = "parallel",
    output: OutputLimits | None = None,
    prepare_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    read_only: bool = False,
    access: ToolAccess | None = None,
    deferred: bool = False,
) -> Tool[P]:
    """Define a tool.

    Args:
        name: The name the model calls (unique within an extension).
        description: What the tool does, for the model.
        parameters: A pydantic model: its JSON schema is offered, and the model's
            arguments are validated into it before ``execute`` (R93).
        execute: ``async def execute(args, api)``; raising fails the call with a
            ``tool_error`` result that keeps the retained output (R96).
        replay: ``"safe"`` when running it again after a crash is harmless (a read);
            otherwise a call cut by a crash reaches the model as ``interrupted`` (R95).
        execution_mode: ``"sequential"`` makes any round calling it sequential (R89).
        output: Limits of the retained output (default 2000 lines / 50 KiB, head).
        prepare_arguments: Repairs the raw arguments before validation, on a copy;
            the stored call keeps what the model sent (R94).
        read_only: The tool only reads: it runs in every permission mode, ``plan``
            included (issue 13). A tool that does not say so follows ``bash``'s policy.
        access: Its main argument (a path, a command) for permission rules
            (``write(src/**)``) and protected paths.
        deferred: Its schema may be held back from the model when all deferred
            schemas together are too large for the context window (issue 16):
            the model then finds it with ``tool_search`` and loads it; a call by
            its name works either way.

    Returns:
        The tool.

    Raises:
        ValueError: For an empty name or a bad replay or execution mode.
    """
    if not name:
        raise ValueError("A tool needs a non-empty name")
    if replay not in ("safe", "unsafe"):
        raise ValueError(f"Tool {name}: replay must be 'safe' or 'unsafe', got {replay!r}")
    if execution_mode not in ("parallel", "sequential"):
        raise ValueError(f"Tool {name}: execution_mode must be 'parallel' or 'sequential'")
    return Tool(
        name=name,
        description=description,
        parameters=parameters,
        execute=execute,
        replay=replay,
        execution_mode=execution_mode,
        output=output if output is not None else OutputLimits(),
        prepare_arguments=prepare_arguments,
        read_only=read_only,
        access=access,
        deferred=deferred,
    )


@dataclass(frozen=True, slots=True)
class SectionInput:
    """What a section's ``render`` receives (R77).

    Args:
        conversation_id: The conversation the request is for.
        agent: Its resolved agent (``ResolvedAgent``).
        env: Its execution environment, or ``None`` when there is none or building
            it failed (R78).
        shown: The text of this section the model has now, if any.
    """

    conversation_id: int
    agent: Any
    env: Any
    shown: str | None


SectionRender: TypeAlias = Callable[[SectionInput], "str | Awaitable[str | None] | None"]


@dataclass(frozen=True, eq=False)
class Section:
    """One part of the system prompt. Build it with ``section``."""

    key: str
    render: SectionRender
    tag: bool = True


def section(key: str, render: SectionRender, *, tag: bool = True) -> Section:
    """Define a system prompt section (R78).

    Args:
        key: Matches ``^[a-z][a-z0-9_-]*$``; ``instructions`` is reserved (R32).
        render: Returns the text, or ``None`` to omit the section this time.
        tag: Wrap the text as ``<key>`` ... ``</key>``.

    Returns:
        The section.

    Raises:
        ValueError: For a malformed or reserved key.
    """
    _check_section_key(key)
    return Section(key, render, tag)


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    """A tool call as hooks see it: the call, its assistant entry, the arguments now."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    """The current arguments (after repair and earlier ``before_tool`` rewrites)."""
    assistant_entry: int


@dataclass(frozen=True, slots=True)
class EntryMessage:
    """A committed entry as an observer sees it: its ID and its model message (R90, R96).

    ``after_tools`` gets the round's tool-calling assistant entry and the result
    entries, so an observer can name them (cite, fork at, or link an entry) as
    well as read them.
    """

    entry_id: int
    message: JsonObject


@dataclass(frozen=True, slots=True)
class ToolBlock:
    """What a ``before_tool`` hook returns to block a call (R93)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Continue:
    """What an ``on_yield`` hook returns to continue the run with more input (R65)."""

    content: str


HOOK_NAMES: Mapping[str, frozenset[str]] = {
    "pi.generation": frozenset({"before_request", "after_response", "on_yield", "after_tools"}),
    "pi.tool": frozenset({"before_tool", "after_tool", "on_abort"}),
    "pi.compaction": frozenset({"before_compact"}),
}
"""The callbacks each built-in task asks for (R117 and the table of 2.15).

Every callback receives the asking task's ``HarnessRuntime`` as its last argument
and may be sync or async:

- ``before_request(messages, runtime)``: return replacement messages for this
  request only, or ``None``;
- ``after_response(message, runtime)``, ``after_tools(assistant, results,
  runtime)``: observers; ``after_tools`` gets ``EntryMessage`` values (the
  tool-calling assistant entry, then the result entries in call order, R90);
- ``on_yield(answer, runtime)``: return ``Continue(content)`` to go on (R65);
- ``before_tool(call, runtime)``: return ``ToolBlock(reason)`` to block, a dict
  to replace the arguments, or ``None`` (R93);
- ``after_tool(call, result, runtime)`` / ``on_abort(call, result, runtime)``:
  return a replacement ``ToolResult`` or ``None`` (R96, R101);
- ``before_compact(info, runtime)``: return ``{"decline": True}`` or
  ``{"summary": text}`` to decide, or ``None`` (R110).
"""


@dataclass(frozen=True, eq=False)
class HookSet:
    """Callbacks an extension registers for one task. Build it with ``hook``."""

    task: str
    callbacks: Mapping[str, Callable[..., Any]]


def hook(task: str, **callbacks: Callable[..., Any]) -> HookSet:
    """Register hooks for a task (R117).

    Args:
        task: ``pi.generation``, ``pi.tool``, ``pi.compaction``, or an extension task.
        **callbacks: For example ``before_tool=fn``. Built-in tasks accept only the
            names of ``HOOK_NAMES``.

    Returns:
        The registration.

    Raises:
        ValueError: For a callback name the built-in task does not know.
    """
    known = HOOK_NAMES.get(task)
    if known is not None:
        unknown = sorted(set(callbacks) - known)
        if unknown:
            raise ValueError(
                f"Task {task} has no hook {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
    return HookSet(task, dict(callbacks))


@dataclass(frozen=True, eq=False)
class ToolWrapper:
    """Transforms the tool named ``target`` at resolution time (R30, R31)."""

    target: str
    wrap: Callable[[Tool[Any]], Tool[Any]]


@dataclass(frozen=True, eq=False)
class SectionWrapper:
    """Transforms the section keyed ``target`` at resolution time (R30, R31)."""

    target: str
    wrap: Callable[[Section], Section]


def wrap_tool(target: str, wrap: Callable[[Tool[Any]], Tool[Any]]) -> ToolWrapper:
    """Wrap another extension's tool; the wrapper must keep the tool's name (R31)."""
    return ToolWrapper(target, wrap)


def wrap_section(target: str, wrap: Callable[[Section], Section]) -> SectionWrapper:
    """Wrap another extension's section; the wrapper must keep the key (R31)."""
    return SectionWrapper(target, wrap)


@dataclass(frozen=True, eq=False)
class Extension:
    """A named bundle of tools, sections, hooks, wrappers and tasks. See ``define_extension``."""

    name: str
    tools: tuple[Tool[Any], ...] = ()
    sections: tuple[Section, ...] = ()
    hooks: tuple[HookSet, ...] = ()
    wraps: tuple[ToolWrapper | SectionWrapper, ...] = ()
    tasks: tuple[Any, ...] = ()
    """``HarnessTask`` definitions (``define_task``)."""


def define_extension(
    name: str,
    *,
    tools: Sequence[Tool[Any]] = (),
    sections: Sequence[Section] = (),
    hooks: Sequence[HookSet] = (),
    wraps: Sequence[ToolWrapper | SectionWrapper] = (),
    tasks: Sequence[Any] = (),
) -> Extension:
    """Bundle an extension (R32 checks it when it is installed).

    Args:
        name: Unique among installed extensions; installing the same name replaces
            the installed one in place.
        tools: Tools, unique by name within the extension.
        sections: Prompt sections, unique by key within the extension.
        hooks: Hook registrations.
        wraps: Tool and section wrappers.
        tasks: Durable task definitions made with ``define_task``.

    Returns:
        The extension.

    Raises:
        ValueError: For an empty name, or duplicate tool names or section keys.
    """
    extension = Extension(
        name, tuple(tools), tuple(sections), tuple(hooks), tuple(wraps), tuple(tasks)
    )
    check_extension(extension)
    return extension


def check_extension(extension: Extension) -> None:
    """Check the rules one extension keeps on its own (R32).

    ``define_extension`` and ``Registry.install`` both call it, so an extension
    built by hand is held to the same rules.

    Raises:
        ValueError: For an empty name, duplicate tool names or section keys, or a
            malformed or reserved section key.
    """
    name = extension.name
    if not name:
        raise ValueError("An extension needs a non-empty name")
    _unique([t.name for t in extension.tools], f"Extension {name} has two tools named")
    _unique([s.key for s in extension.sections], f"Extension {name} has two sections keyed")
    for sec in extension.sections:
        _check_section_key(sec.key)


def _check_section_key(key: str) -> None:
    if not _SECTION_KEY.match(key):
        raise ValueError(f"Section key {key!r} must match ^[a-z][a-z0-9_-]*$")
    if key == "instructions":
        raise ValueError("Section key 'instructions' is reserved for the agent's instructions")


def _unique(names: list[str], message: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{message} {name!r}")
        seen.add(name)
