"""Transcript blocks from committed entries and ``pi.live`` (issue 8; reference 5.3).

Pure functions: the view model feeds them stored entries (oldest first) and the
shown conversation's ``pi.live`` value, and gets ``Block`` values back.

- ``pi.user`` becomes a ``user`` block; ``pi.assistant`` an ``assistant`` block
  (text as Markdown, thinking parts) followed by one ``tool`` block per tool call,
  keyed ``e<assistant id>/<call id>``; a failed attempt is an ``error`` block and
  an aborted one carries the ``[aborted]`` mark, or ``[interrupted]`` when a crash
  cut it and the next attempt writes the answer again (R84; the screen folds it to
  one line, so the answer does not read twice, issue 12); ``pi.compaction`` is a
  ``compaction`` block, ``pi.reset`` a ``reset`` block, ``pi.system`` a ``system``
  block (hidden unless verbose).
- ``pi.tool-result`` fills the card of its call: ``done``, ``error``,
  ``interrupted`` or ``aborted`` (by the error diagnostic's code), its output (the
  result text the model received, which replaces the streamed output) and
  details (a ``read`` range, a ``write`` preview, an ``edit`` diff, ``bash``'s
  exit code and duration or the background job it runs on as, a subagent's
  conversation).
- ``pi.shell`` (a command the user ran, ``!cmd``) is a ``shell`` block holding a
  bash card; ``pi.live.shell`` the same card while it runs (``live/shell``).
- ``pi.live`` adds what streams: the partial assistant message (``live``), cards
  of calls the stream has produced (``live/<call id>``), and the running slots'
  committed output on their cards.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from pi_durable_tui.app._terminal_text import terminal_safe
from pi_durable_tui.app._view import Block, ThinkingPart, ToolCard, ToolStatus
from pi_durable_tui.harness import INTERRUPTED_PARTIAL
from pi_durable_tui.storage import EntryRecord

_LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".go": "go",
    ".md": "markdown",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".sh": "bash",
    ".html": "html",
    ".css": "css",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".java": "java",
    ".rb": "ruby",
    ".sql": "sql",
    ".txt": "",
}


def _obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}``."""
    return value if isinstance(value, dict) else {}


def entry_message(entry: EntryRecord) -> dict[str, Any]:
    """The single message a stored entry contributes, or ``{}``."""
    if entry.model and isinstance(entry.model[0], dict):
        return entry.model[0]
    return {}


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    )


def _strip_harness(text: str) -> str:
    """The model-visible text without the trailing ``<harness>`` block (shown as the error)."""
    marker = text.rfind("<harness>\n")
    return (
        text[:marker].rstrip("\n") if marker >= 0 and text.rstrip().endswith("</harness>") else text
    )


def language_of(path: str) -> str:
    """A syntax name for a file path, for highlighting a preview."""
    return _LANGUAGES.get(os.path.splitext(path)[1].lower(), "")


def card_for_call(call: Mapping[str, Any], status: ToolStatus) -> ToolCard:
    """A tool card from a call's name and arguments, before any result."""
    arguments = _obj(call.get("arguments"))
    name = str(call.get("name", ""))
    path = str(arguments.get("path", "")) if isinstance(arguments.get("path"), str) else ""
    card = ToolCard(call_id=str(call.get("id", "")), name=name, status=status, arguments=arguments)
    if name == "bash":
        card = replace(card, command=str(arguments.get("command", "")))
    elif name == "write":
        content = str(arguments.get("content", ""))
        card = replace(
            card,
            path=path,
            preview=content[:8192],
            language=language_of(path),
            size_bytes=len(content.encode("utf-8", "surrogatepass")),
        )
    elif path:
        card = replace(card, path=path)
    if name == "read":
        offset, limit = arguments.get("offset"), arguments.get("limit")
        if isinstance(offset, int) or isinstance(limit, int):
            first = offset if isinstance(offset, int) else 1
            card = replace(
                card,
                line_range=f"{first}-{first + limit - 1}"
                if isinstance(limit, int)
                else f"{first}-",
            )
    return card


