"""The host's half of the wire: a conversation's snapshot and its commit frames (issue 15; R123).

A frame is built ONCE per commit and conversation and shared, already encoded,
by every client following that conversation, so twenty followers cost the host
one encoding, not twenty (``python -m pi_durable_tui.bench clients``).

What a commit frame carries is what the commit published (``CommitInfo``), cut
to one conversation: its appended entries, the operations of its built-in
documents (``pi.live``, ``pi.inbox``, ``pi.usage``, ``pi.agent``; a created or
migrated document comes as the one root ``set`` the kernel published, a retired
one with ``retired``), and its submissions' new states. Streamed text is a
string ``append`` in ``pi.live``, so a streamed token costs its own bytes plus
the frame's envelope, never the message so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from pi_durable_tui.app._view import TaskNode
from pi_durable_tui.app.screen import compaction_failures, conversation_title
from pi_durable_tui.harness import AGENT_DOC, INBOX_DOC, LIVE_DOC, USAGE_DOC
from pi_durable_tui.kernel import CommitInfo, Session, Tx

DOCS = (LIVE_DOC, INBOX_DOC, USAGE_DOC, AGENT_DOC)
"""The documents a client mirrors, by definition."""
KINDS = frozenset(definition.kind for definition in DOCS)


def tasks_json(nodes: Sequence[TaskNode]) -> list[dict[str, Any]]:
    """The task tree as plain JSON (the ``TaskNode`` fields, children nested)."""
    return [asdict(node) for node in nodes]


async def snapshot(
    session: Session, tx: Tx, conversation: int, window: int, tasks: list[dict[str, Any]]
) -> dict[str, Any]:
    """The ``snapshot`` message of a conversation, read inside a commit callback.

    REMINDER: call it on the line (``session.commit``, writing nothing) and
    register the follower in the same callback: then no commit falls between
    the snapshot and the first frame.

    Raises:
        ValueError: The conversation does not exist.
    """
    record = await tx.conversation(conversation)
    if record is None:
        raise ValueError(f"Conversation {conversation} does not exist")
    storage = session.storage
    # A subagent's or fork's screen is named by its first message ("main" needs none).
    title = "" if record.owner is None else await conversation_title(storage, conversation)
    page = await storage.scan_entries(conversation, order="desc", limit=window + 1)
    newest = [stored.entry.to_json() for stored in page.items]
    docs: dict[str, Any] = {}
    for definition in DOCS:
        value = await session.snapshot(definition, conversation)
        if value is not None:
            docs[definition.kind] = value
    return {
        "t": "snapshot",
        "seq": storage.last_seq,
        "conversation": conversation,
        "title": title,
        "entries": list(reversed(newest[:window])),
        "has_older": len(newest) > window,
        "docs": docs,
        "tasks": tasks,
    }


def commit_frame(info: CommitInfo, conversation: int) -> dict[str, Any] | None:
    """What commit ``info`` changed in ``conversation``, or ``None`` when nothing."""
    entries = [e.to_json() for e in info.entries if e.conversation_id == conversation]
    docs: list[dict[str, Any]] = []
    for change in info.documents:
        scope = change.address.scope
        if scope.kind != "conversation" or scope.id != conversation:
            continue
        if change.address.kind not in KINDS or change.address.key is not None:
            continue
        doc: dict[str, Any] = {"kind": change.address.kind, "ops": change.ops}
        if change.retired:
            doc["retired"] = True
        docs.append(doc)
    submissions = [
        {
            "id": record.id,
            "status": record.status,
            "reason": record.reason,
            "detail": record.detail,
            "answer": record.answer,
        }
        for record in info.submissions
        if record.conversation_id == conversation
    ]
    failures = [f.to_json() for f in compaction_failures(info.tasks, conversation)]
    if not (entries or docs or submissions or failures):
        return None
    frame: dict[str, Any] = {"t": "commit", "seq": info.seq}
    if entries:
        frame["entries"] = entries
    if docs:
        frame["docs"] = docs
    if submissions:
        frame["submissions"] = submissions
    if failures:
        frame["compaction_failures"] = failures
    return frame


Approvals = dict[str, tuple[bool, bool]]
"""Per call ID of a conversation's tool slots: (a request was seen, a decision was seen)."""


def approvals_of(live: Any) -> Approvals:
    """What ``pi.live``'s tool slots hold of approvals (``approval_messages``' start)."""
    found: Approvals = {}
    tools = live.get("tools") if isinstance(live, dict) else None
    for slot in tools if isinstance(tools, list) else ():
        approval = slot.get("approval") if isinstance(slot, dict) else None
        if isinstance(approval, dict) and isinstance(slot.get("call_id"), str):
            found[slot["call_id"]] = ("request" in approval, "decision" in approval)
    return found


def approval_messages(info: CommitInfo, conversation: int, seen: Approvals) -> list[dict[str, Any]]:
    """The ``permission_request`` / ``permission_decision`` messages of commit ``info`` (issue 13).

    ``seen`` is what the commits before held (``approvals_of``); it is updated in
    place. A request and its decision committed together give both, in that order.
    """
    messages: list[dict[str, Any]] = []
    for change in info.documents:
        address = change.address
        if address.kind != LIVE_DOC.kind or address.key is not None:
            continue
        if address.scope.kind != "conversation" or address.scope.id != conversation:
            continue
        if not any(op.get("path", [None])[:1] in ([], ["tools"]) for op in change.ops):
            continue  # REMINDER: a streamed token's ops never touch the slots: skip the scan.
        tools = change.value.get("tools") if isinstance(change.value, dict) else None
        for slot in tools if isinstance(tools, list) else ():
            approval = slot.get("approval") if isinstance(slot, dict) else None
            if not isinstance(approval, dict):
                continue
            call_id = str(slot.get("call_id"))
            asked, decided = seen.get(call_id, (False, False))
            ids = {"seq": info.seq, "conversation": conversation, "call_id": call_id}
            ids["tool"] = slot.get("name")
            if "request" in approval and not asked:
                request = approval["request"]
                messages.append({"t": "permission_request", **ids, "request": request})
            if "decision" in approval and not decided:
                decision = approval["decision"]
                messages.append({"t": "permission_decision", **ids, "decision": decision})
            seen[call_id] = ("request" in approval, "decision" in approval)
    return messages


async def older_page(
    session: Session, conversation: int, before: int, count: int
) -> dict[str, Any]:
    """Up to ``count`` entries before entry ``before``, oldest first, and whether more exist."""
    page = await session.storage.scan_entries(
        conversation, max_entry_id=before - 1, order="desc", limit=count + 1
    )
    entries = [stored.entry.to_json() for stored in page.items]
    return {"entries": list(reversed(entries[:count])), "has_older": len(entries) > count}


async def history_page(
    session: Session, conversation: int, after: int, count: int
) -> dict[str, Any]:
    """Up to ``count`` entries after entry ``after``, oldest first, and whether more follow.

    A page at a time (``session/load`` replays a long session in bounded memory).
    """
    page = await session.storage.scan_entries(
        conversation, min_entry_id=after + 1, order="asc", limit=count + 1
    )
    entries = [stored.entry.to_json() for stored in page.items]
    return {"entries": entries[:count], "has_newer": len(entries) > count}
