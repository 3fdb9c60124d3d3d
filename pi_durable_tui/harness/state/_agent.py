"""A conversation's agent: the stored choices (``pi.agent``), ``configure``, and resolution.

``configure(tx, conversation_id, change)`` replaces whole fields (R29): a value
replaces, ``None`` clears, ``UNSET`` (the default) leaves. Extensions and tools are
stored as names; ``ExtensionEdit(add, remove)`` always edits the host default
selection. Nothing checks that stored names are installed.

``resolve_agent`` turns the stored choices, the installed extensions and the
settings into what a request uses (R30, R31): the selected extensions in order,
their tools (a later same-name tool replacing an earlier one in place, then the
tool wrappers, then the tool filter), their sections (same-key replacement, then
section wrappers; the agent's ``instructions`` render last as the tagged section
``instructions``), their hooks by task name, the model, the thinking level
(``off`` when unset) and the cwd. A wrapper that raises, or returns a tool or
section with another name, drops its target for that resolution and is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pi_durable_tui.ai import ModelRef, ThinkingLevel
from pi_durable_tui.harness.extensions import (
    Extension,
    Section,
    SectionWrapper,
    Tool,
    ToolWrapper,
)
from pi_durable_tui.harness.state._docs import AGENT_DOC
from pi_durable_tui.kernel import Report, Tx
from pi_durable_tui.storage.json_ops import JsonObject


class _Unset:
    """The type of ``UNSET``."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()
"""Leave a field of the agent as it is (R29)."""


@dataclass(frozen=True, slots=True)
class ExtensionEdit:
    """Edit the host default extension selection: append ``add``, drop ``remove`` (R30)."""

    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolRemoval:
    """Offer every selected tool except these (R30)."""

    remove: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentChange:
    """A change to a conversation's agent. Unset fields are left alone; ``None`` clears.

    Args:
        model: The model to use.
        thinking_level: The reasoning level (``off`` when cleared).
        extensions: Names (or extensions) selecting exactly those, in order; or an
            ``ExtensionEdit`` of the host default.
        tools: Names (or tools) offered, in order; or a ``ToolRemoval``.
        instructions: Text rendered last in the system prompt.
        cwd: The working directory for the conversation's environment.
    """

    model: ModelRef | _Unset | None = UNSET
    thinking_level: ThinkingLevel | _Unset | None = UNSET
    extensions: Sequence[str | Extension] | ExtensionEdit | _Unset | None = UNSET
    tools: Sequence[str | Tool[Any]] | ToolRemoval | _Unset | None = UNSET
    instructions: str | _Unset | None = UNSET
    cwd: str | _Unset | None = UNSET

    def to_json(self) -> dict[str, Any]:
        """Return the set fields as stored JSON (``None`` for cleared ones)."""
        data: dict[str, Any] = {}
        if not isinstance(self.model, _Unset):
            data["model"] = (
                None
                if self.model is None
                else {"provider": self.model.provider, "model_id": self.model.model_id}
            )
        if not isinstance(self.thinking_level, _Unset):
            data["thinking_level"] = self.thinking_level
        if not isinstance(self.extensions, _Unset):
            data["extensions"] = _selection(self.extensions)
        if not isinstance(self.tools, _Unset):
            data["tools"] = _selection(self.tools)
        if not isinstance(self.instructions, _Unset):
            data["instructions"] = self.instructions
        if not isinstance(self.cwd, _Unset):
            data["cwd"] = self.cwd
        return data


def _selection(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, ExtensionEdit):
        return {"add": list(value.add), "remove": list(value.remove)}
    if isinstance(value, ToolRemoval):
        return {"remove": list(value.remove)}
    return [item if isinstance(item, str) else item.name for item in value]


def apply_change(stored: JsonObject, change: AgentChange) -> None:
    """Apply a change to a ``pi.agent`` draft in place (R29)."""
    for key, value in change.to_json().items():
        if value is None:
            stored.pop(key, None)
        else:
            stored[key] = value


async def configure(tx: Tx, conversation_id: int, change: AgentChange) -> None:
    """Change a conversation's agent inside a commit (R29).

    Args:
        tx: The commit.
        conversation_id: The conversation.
        change: The fields to replace or clear.
    """
    draft = await tx.doc(AGENT_DOC, conversation_id)
    apply_change(draft, change)


def stored_model(stored: Mapping[str, Any]) -> ModelRef | None:
    """Return the model a stored ``pi.agent`` names, if any."""
    model = stored.get("model")
    if isinstance(model, dict) and model.get("provider") and model.get("model_id"):
        return ModelRef(model["provider"], model["model_id"])
    return None