def apply_result(card: ToolCard, entry: EntryRecord) -> ToolCard:
    """Fill a card from its ``pi.tool-result`` entry."""
    message = entry_message(entry)
    data = entry.data if isinstance(entry.data, dict) else {}
    diagnostics = [d for d in data.get("diagnostics") or [] if isinstance(d, dict)]
    errors = [d for d in diagnostics if d.get("severity") == "error"]
    status: ToolStatus = "done"
    error = ""
    if message.get("is_error"):
        codes = {d.get("code") for d in errors}
        status = (
            "interrupted"
            if "interrupted" in codes
            else "aborted"
            if "aborted" in codes
            else "error"
        )
        error = "; ".join(str(d.get("message", "")) for d in errors)
    details = _obj(message.get("details"))
    text = _strip_harness(_text(message))
    card = replace(
        card,
        status=status,
        error=error,
        result_text=text,
        # REMINDER: what the model received, not the last live output: that one was
        # committed up to 100 ms before the end and misses the final lines (issue 12).
        output=text or card.output,
        duration_ms=message.get("duration_ms") or details.get("duration_ms"),
    )
    if card.name == "bash":
        job_id, pid = details.get("job_id"), details.get("pid")
        card = replace(
            card,
            exit_code=details.get("exit_code"),
            job_id=job_id if isinstance(job_id, int) else None,
            job_pid=pid if isinstance(pid, int) else None,
        )
    elif card.name == "edit":
        card = replace(card, diff=str(details.get("patch") or details.get("diff") or ""))
    elif card.name == "read" and "first_line" in details:
        first = int(details["first_line"])
        shown = int(details.get("shown_lines") or 0)
        card = replace(card, line_range=f"{first}-{first + max(shown, 1) - 1}")
    elif card.name == "write" and "size" in details:
        card = replace(card, size_bytes=int(details["size"]))
    if isinstance(details.get("conversation_id"), int):
        card = replace(card, conversation_id=details["conversation_id"])
    return card


def apply_slot(card: ToolCard, slot: Mapping[str, Any]) -> ToolCard:
    """Show a running slot's committed output and details on its card."""
    status: ToolStatus = "running" if slot.get("status") == "running" else "pending"
    if slot.get("status") == "done":
        return card
    details = _obj(slot.get("details"))
    card = replace(
        card,
        status=status,
        output=str(slot.get("output") or ""),
        dropped_lines=int(slot.get("dropped_lines") or 0),
        dropped_bytes=int(slot.get("dropped_bytes") or 0),
    )
    if isinstance(details.get("conversation_id"), int):
        card = replace(card, conversation_id=details["conversation_id"])
    return card


def assistant_blocks(
    entry_id: int | None, key: str, message: Mapping[str, Any], streaming: bool
) -> list[Block]:
    """The blocks of one assistant message: its text (or error) and one card per call."""
    content = [b for b in message.get("content") or [] if isinstance(b, dict)]
    thinking = tuple(
        ThinkingPart(str(b.get("thinking", "")), bool(b.get("redacted")))
        for b in content
        if b.get("type") == "thinking"
    )
    stop = message.get("stop_reason")
    text = _text(message)
    blocks: list[Block] = []
    timestamp = int(message.get("timestamp") or 0)
    if stop == "error":
        blocks.append(
            Block(
                key,
                "error",
                entry_id,
                text=str(message.get("error_message") or "Model error"),
                detail=text,
                thinking=thinking,
                timestamp_ms=timestamp,
            )
        )
    elif text or thinking or not any(b.get("type") == "tool_call" for b in content):
        mark: Literal["", "interrupted", "aborted"] = ""
        if stop == "aborted":
            # REMINDER: the message the next attempt gave the partial a crash left
            # (R84) is what tells it from one the user aborted (issue 12).
            cut = message.get("error_message") == INTERRUPTED_PARTIAL
            mark = "interrupted" if cut else "aborted"
        blocks.append(
            Block(
                key,
                "assistant",
                entry_id,
                text=text,
                thinking=thinking,
                streaming=streaming,
                mark=mark,
                timestamp_ms=timestamp,
                stop_reason="" if streaming else str(stop or ""),
            )
        )
    not_run = not streaming and stop != "toolUse"
    for call in (b for b in content if b.get("type") == "tool_call"):
        status: ToolStatus = "streaming" if streaming else ("not_run" if not_run else "pending")
        card = card_for_call(call, status)
        if not_run:
            card = replace(card, error="Not run: the answer was interrupted.")
        blocks.append(
            Block(f"{key}/{card.call_id}", "tool", entry_id, tool=card, streaming=streaming)
        )
    return blocks


def entry_blocks(entry: EntryRecord) -> list[Block]:
    """The blocks one stored entry contributes (a tool result fills its card instead)."""
    message = entry_message(entry)
    key = f"e{entry.id}"
    timestamp = int(message.get("timestamp") or 0)
    if entry.kind == "pi.user":
        return [Block(key, "user", entry.id, text=_text(message), timestamp_ms=timestamp)]
    if entry.kind == "pi.assistant":
        return assistant_blocks(entry.id, key, message, streaming=False)
    if entry.kind == "pi.compaction":
        text = _text(message)
        start = text.find("<summary>\n")
        end = text.rfind("\n</summary>")
        summary = text[start + 10 : end] if start >= 0 and end > start else text
        reason = entry.data.get("reason", "") if isinstance(entry.data, dict) else ""
        return [
            Block(
                key,
                "compaction",
                entry.id,
                text=summary,
                detail=str(reason),
                timestamp_ms=timestamp,
            )
        ]
    if entry.kind == "pi.reset":
        return [Block(key, "reset", entry.id, text=_text(message))]
    if entry.kind == "pi.shell":
        return [shell_block(key, entry.id, _obj(entry.data), timestamp)]
    if entry.kind == "pi.system":
        sections = _obj(message.get("sections"))
        changed = ", ".join(sorted(sections)) or "tools"
        return [Block(key, "system", entry.id, text=f"System prompt changed: {changed}")]
    return []


