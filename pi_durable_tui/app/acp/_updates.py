"""``session/update`` notifications from the screen's view model (issue 15).

An editor sees what a terminal sees: ``Transcript`` reads the same
``ScreenModel`` (its blocks and task tree) and turns what changed since it last
looked into ACP updates:

- assistant text: ``agent_message_chunk`` with the new part of a block's text
  only (the streaming ``live`` block grows; when its entry is committed, the
  entry's block continues from what ``live`` had sent, so nothing is sent twice);
- thinking: ``agent_thought_chunk`` the same way;
- a tool card first seen: ``tool_call`` (title, kind, status, raw input); a card
  whose status or output changed: ``tool_call_update``;
- the task tree while a turn runs: ``plan`` (one entry per live task);
- ``told``: the updates of one block of the history, recording nothing
  (``_history`` replays a whole stored session a page at a time with it), and
  ``mark_seen`` then counts the view model's window as told.

Every string is the view model's, already stripped of control sequences where
the values are built (``app._view`` is ``TerminalSafe``, issue 13), and passes
the session's secret redactor here (the connection redacts each line again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pi_durable_tui.app._ports import ScreenModel
from pi_durable_tui.app._view import Block, TaskNode, ToolCard

_STATUS = {
    "streaming": "pending",
    "pending": "pending",
    "running": "in_progress",
    "done": "completed",
}
"""ACP tool-call statuses by card status; every other card status is ``failed``."""

_KIND = {"read": "read", "write": "edit", "edit": "edit", "bash": "execute"}
"""ACP tool kinds by tool name; others are ``search`` when named so, else ``other``."""


def tool_status(card: ToolCard) -> str:
    """The ACP status of a tool card."""
    return _STATUS.get(card.status, "failed")


def _kind(name: str) -> str:
    return _KIND.get(name, "search" if name in ("grep", "find", "ls", "glob") else "other")


def _title(card: ToolCard) -> str:
    detail = card.command or card.path
    return f"{card.name}: {detail}" if detail else card.name


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


class Transcript:
    """What one ACP session has been told of a ``ScreenModel``.

    Args:
        model: The shown conversation's view model.
        redact: The session's secret redactor (``SecretRedactor.text``).
    """

    def __init__(self, model: ScreenModel, redact: Callable[[str], str]) -> None:
        self.model = model
        self.redact = redact
        """The session's secret redactor."""
        self._sent: dict[str, int] = {}  # text characters sent, by block key
        self._thought: dict[str, int] = {}  # thinking characters sent, by block key
        self._cards: dict[str, tuple[str, str]] = {}  # (status, output) sent, by call id
        self._plan: list[dict[str, str]] | None = None
        self.stop_reason = ""
        """The stop reason of the newest committed assistant message told."""

    def mark_seen(self) -> None:
        """Count everything loaded now as told (a new turn reports only what follows)."""
        for block in self.model.blocks:
            self._sent[block.key] = len(block.text)
            self._thought[block.key] = len(_thinking(block))
            if block.tool is not None:
                self._cards[block.tool.call_id] = (tool_status(block.tool), block.tool.output)

    def told(self, block: Block) -> list[dict[str, Any]]:
        """The updates telling one block whole, without remembering it (bounded memory)."""
        if block.kind == "user" and block.text:
            chunk = _text(self.redact(block.text))
            return [{"sessionUpdate": "user_message_chunk", "content": chunk}]
        if block.tool is not None:
            return [_card_update(block.tool, None, self.redact)]
        if block.kind != "assistant":
            return []
        updates = []
        thinking = _thinking(block)
        if thinking:
            chunk = _text(self.redact(thinking))
            updates.append({"sessionUpdate": "agent_thought_chunk", "content": chunk})
        if block.text:
            chunk = _text(self.redact(block.text))
            updates.append({"sessionUpdate": "agent_message_chunk", "content": chunk})
        if block.stop_reason:
            self.stop_reason = block.stop_reason
        return updates

    def changes(self) -> Iterator[dict[str, Any]]:
        """The updates for what changed since the last call (or ``mark_seen``)."""
        blocks = self.model.blocks
        for block in blocks:
            if block.kind in ("assistant", "tool"):
                yield from self._block(block)

    def plan(self) -> dict[str, Any] | None:
        """A ``plan`` update when the task tree changed since the last one, else ``None``."""
        entries = [
            {
                "content": self.redact(node.label),
                "priority": "medium",
                "status": "pending" if node.status == "pending" else "in_progress",
            }
            for node in _nodes(self.model.tasks)
        ]
        if entries == self._plan:
            return None
        self._plan = entries
        return {"sessionUpdate": "plan", "entries": entries}

    def _block(self, block: Block) -> Iterator[dict[str, Any]]:
        if block.tool is not None:
            update = self._card(block.tool)
            if update is not None:
                yield update
            return
        if block.key not in self._sent and block.key != "live" and "live" in self._sent:
            # The live message was committed as this entry: go on from what live sent.
            self._sent[block.key] = self._sent.pop("live")
            self._thought[block.key] = self._thought.pop("live", 0)
        if block.stop_reason:
            self.stop_reason = block.stop_reason
        thinking = _thinking(block)
        told = self._thought.get(block.key, 0)
        if len(thinking) > told:
            self._thought[block.key] = len(thinking)
            yield {
                "sessionUpdate": "agent_thought_chunk",
                "content": _text(self.redact(thinking[told:])),
            }
        told = self._sent.get(block.key, 0)
        if len(block.text) > told:
            self._sent[block.key] = len(block.text)
            yield {
                "sessionUpdate": "agent_message_chunk",
                "content": _text(self.redact(block.text[told:])),
            }

    def _card(self, card: ToolCard) -> dict[str, Any] | None:
        status = tool_status(card)
        before = self._cards.get(card.call_id)
        if before == (status, card.output):
            return None
        self._cards[card.call_id] = (status, card.output)
        return _card_update(card, before, self.redact)


def _card_update(
    card: ToolCard, before: tuple[str, str] | None, redact: Callable[[str], str]
) -> dict[str, Any]:
    """``tool_call`` for a card first told (``before`` ``None``), else ``tool_call_update``."""
    status = tool_status(card)
    update: dict[str, Any] = {"toolCallId": card.call_id, "status": status}
    output = card.output or card.error or card.result_text
    if output and status in ("completed", "failed", "in_progress"):
        update["content"] = [{"type": "content", "content": _text(redact(output))}]
    if before is None:
        update.update(
            sessionUpdate="tool_call",
            title=redact(_title(card)),
            kind=_kind(card.name),
            rawInput=card.arguments,
        )
    else:
        update["sessionUpdate"] = "tool_call_update"
    return update


def _thinking(block: Block) -> str:
    return "\n\n".join(part.text for part in block.thinking if not part.redacted)


def _nodes(nodes: Sequence[TaskNode]) -> Iterator[TaskNode]:
    for node in nodes:
        yield node
        yield from _nodes(node.children)
