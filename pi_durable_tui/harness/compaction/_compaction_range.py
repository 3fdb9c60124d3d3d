"""The pure half of compaction: context size, where to cut, what to summarize (R108-R112).

- ``estimate_tokens`` (R108): the size of the next request, from the newest
  provider-reported usage after the head marker plus estimates of what follows.
- ``select_cut`` (R109): the first entry a summary keeps, the entries it replaces
  and their messages in model order.
- ``serialize_conversation`` (R111): those messages as plain text, so the
  summarizer reads a transcript instead of continuing it.
- ``SUMMARY_SYSTEM_PROMPT`` and ``checkpoint_prompt`` (R111): the summarization
  request's system prompt and user message.
- ``summary_message_text`` (R112): the text of the ``pi.compaction`` entry's user
  message.

Token figures come from ``pi_durable_tui.ai.estimate_message_tokens``; a system
message (not an ``ai`` type) is estimated as a user message holding its prompt
text and tool declarations.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from pi_durable_tui.ai import Message, Model, UserMessage, estimate_message_tokens
from pi_durable_tui.harness.context import ContextView, PromptState, order_tool_results, tool_calls
from pi_durable_tui.storage import EntryRecord, JsonObject

TOOL_RESULT_MAX_CHARS = 2000
"""The longest tool-result text the serialized conversation keeps (R111)."""

SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
)

SUMMARY_SYSTEM_PROMPT = """\
You write context checkpoints. You are given the transcript of a conversation \
between a user and an AI coding assistant, and you turn it into a structured \
summary from which another assistant can carry on the work without the transcript.

Do not continue the conversation, do not answer questions asked in it, and do not \
call tools. Reply with the checkpoint and nothing else."""

CHECKPOINT_INSTRUCTIONS = """\
Write a context checkpoint of the conversation above. Another assistant will \
continue the work from this checkpoint alone, so keep everything it needs. If the \
conversation opens with an earlier checkpoint, carry its content forward and fold \
in what happened after it.

Use exactly these sections:

## Goal
What the user wants to achieve (several goals if the conversation covers several tasks).

## Constraints & Preferences
- Requirements, limits and preferences the user stated, or "(none)".

## Progress
### Done
- [x] Work that is finished.

### In Progress
- [ ] Work that was under way when the conversation stopped.

### Blocked
- Problems that stop progress, if any.

## Key Decisions
- **Decision**: why it was taken.

## Next Steps
1. What should happen next, in order.

## Critical Context
- Facts, data, names and references needed to continue, or "(none)".