_SHELL_STATUS: dict[str, ToolStatus] = {
    "running": "running",
    "done": "done",
    "aborted": "aborted",
    "interrupted": "interrupted",
    "failed": "error",
}


def shell_block(key: str, entry_id: int | None, data: Mapping[str, Any], timestamp: int) -> Block:
    """The card of a shell command the user ran (``!cmd``): a ``pi.shell`` entry or a live one.

    ``detail`` says when the model does not see it (``!!cmd``).
    """
    status = _SHELL_STATUS.get(str(data.get("status", "")), "done")
    exit_code = data.get("exit_code")
    duration = data.get("duration_ms")
    if status == "done" and isinstance(exit_code, int) and exit_code != 0:
        status = "error"  # shown as a failed bash call is: ✗, then ``exit N``
        data = {**data, "error": ""}
    error = {
        "aborted": "Stopped (Esc).",
        "interrupted": "Interrupted: the app was killed while it ran; it did not run again.",
        "error": str(data.get("error", "It could not run.")),
    }.get(status, "")
    card = ToolCard(
        call_id=key,  # no model call: its key, so it never stands for a tool call's card
        name="bash",
        status=status,
        command=str(data.get("command", "")),
        output=str(data.get("output") or ""),
        dropped_lines=int(data.get("dropped_lines") or 0),
        dropped_bytes=int(data.get("dropped_bytes") or 0),
        exit_code=exit_code if isinstance(exit_code, int) else None,
        duration_ms=duration if isinstance(duration, int) else None,
        error=error,
    )
    detail = "" if data.get("context", True) else "not sent to the model"
    return Block(
        key,
        "shell",
        entry_id,
        tool=card,
        detail=detail,
        streaming=status == "running",
        timestamp_ms=timestamp,
    )


def live_blocks(
    live: Mapping[str, Any], card: Callable[[str], Block | None]
) -> tuple[list[Block], dict[str, Block]]:
    """Blocks of what streams now, and the updated cards of running slots.

    Args:
        live: The ``pi.live`` value of the shown conversation.
        card: The loaded tool-card block of a call ID, if any (looked up only for
            the running slots: every streaming commit calls this).

    Returns:
        ``(live blocks to append at the end, card blocks to replace by key)``.
    """
    generation = live.get("generation")
    appended: list[Block] = []
    if isinstance(generation, dict) and isinstance(generation.get("message"), dict):
        appended = assistant_blocks(None, "live", generation["message"], streaming=True)
    shell = live.get("shell")
    if isinstance(shell, dict):
        appended.append(shell_block("live/shell", None, {**shell, "status": "running"}, 0))
    changed: dict[str, Block] = {}
    for slot in live.get("tools") or []:
        if not isinstance(slot, dict):
            continue
        block = card(str(slot.get("call_id")))
        if block is not None and block.tool is not None and slot.get("status") != "done":
            updated = replace(block, tool=apply_slot(block.tool, slot), streaming=True)
            if updated != block:
                changed[block.key] = updated
    return appended, changed


def status_line(live: Mapping[str, Any], now_ms: float) -> str:
    """The status line from ``pi.live`` (reference 5.3: the first match wins).

    It quotes a provider's error and a tool's name, so it is made terminal-safe
    like every view value (issue 13).
    """
    return terminal_safe(_status(live, now_ms))


def _status(live: Mapping[str, Any], now_ms: float) -> str:
    generation = _obj(live.get("generation"))
    retry = generation.get("retry") if isinstance(generation, dict) else None
    if isinstance(retry, dict):
        seconds = max(0, round((float(retry.get("at", now_ms)) - now_ms) / 1000))
        attempt = int(generation.get("attempt", 1)) + 1
        return f"Retrying in {seconds}s (attempt {attempt}): {retry.get('error', '')}"
    for compaction in live.get("compactions") or []:
        if isinstance(compaction, dict):
            if isinstance(compaction.get("retry"), dict):
                attempt = int(compaction.get("attempt", 1)) + 1
                return f"Retrying {compaction.get('reason')} compaction (attempt {attempt})..."
            return f"Compacting ({compaction.get('reason')})..."
    for slot in live.get("tools") or []:
        if isinstance(slot, dict) and slot.get("status") == "running":
            return f"Running {slot.get('name')}... (esc to abort)"
    shell = live.get("shell")
    if isinstance(shell, dict):
        first = str(shell.get("command", "")).partition("\n")[0]
        return f"Running !{first}... (esc to stop)"
    if "run" in live:
        return "Working... (esc to abort)"
    return ""


def visible(blocks: Sequence[Block], verbose: bool) -> list[Block]:
    """Drop system blocks unless verbose."""
    return [b for b in blocks if verbose or b.kind != "system"]