@dataclass(frozen=True, slots=True)
class ResolvedAgent:
    """What one request or tool call uses, resolved from ``pi.agent`` (R30)."""

    model: ModelRef | None
    thinking_level: ThinkingLevel
    cwd: str | None
    instructions: str | None
    extensions: tuple[Extension, ...]
    tools: tuple[Tool[Any], ...]
    sections: tuple[Section, ...]

    def tool(self, name: str) -> Tool[Any] | None:
        """Return the offered tool with this name."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None

    def hooks(self, task: str, name: str) -> list[Callable[..., Any]]:
        """Return the callbacks named ``name`` for ``task``, in extension order (R117)."""
        found: list[Callable[..., Any]] = []
        for extension in self.extensions:
            for registration in extension.hooks:
                if registration.task == task and name in registration.callbacks:
                    found.append(registration.callbacks[name])
        return found


def resolve_agent(
    stored: Mapping[str, Any] | None,
    installed: Sequence[Extension],
    default_extensions: Sequence[str] | None,
    report: Callable[[Report], None],
) -> ResolvedAgent:
    """Resolve a conversation's agent (R30, R31).

    Args:
        stored: The ``pi.agent`` value (``None`` means ``{}``).
        installed: The installed extensions in install order.
        default_extensions: ``settings.extensions``: the host default selection,
            or ``None`` for every installed extension.
        report: Receives wrapper failures (R31).

    Returns:
        The resolved agent.
    """
    stored = stored or {}
    by_name = {extension.name: extension for extension in installed}
    base = list(default_extensions) if default_extensions is not None else list(by_name)
    names = _select(base, stored.get("extensions"))
    extensions = tuple(by_name[name] for name in names if name in by_name)

    tools: dict[str, Tool[Any]] = {}
    sections: dict[str, Section] = {}
    for extension in extensions:
        for tool in extension.tools:
            tools[tool.name] = tool  # REMINDER: dict keeps the first position (R30).
        for sec in extension.sections:
            sections[sec.key] = sec
    for extension in extensions:
        for wrapper in extension.wraps:
            if isinstance(wrapper, ToolWrapper) and wrapper.target in tools:
                _apply_wrapper(tools, wrapper.target, wrapper.wrap, "name", extension, report)
            elif isinstance(wrapper, SectionWrapper) and wrapper.target in sections:
                _apply_wrapper(sections, wrapper.target, wrapper.wrap, "key", extension, report)
    offered = _filter_tools(tools, stored.get("tools"))

    thinking: ThinkingLevel = stored.get("thinking_level") or "off"
    instructions = stored.get("instructions")
    cwd = stored.get("cwd")
    return ResolvedAgent(
        model=stored_model(stored),
        thinking_level=thinking,
        cwd=cwd if isinstance(cwd, str) else None,
        instructions=instructions if isinstance(instructions, str) else None,
        extensions=extensions,
        tools=tuple(offered),
        sections=tuple(sections.values()),
    )


def _select(base: list[str], selection: Any) -> list[str]:
    if isinstance(selection, list):
        chosen = [name for name in selection if isinstance(name, str)]
    elif isinstance(selection, dict):
        chosen = base + [n for n in selection.get("add", []) if isinstance(n, str)]
        removed = set(selection.get("remove", []))
        chosen = [name for name in chosen if name not in removed]
    else:
        chosen = base
    return list(dict.fromkeys(chosen))  # duplicates keep their first position


def _apply_wrapper(
    items: dict[str, Any],
    target: str,
    wrap: Callable[[Any], Any],
    attribute: str,
    extension: Extension,
    report: Callable[[Report], None],
) -> None:
    try:
        wrapped = wrap(items[target])
    except Exception as error:
        del items[target]
        report(Report("wrapper_failed", f"Wrapper of {target} in {extension.name} raised: {error}"))
        return
    if getattr(wrapped, attribute, None) != target:
        del items[target]
        report(
            Report(
                "wrapper_failed",
                f"Wrapper of {target} in {extension.name} returned another {attribute}",
            )
        )
        return
    items[target] = wrapped


def _filter_tools(tools: dict[str, Tool[Any]], selection: Any) -> list[Tool[Any]]:
    if isinstance(selection, list):
        names = list(dict.fromkeys(n for n in selection if isinstance(n, str)))
        return [tools[name] for name in names if name in tools]
    if isinstance(selection, dict):
        removed = set(selection.get("remove", []))
        return [tool for name, tool in tools.items() if name not in removed]
    return list(tools.values())
