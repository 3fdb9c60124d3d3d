"""System prompt sections and dynamic tools as transcript patches (R77-R82).

There is no durable prompt state: the prompt a request sees is what the
``pi.system`` messages of its context replay to (``replay_prompt``, R79; kept by
each view as ``ContextView.prompt``), and
before each request the generation compares that with what the agent wants now
and appends only the difference (``plan_system_entries``, R77, R80, R81).

A system message is a plain dict (harness formats, not an ``ai`` type)::

    {"role": "system", "content": "",
     "sections": {"<key>": "<rendered text>" | None, ...},
     "tools_added": [ToolSpec, ...], "tools_removed": [{"name": "<name>"}, ...]}

Key order is meaningful: a section string adds or replaces that key in place,
``None`` removes it (a later re-add appends at the end), and in one message tool
removals apply before additions (an addition of an offered name replaces it in
place). A non-empty ``content`` appends instructions ahead of the sections.
Tool declarations are compared and written as ``{name, description,
parameters}`` only, without application metadata, and a removed tool as
``{name}`` (R80); a bare name (what older stores hold) replays the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pi_durable_tui.harness.context._context import ContextView
from pi_durable_tui.storage import JsonObject

SYSTEM_ENTRY_KIND = "pi.system"


@dataclass(frozen=True, slots=True)
class SystemEntryDraft:
    """One ``pi.system`` entry to append: its single system message and any context edits.

    Attributes:
        model: A list holding exactly one system message (the entry's ``model``).
        edits: ``omit`` edits of earlier ``pi.system`` entries (R81), or ``None``.
    """

    model: list[JsonObject]
    edits: list[JsonObject] | None = None


def render_section(key: str, text: str, tag: bool = True) -> str:
    """Render one prompt section's text as it is stored (R78).

    Args:
        key: The section key.
        text: What the section rendered.
        tag: Whether to wrap the text in ``<key>`` tags (the default).

    Returns:
        The text between a ``<key>`` line and a ``</key>`` line when tagged, else ``text``.
    """
    return f"<{key}>\n{text}\n</{key}>" if tag else text


def tool_declaration(spec: JsonObject) -> JsonObject:
    """Return a tool's declaration without application metadata (R80).

    Args:
        spec: A ToolSpec dict, possibly with extra keys.

    Returns:
        ``{"name", "description", "parameters"}``.

    Raises:
        ValueError: When ``name`` is missing or not a non-empty string.
    """
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"A tool declaration needs a non-empty string 'name', got {spec!r}")
    return {
        "name": name,
        "description": spec.get("description", ""),
        "parameters": spec.get("parameters", {"type": "object", "properties": {}}),
    }


def system_message(
    sections: dict[str, str | None] | None = None,
    tools_added: Sequence[JsonObject] = (),
    tools_removed: Sequence[str] = (),
) -> JsonObject:
    """Build a stored system message (harness formats).

    Args:
        sections: Section patches in order (``None`` removes a key).
        tools_added: Tool declarations to add, in order.
        tools_removed: Names of tools to remove, stored as ``{"name": ...}`` (R80).

    Returns:
        The message dict, with every key present.
    """
    return {
        "role": "system",
        "content": "",
        "sections": dict(sections or {}),
        # REMINDER: shares the parts of a tool's declaration (``Tool.declaration``):
        # read-only here, and the commit that stores it copies it (``Tx.append``).
        "tools_added": [tool_declaration(spec) for spec in tools_added],
        "tools_removed": [{"name": name} for name in tools_removed],
    }


def plan_system_entries(
    view: ContextView,
    desired_sections: Sequence[tuple[str, str]],
    desired_tools: Sequence[JsonObject],
) -> list[SystemEntryDraft]:
    """Plan the ``pi.system`` entries that make the context's prompt what is desired (R77-R81).

    - Head rebaseline (R81), taking precedence: when the view has a head marker and
      no ``pi.system`` entry after it, one complete baseline (every desired
      section, every tool) with ``omit`` edits for every earlier ``pi.system``
      entry still in the range, even when the values are unchanged.
    - Otherwise sections (R80): the minimal patch (changed values, ``None`` for
      removals) when that yields the desired order; else two entries, one
      removing every shown section and one re-adding every desired one in order.
    - Tools (R80): a changed declaration is removed and re-added in the same
      message; when appending cannot give the desired order, every offered tool
      is removed and every desired one re-added. Tool changes ride on the last
      planned entry, or on an entry of their own.

    Args:
        view: The context the next request is derived from.
        desired_sections: ``(key, rendered text)`` pairs in prompt order (see
            ``render_section``).
        desired_tools: Tool specs in offered order.

    Returns:
        The entries to append in one commit, oldest first; ``[]`` when the
        prompt is unchanged (or when nothing is shown and nothing desired).

    Raises:
        ValueError: When a section key or tool name is given twice, or a tool
            has no name.
    """
    sections = _unique_sections(desired_sections)
    tools = _unique_tools(desired_tools)
    head = view.head
    if head is not None and not any(
        entry.kind == SYSTEM_ENTRY_KIND and entry.id > head.id for entry in view.entries
    ):
        return _rebaseline(view, sections, tools)
    shown = view.prompt
    patches = _plan_sections(shown.sections, sections)
    added, removed = _plan_tools(shown.tool_specs, tools)
    if not added and not removed:
        return [SystemEntryDraft([system_message(patch)]) for patch in patches]
    if not patches:
        return [SystemEntryDraft([system_message(None, added, removed)])]
    drafts = [SystemEntryDraft([system_message(patch)]) for patch in patches[:-1]]
    drafts.append(SystemEntryDraft([system_message(patches[-1], added, removed)]))
    return drafts


def _rebaseline(
    view: ContextView, sections: dict[str, str], tools: list[JsonObject]
) -> list[SystemEntryDraft]:
    earlier = [entry.id for entry in view.entries if entry.kind == SYSTEM_ENTRY_KIND]
    if not earlier and not sections and not tools:
        return []  # nothing shown (no system entry in range) and nothing desired
    edits = [{"target": entry_id, "action": "omit"} for entry_id in earlier]
    message = system_message(dict[str, str | None](sections), tools)
    return [SystemEntryDraft([message], edits or None)]


def _plan_sections(shown: dict[str, str], desired: dict[str, str]) -> list[dict[str, str | None]]:
    patched_order = [key for key in shown if key in desired]
    patched_order += [key for key in desired if key not in shown]
    if patched_order != list(desired):
        removal: dict[str, str | None] = dict.fromkeys(shown)
        return [removal, dict[str, str | None](desired)]
    patch: dict[str, str | None] = {}
    for key, value in shown.items():
        wanted = desired.get(key)
        if wanted != value:
            patch[key] = wanted
    for key, value in desired.items():
        if key not in shown:
            patch[key] = value
    return [patch] if patch else []


def _plan_tools(
    offered: list[JsonObject], desired: list[JsonObject]
) -> tuple[list[JsonObject], list[str]]:
    wanted = {spec["name"]: spec for spec in desired}
    kept = [spec["name"] for spec in offered if wanted.get(spec["name"]) == tool_declaration(spec)]
    added = [spec for spec in desired if spec["name"] not in kept]
    replayed = kept + [spec["name"] for spec in added]
    if replayed != list(wanted):
        return desired, [spec["name"] for spec in offered]
    removed = [spec["name"] for spec in offered if spec["name"] not in kept]
    return added, removed


def _unique_sections(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    sections: dict[str, str] = {}
    for key, text in pairs:
        if key in sections:
            raise ValueError(f"Section {key!r} is given twice; section keys must be unique")
        sections[key] = text
    return sections


def _unique_tools(specs: Sequence[Any]) -> list[JsonObject]:
    tools: dict[str, JsonObject] = {}
    for spec in specs:
        declaration = tool_declaration(spec)
        if declaration["name"] in tools:
            raise ValueError(
                f"Tool {declaration['name']!r} is given twice; tool names must be unique"
            )
        tools[declaration["name"]] = declaration
    return list(tools.values())
