"""The prompt that system messages replay to: ``PromptState`` and ``replay_prompt`` (R79).

Below the context's derivation, which keeps each view's replayed prompt
(``ContextView.prompt``) and grows it with the view: a request's planning reads the
shown sections and tools without walking the context again (issue 14).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pi_durable_tui.storage import JsonObject


@dataclass(slots=True)
class PromptState:
    """The prompt replayed from system messages (R79).

    Attributes:
        sections: Rendered section texts by key, in prompt order.
        tools: Tool declarations by name, in offered order.
        content: Non-empty ``content`` texts of the replayed messages, in order.
    """

    sections: dict[str, str] = field(default_factory=dict)
    tools: dict[str, JsonObject] = field(default_factory=dict)
    content: list[str] = field(default_factory=list)

    @property
    def tool_specs(self) -> list[JsonObject]:
        """The offered tool declarations, in order."""
        return list(self.tools.values())

    def copy(self) -> PromptState:
        """A copy to apply more messages to (the texts and specs are shared, never changed)."""
        return PromptState(dict(self.sections), dict(self.tools), list(self.content))

    def extended(self, messages: Iterable[JsonObject]) -> PromptState:
        """This state after ``messages`` too: itself when none of them is a system message.

        A state is shared between the views grown from one another, so it is
        copied before the first change, never changed in place.
        """
        grown: PromptState | None = None
        for message in messages:
            if message.get("role") == "system":
                if grown is None:
                    grown = self.copy()
                grown.apply(message)
        return self if grown is None else grown

    def text(self) -> str:
        """Return the prompt text: the content texts, then the sections, blank-line separated."""
        return "\n\n".join(part for part in (*self.content, *self.sections.values()) if part)

    def apply(self, message: JsonObject) -> None:
        """Apply one system message in place (R79).

        Args:
            message: A system message.
        """
        content = message.get("content")
        if isinstance(content, str) and content:
            self.content.append(content)
        for key, value in (message.get("sections") or {}).items():
            if value is None:
                self.sections.pop(key, None)
            else:
                self.sections[key] = value
        for removed in message.get("tools_removed") or ():
            self.tools.pop(removed_tool_name(removed), None)
        for spec in message.get("tools_added") or ():
            self.tools[spec["name"]] = spec


def replay_prompt(messages: Iterable[JsonObject]) -> PromptState:
    """Replay the system messages among ``messages`` in order (R79).

    Args:
        messages: Context messages; only those with ``role: "system"`` count.

    Returns:
        The resulting sections, tools and content.
    """
    state = PromptState()
    for message in messages:
        if message.get("role") == "system":
            state.apply(message)
    return state


def removed_tool_name(removed: Any) -> str:
    """The name a ``tools_removed`` item names: ``{"name": ...}`` (R80), or a bare name.

    Args:
        removed: One item of a stored ``tools_removed`` list.

    Returns:
        The tool's name.
    """
    return str(removed["name"]) if isinstance(removed, dict) else str(removed)