Keep each section short. Quote file paths, function names, commands and error \
messages exactly."""

_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


@dataclass(frozen=True, slots=True)
class CompactionCut:
    """Where a compaction cuts a context (R109).

    Attributes:
        first_kept: The ID of the first entry kept verbatim (the summary's ``head``).
        summarized: The entries the summary replaces: the head marker (if any),
            then the non-marker entries before the cut.
        messages: Their messages in model order (R74), system messages included.
    """

    first_kept: int
    summarized: list[EntryRecord]
    messages: list[JsonObject]


def message_tokens(message: JsonObject, model: Model | None = None) -> int:
    """Estimate what one stored message costs in a request.

    Args:
        message: A stored message dict; a system message counts its prompt text
            and tool declarations.
        model: The model whose encoding to count with.

    Returns:
        The estimate of ``pi_durable_tui.ai.estimate_message_tokens``.

    Raises:
        ValueError: When the message is not a valid model or system message.
    """
    if message.get("role") == "system":
        state = PromptState()
        state.apply(message)
        parts = [state.text(), *(json.dumps(spec) for spec in message.get("tools_added") or ())]
        text = "\n".join(part for part in parts if part)
        return estimate_message_tokens(UserMessage(content=text), model)
    try:
        parsed = _MESSAGE.validate_python(message)
    except ValidationError as error:
        raise ValueError(
            f"Cannot estimate the tokens of a message with role {message.get('role')!r}: "
            f"it is not a valid model message: {error}"
        ) from error
    return estimate_message_tokens(parsed, model)


def estimate_tokens(
    view: ContextView,
    planned_system_messages: Sequence[JsonObject] = (),
    *,
    model: Model | None = None,
) -> int:
    """Estimate the size of the next request over a context (R108).

    The newest assistant message appended after the head marker whose usage is
    non-zero measured everything up to it; the messages after it and the planned
    system messages are estimated. Without such a message, everything is estimated.

    Args:
        view: The context.
        planned_system_messages: The system messages the next preparation appends.
        model: The model whose encoding to estimate with.

    Returns:
        The estimate in tokens.
    """
    measured, after = _newest_measured(view)
    tokens = _context_tokens(measured.get("usage") or {}) if measured is not None else 0
    for message in (*view.messages[after:], *planned_system_messages):
        tokens += message_tokens(message, model)
    return tokens


def tokens_upper_bound(
    view: ContextView, planned_system_messages: Sequence[JsonObject] = ()
) -> int:
    """A cheap bound the estimate of ``estimate_tokens`` never exceeds.

    Every token stands for at least one byte of text, so the measured usage plus
    the UTF-8 size of the JSON of every later message bounds the estimate from
    above without loading a tokenizer (loading one costs about 0.5 s and 40 MiB).
    A preparation whose bound is below the compaction thresholds skips the exact
    estimate (R108 decides the same).

    Args:
        view: The context.
        planned_system_messages: The system messages the next preparation appends.

    Returns:
        An upper bound of ``estimate_tokens(view, planned_system_messages)``.
    """
    measured, after = _newest_measured(view)
    tokens = _context_tokens(measured.get("usage") or {}) if measured is not None else 0
    for message in (*view.messages[after:], *planned_system_messages):
        tokens += len(json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return tokens


def select_cut(
    view: ContextView, keep_recent_tokens: int, *, model: Model | None = None
) -> CompactionCut | None:
    """Choose where a compaction cuts a context (R109).

    Candidates are non-marker entries whose contribution starts with a user or
    assistant message, except a user entry that a result of the preceding
    assistant's calls still follows (before the next assistant). Walking the
    non-marker entries from newest to oldest and summing their estimates, the
    first entry where the sum reaches ``keep_recent_tokens`` fixes the cut: the
    first candidate at or after it, or the newest candidate when none follows.

    Args:
        view: The context.
        keep_recent_tokens: How many tokens of recent context to keep verbatim.
        model: The model whose encoding to estimate with.

    Returns:
        The cut, or ``None`` when there is nothing to compact: the sum never
        reaches ``keep_recent_tokens``, there is no candidate, or no non-marker
        entry before the cut contributes a message.

    Raises:
        ValueError: When ``keep_recent_tokens`` is negative.
    """
    if keep_recent_tokens < 0:
        raise ValueError(f"keep_recent_tokens must be 0 or more, got {keep_recent_tokens}")
    entries = view.entries
    start = 1 if view.head is not None else 0
    contributions = [view.contributions.get(entry.id, []) for entry in entries]
    candidates = [i for i in range(start, len(entries)) if _is_candidate(contributions, i)]
    if not candidates:
        return None
    kept = 0
    for index in range(len(entries) - 1, start - 1, -1):
        kept += sum(message_tokens(message, model) for message in contributions[index])
        if kept >= keep_recent_tokens:
            cut = next((c for c in candidates if c >= index), candidates[-1])
            break
    else:
        return None
    if not any(contributions[start:cut]):
        return None
    return CompactionCut(
        first_kept=entries[cut].id,
        summarized=entries[:cut],
        messages=order_tool_results([m for messages in contributions[:cut] for m in messages]),
    )


def serialize_conversation(messages: Sequence[JsonObject]) -> str:
    """Render messages as a plain-text transcript for the summarizer (R111).

    Parts are ``[User]: ...``, ``[Assistant thinking]: ...``, ``[Assistant]: ...``,
    ``[Assistant tool calls]: name(key=<json>, ...)`` (calls joined by ``; ``) and
    ``[Tool result]: ...`` (cut to 2,000 characters with a note of how many more
    there were), separated by blank lines. System messages and empty parts are
    left out.

    Args:
        messages: Stored message dicts in model order.

    Returns:
        The transcript text.
    """
    parts: list[str] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            _add_part(parts, "User", _text_of(content))
        elif role == "assistant":
            blocks = content if isinstance(content, list) else []
            thinking = [b.get("thinking", "") for b in blocks if _is_visible_thinking(b)]
            text = [b.get("text", "") for b in blocks if b.get("type") == "text"]
            calls = [_render_call(call) for call in tool_calls(message)]
            _add_part(parts, "Assistant thinking", "\n".join(t for t in thinking if t))
            _add_part(parts, "Assistant", "\n".join(t for t in text if t))
            _add_part(parts, "Assistant tool calls", "; ".join(calls))
        elif role == "toolResult":
            _add_part(parts, "Tool result", _truncated(_text_of(content)))
    return "\n\n".join(parts)


def checkpoint_prompt(conversation_text: str, instructions: str | None = None) -> str:
    """Build the summarizer's user message (R111).

    Args:
        conversation_text: The output of ``serialize_conversation``.
        instructions: Extra focus from ``compact(instructions)``, if any.

    Returns:
        The transcript inside ``<conversation>`` tags, the structured-checkpoint
        instructions, and ``Additional focus: <instructions>`` when given.
    """
    prompt = f"<conversation>\n{conversation_text}\n</conversation>\n\n{CHECKPOINT_INSTRUCTIONS}"
    if instructions and instructions.strip():
        prompt += f"\n\nAdditional focus: {instructions.strip()}"
    return prompt


def summary_message_text(summary: str) -> str:
    """Wrap a summary as the text of the ``pi.compaction`` entry's user message (R112).

    Args:
        summary: The summarizer's answer.

    Returns:
        The fixed lead-in, a blank line, and the summary inside ``<summary>`` tags.
    """
    return f"{SUMMARY_PREFIX}\n\n<summary>\n{summary}\n</summary>"


def _newest_measured(view: ContextView) -> tuple[JsonObject | None, int]:
    """Return the newest measured assistant message after the marker and the index after it."""
    marker = view.head.id if view.head is not None else None
    for entry in reversed(view.entries):
        if marker is not None and entry.id <= marker:
            continue
        for message in reversed(view.contributions.get(entry.id, [])):
            if message.get("role") == "assistant" and _context_tokens(message.get("usage")) > 0:
                return message, _index_after(view.messages, message)
    return None, 0


def _index_after(messages: list[JsonObject], target: JsonObject) -> int:
    # Contributions and messages share their dicts (ContextView), so identity finds
    # the message; equality covers views built by hand.
    for index in range(len(messages) - 1, -1, -1):
        if messages[index] is target:
            return index + 1
    for index in range(len(messages) - 1, -1, -1):
        if messages[index] == target:
            return index + 1
    return len(messages)


def _context_tokens(usage: Any) -> int:
    """What a response's usage says the context held: total tokens, else the sum of its parts."""
    if not isinstance(usage, dict):
        return 0
    total = usage.get("total_tokens") or 0
    if total > 0:
        return int(total)
    parts = ("input", "output", "cache_read", "cache_write")
    return sum(int(usage.get(part) or 0) for part in parts)


def _is_candidate(contributions: list[list[JsonObject]], index: int) -> bool:
    """Whether a summary may keep entries from ``index`` on (R109)."""
    own = contributions[index]
    first = own[0].get("role") if own else None
    if first == "assistant":
        return True
    if first != "user":
        return False
    calls: set[str] = set()
    for before in range(index - 1, -1, -1):
        assistants = [m for m in contributions[before] if m.get("role") == "assistant"]
        if assistants:
            calls = {call.get("id", "") for call in tool_calls(assistants[-1])}
            break
    if not calls:
        return True
    for after in range(index, len(contributions)):
        for position, message in enumerate(contributions[after]):
            role = message.get("role")
            if role == "assistant" and (after > index or position > 0):
                return True
            if role == "toolResult" and message.get("tool_call_id") in calls:
                return False
    return True


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def _is_visible_thinking(block: JsonObject) -> bool:
    # Redacted thinking is an opaque provider payload, not something to summarize.
    return block.get("type") == "thinking" and not block.get("redacted", False)


def _render_call(call: JsonObject) -> str:
    arguments = call.get("arguments") or {}
    rendered = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False, separators=(',', ':'))}"
        for key, value in arguments.items()
    )
    return f"{call.get('name', '')}({rendered})"


def _truncated(text: str) -> str:
    if len(text) <= TOOL_RESULT_MAX_CHARS:
        return text
    dropped = len(text) - TOOL_RESULT_MAX_CHARS
    return f"{text[:TOOL_RESULT_MAX_CHARS]}\n\n[... {dropped} more characters truncated]"


def _add_part(parts: list[str], label: str, text: str) -> None:
    if text:
        parts.append(f"[{label}]: {text}")
