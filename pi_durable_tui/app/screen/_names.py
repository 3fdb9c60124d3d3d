"""Names a person reads for conversations, instead of their internal ids (issue 12).

The screen says ``main``, ``subagent: <first words of its task>`` and ``fork of
<first words of its first message>``; the ids stay in ``/tasks`` and in the
store. A conversation's words are its first user message (a subagent's is the
task it was given; a fork's is the history it copied).
"""

from __future__ import annotations

from pi_durable_tui.storage import EntryRecord, Storage

NAME_WIDTH = 40
"""Characters of a conversation's first words in its name."""


def first_words(text: str, width: int = NAME_WIDTH) -> str:
    """The start of a text on one line, cut at a word with ``…`` when longer than ``width``."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    cut = flat[:width].rsplit(" ", 1)[0] or flat[:width]
    return cut + "…"


def conversation_label(conversation_id: int, owned: bool, root_id: int, title: str = "") -> str:
    """``main``, ``subagent: <words>`` (owned by a task) or ``fork of <words>`` (another root).

    Args:
        conversation_id: The conversation.
        owned: Whether a task owns it (a subagent's conversation).
        root_id: The main conversation.
        title: Its first user message (``conversation_title``); empty gives
            ``subagent`` or ``fork``.
    """
    if conversation_id == root_id:
        return "main"
    words = first_words(title)
    if owned:
        return f"subagent: {words}" if words else "subagent"
    return f"fork of {words}" if words else "fork"


def entry_text(entry: EntryRecord) -> str:
    """The text of an entry's first model message (its text parts joined)."""
    message = entry.model[0] if entry.model and isinstance(entry.model[0], dict) else {}
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    )


async def conversation_title(storage: Storage, conversation_id: int) -> str:
    """The first user message a conversation shows (its own or the history it forked)."""
    first = await storage.scan_entries(conversation_id, order="asc", limit=5)
    return next((entry_text(s.entry) for s in first.items if s.entry.kind == "pi.user"), "")
