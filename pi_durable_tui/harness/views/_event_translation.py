"""Agent events from one commit: the pure translation behind ``watch_events`` (R125).

``translate(cid, before, after, info, now)`` compares a conversation's view
before and after a commit (``_view_mount``) and reads the commit's records
(entries, tasks with their previous records, submissions) to produce that
commit's batch of coding-agent events, in the order R125 fixes:

1. progress: ``tool_execution_start`` (a slot became ``running``),
   ``permission_request`` / ``permission_decision`` (issue 13), the first
   partial's ``message_start``, ``message_update``, ``tool_execution_update``,
   then ``auto_retry_start`` / ``auto_retry_end``;
2. entries in append order: ``message_start`` (skipped for the assistant entry
   whose stream already started) and ``message_end``, or ``entry_appended`` for
   an entry without model messages; a tool result's ``tool_execution_end``
   comes directly before its ``message_start``;
3. ``tool_execution_end`` of tools that ended without a result entry here;
4. ``compaction_end``, ``task_failed``, ``turn_end``, ``run_end``;
5. ``submission`` events in ID order;
6. ``inbox_update``, ``agent_changed``, ``usage_changed``;
7. last, what began: ``compaction_start``, ``run_start``, ``turn_start``.

Events are JSON objects with a ``type`` (keys in snake_case, records as their
JSON); ``snapshot_event`` builds the ``snapshot`` a stream starts with. A turn is
one generation task: ``turn_start`` when it is created, ``turn_end`` when its
outcome is committed (at the ``completing`` hold or at terminal, whichever comes
first, so exactly once; none when it was already held before the stream began).
A run is one ``pi.live.run``: it ends and another starts when its first input
changes. There is no ``deferred_poll``: no provider here answers deferred.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pi_durable_tui.kernel import CommitInfo
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import EntryRecord, SubmissionRecord, TaskRecord

GENERATION = "pi.generation"
ENDED = ("completing", "terminal")
_START_TYPES = {"text": "text_start", "thinking": "thinking_start", "tool_call": "tool_call_start"}
_DELTA_FIELDS = {"text": ("text", "text_delta"), "thinking": ("thinking", "thinking_delta")}
_SLOT_PROGRESS = ("dropped_bytes", "dropped_lines")


def _docs(view: JsonObject) -> JsonObject:
    docs: JsonObject = view["docs"]
    return docs


def _live(view: JsonObject) -> JsonObject:
    live: JsonObject = _docs(view).get("pi.live") or {}
    return live


def queued_items(inbox: JsonObject | None) -> list[JsonObject]:
    """The inbox as ``[{"id", "mode"}]``, in queue order."""
    return [{"id": item["id"], "mode": item["mode"]} for item in (inbox or {}).get("items", [])]


def _agent(view: JsonObject) -> JsonObject:
    agent: JsonObject = _docs(view).get("pi.agent") or {}
    return agent


def _usage(view: JsonObject) -> JsonObject:
    usage: JsonObject = _docs(view).get("pi.usage") or {"models": {}, "tools": {}}
    return usage


def snapshot_event(conversation_id: int, view: JsonObject) -> JsonObject:
    """The ``snapshot`` event of a view: where a stream (or an overflow) starts (R125)."""
    live = _live(view)
    event: JsonObject = {
        "type": "snapshot",
        "conversation_id": conversation_id,
        "entries": view["entries"],
    }
    run = live.get("run")
    if run is not None:
        event["run"] = {"inputs": run.get("inputs", [])}
    if "generation" in live:
        event["generation"] = live["generation"]
    event["tools"] = live.get("tools") or []
    event["compactions"] = live.get("compactions") or []
    event["inbox"] = queued_items(_docs(view).get("pi.inbox"))
    event["agent"] = _agent(view)
    event["usage"] = _usage(view)
    return event


def message_changes(old: JsonObject, new: JsonObject) -> list[JsonObject]:
    """What changed in a streamed message, block by block.

    A new block is a ``text_start`` / ``thinking_start`` / ``tool_call_start``
    carrying the block as it is now; text or thinking that grew at its end is a
    ``text_delta`` / ``thinking_delta``; any other change of a block is ``block``
    (the block whole); a message that lost blocks is ``message`` (whole).
    """
    before: list[JsonObject] = old.get("content") or []
    after: list[JsonObject] = new.get("content") or []
    if len(after) < len(before):
        return [{"type": "message", "message": new}]
    changes: list[JsonObject] = []
    for index, block in enumerate(after):
        if index >= len(before):
            start = _START_TYPES.get(block.get("type", ""), "block")
            changes.append({"type": start, "content_index": index, "block": block})
            continue
        previous = before[index]
        if block == previous:
            continue
        delta = _delta(previous, block)
        if delta is not None:
            changes.append({**delta, "content_index": index})
        else:
            changes.append({"type": "block", "content_index": index, "block": block})
    return changes


def _delta(previous: JsonObject, block: JsonObject) -> JsonObject | None:
    kind = block.get("type", "")
    if kind not in _DELTA_FIELDS or previous.get("type") != kind:
        return None
    field, event = _DELTA_FIELDS[kind]
    old_text, new_text = previous.get(field, ""), block.get(field, "")
    rest_same = all(
        block.get(key) == previous.get(key) for key in {*block, *previous} if key != field
    )
    if not rest_same or not new_text.startswith(old_text):
        return None
    return {"type": event, "delta": new_text[len(old_text) :]}


def _tool_update(previous: JsonObject, slot: JsonObject) -> JsonObject | None:
    """The progress of a running slot between two revisions, or ``None`` when unchanged."""
    update: JsonObject = {}
    old_output, new_output = previous.get("output", ""), slot.get("output", "")
    if new_output != old_output:
        if new_output.startswith(old_output):
            update["output"] = {"append": new_output[len(old_output) :]}
        else:
            update["output"] = {"set": new_output}
    for key in _SLOT_PROGRESS:
        if slot.get(key, 0) != previous.get(key, 0):
            update[key] = slot.get(key, 0)
    # A safe rerun clears the slot's progress: removed details read None, diagnostics [].
    if slot.get("details") != previous.get("details"):
        update["details"] = slot.get("details")
    if slot.get("diagnostics") != previous.get("diagnostics"):
        update["diagnostics"] = slot.get("diagnostics") or []
    if not update:
        return None
    return {
        "type": "tool_execution_update",
        "tool_call_id": slot["call_id"],
        "tool_name": slot["name"],
        **update,
    }


def _arguments(tasks: dict[int, TaskRecord], task_id: Any) -> JsonObject:
    record = tasks.get(task_id) if isinstance(task_id, int) else None
    checkpoint = record.state.get("checkpoint") if record is not None else None
    arguments = checkpoint.get("arguments") if isinstance(checkpoint, dict) else None
    return arguments if isinstance(arguments, dict) else {}


def _entry(entries: list[EntryRecord], entry_id: Any) -> EntryRecord | None:
    return next((entry for entry in entries if entry.id == entry_id), None)


def _result_of(entries: list[EntryRecord], call_id: str) -> EntryRecord | None:
    for entry in entries:
        message = entry.model[0] if entry.model else None
        if isinstance(message, dict) and message.get("tool_call_id") == call_id:
            return entry
    return None


def _tool_end(slot: JsonObject, entry: EntryRecord | None) -> JsonObject:
    event: JsonObject = {
        "type": "tool_execution_end",
        "tool_call_id": slot["call_id"],
        "tool_name": slot["name"],
    }
    if entry is not None:
        event["entry"] = entry.to_json()
    return event


@dataclass(frozen=True, slots=True)
class _Commit:
    """One commit as seen from one conversation: its view before and after, its records."""

    before: JsonObject
    after: JsonObject
    was: JsonObject
    """``pi.live`` before the commit."""
    live: JsonObject
    """``pi.live`` after the commit."""
    entries: list[EntryRecord]
    tasks: dict[int, TaskRecord]
    previous_tasks: dict[int, TaskRecord | None]
    submissions: list[SubmissionRecord]
    now: float

    def slots_before(self) -> dict[str, JsonObject]:
        return {slot["call_id"]: slot for slot in self.was.get("tools") or []}

    def slots(self) -> list[JsonObject]:
        slots: list[JsonObject] = self.live.get("tools") or []
        return slots

    def partial_before(self) -> JsonObject | None:
        message: JsonObject | None = (self.was.get("generation") or {}).get("message")
        return message


def translate(
    conversation_id: int, before: JsonObject, after: JsonObject, info: CommitInfo, now: float
) -> list[JsonObject]:
    """Return the events one commit causes in a conversation, in R125 order.

    Args:
        conversation_id: The conversation.
        before: Its view before the commit.
        after: Its view after the commit.
        info: The commit's publication.
        now: The harness clock (ms), to turn a retry's ``at`` into ``delay_ms``.

    Returns:
        The batch (empty when the commit caused no event).
    """
    commit = _Commit(
        before=before,
        after=after,
        was=_live(before),
        live=_live(after),
        entries=[e for e in info.entries if e.conversation_id == conversation_id],
        tasks={t.id: t for t in info.tasks if t.conversation_id == conversation_id},
        previous_tasks=info.previous_tasks,
        submissions=sorted(
            (s for s in info.submissions if s.conversation_id == conversation_id),
            key=lambda s: s.id,
        ),
        now=now,
    )
    return [
        *_progress(commit),
        *_transcript(commit),
        *_endings(commit),
        *(_submission(record) for record in commit.submissions),
        *_documents(commit),
        *_beginnings(commit),
    ]


def _progress(commit: _Commit) -> list[JsonObject]:
    """Tool starts, the streamed message, tool updates, retries (R125 group 1)."""
    events: list[JsonObject] = []
    slots_before = commit.slots_before()
    for slot in commit.slots():
        started = slots_before.get(slot["call_id"], {}).get("status") == "running"
        if slot.get("status") == "running" and not started:
            events.append(
                {
                    "type": "tool_execution_start",
                    "tool_call_id": slot["call_id"],
                    "tool_name": slot["name"],
                    "args": _arguments(commit.tasks, slot.get("task_id")),
                }
            )
    events.extend(_permission_events(commit, slots_before))
    generation_before: JsonObject = commit.was.get("generation") or {}
    generation: JsonObject = commit.live.get("generation") or {}
    partial_before, partial = commit.partial_before(), generation.get("message")
    if partial is not None and partial_before is None:
        events.append({"type": "message_start", "message": partial})
    elif partial is not None and partial_before is not None and partial != partial_before:
        update: JsonObject = {"type": "message_update"}
        if "usage" in partial:
            update["usage"] = partial["usage"]
        update["changes"] = message_changes(partial_before, partial)
        events.append(update)
    for slot in commit.slots():
        was = slots_before.get(slot["call_id"])
        if was is not None and slot.get("status") == was.get("status") == "running":
            tool_update = _tool_update(was, slot)
            if tool_update is not None:
                events.append(tool_update)
    retry, retry_before = generation.get("retry"), generation_before.get("retry")
    if retry is not None and retry_before is None:
        events.append(
            {
                "type": "auto_retry_start",
                "attempt": generation.get("attempt", 1),
                "at": retry["at"],
                "delay_ms": max(0, round(retry["at"] - commit.now)),
                "error_message": retry.get("error", ""),
            }
        )
    if retry_before is not None and retry is None:
        events.append({"type": "auto_retry_end", "attempt": generation_before.get("attempt", 1)})
    return events


def _permission_events(commit: _Commit, slots_before: dict[str, JsonObject]) -> list[JsonObject]:
    """The permission events of a commit (issue 13).

    ``permission_request`` when a call starts waiting for the user's decision,
    ``permission_decision`` when its decision is committed.
    """
    events: list[JsonObject] = []
    for slot in commit.slots():
        approval = slot.get("approval")
        if not isinstance(approval, dict):
            continue
        was = slots_before.get(slot["call_id"], {}).get("approval") or {}
        ids = {"tool_call_id": slot["call_id"], "tool_name": slot["name"]}
        if "request" not in was:
            events.append({"type": "permission_request", **ids, "request": approval["request"]})
        if "decision" in approval and "decision" not in was:
            events.append({"type": "permission_decision", **ids, "decision": approval["decision"]})
    return events


def _tool_ends(commit: _Commit) -> list[tuple[int | None, JsonObject]]:
    """Tools that ended in this commit, with the ID of their result entry here (if any)."""
    ends: list[tuple[int | None, JsonObject]] = []
    slots_before = commit.slots_before()
    slots = {slot["call_id"]: slot for slot in commit.slots()}
    for call_id, previous in slots_before.items():
        if previous.get("status") == "done":
            continue
        slot = slots.get(call_id)
        if slot is None:  # the run ended with it: an abort may have answered it here
            found = _result_of(commit.entries, call_id)
        elif slot.get("status") == "done":
            found = _entry(commit.entries, slot.get("entry"))
        else:
            continue
        ends.append((found.id if found else None, _tool_end(previous, found)))
    for call_id, slot in slots.items():
        if slot.get("status") == "done" and call_id not in slots_before:  # a call not offered
            found = _entry(commit.entries, slot.get("entry"))
            ends.append((found.id if found else None, _tool_end(slot, found)))
    return ends


def _transcript(commit: _Commit) -> list[JsonObject]:
    """Entries in append order, each after the tool end it settles (R125 groups 2-3)."""
    events: list[JsonObject] = []
    ends = _tool_ends(commit)
    streamed = commit.partial_before() is not None
    for entry in commit.entries:
        events.extend(end for entry_id, end in ends if entry_id == entry.id)
        message = entry.model[0] if entry.model else None
        if not isinstance(message, dict):
            events.append({"type": "entry_appended", "entry": entry.to_json()})
            continue
        if message.get("role") == "assistant" and streamed:
            streamed = False  # its stream already started with the first partial
        else:
            events.append({"type": "message_start", "message": message})
        events.append({"type": "message_end", "entry": entry.to_json()})
    events.extend(end for entry_id, end in ends if entry_id is None)
    return events


def _endings(commit: _Commit) -> list[JsonObject]:
    """``compaction_end``, ``task_failed``, ``turn_end``, ``run_end`` (R125 group 4)."""
    events: list[JsonObject] = []
    live_compactions = {status["task_id"] for status in commit.live.get("compactions") or []}
    for status in commit.was.get("compactions") or []:
        if status["task_id"] not in live_compactions:
            events.append(
                {"type": "compaction_end", "task_id": status["task_id"], "reason": status["reason"]}
            )
    turn_ends: list[JsonObject] = []
    for task in commit.tasks.values():
        previous = commit.previous_tasks.get(task.id)
        if task.status not in ENDED or (previous is not None and previous.status in ENDED):
            continue
        outcome: JsonObject = task.state.get("outcome") or {}
        if task.status == "terminal" and outcome.get("status") in ("faulted", "orphaned"):
            error = outcome.get("error") or {}
            events.append(
                {
                    "type": "task_failed",
                    "task_id": task.id,
                    "kind": task.kind,
                    "message": error.get("message") or outcome.get("reason") or "",
                }
            )
        if task.kind == GENERATION:  # at the hold or at terminal, whichever comes first
            turn_ends.append(
                {"type": "turn_end", "task_id": task.id, "outcome": outcome.get("status")}
            )
    events.extend(turn_ends)
    run_before = commit.was.get("run")
    if run_before is not None and _run_changed(commit):
        events.append({"type": "run_end", "inputs": run_before.get("inputs", [])})
    return events


def _run_changed(commit: _Commit) -> bool:
    """Whether the run ended, began, or was succeeded by one for other inputs."""
    run, run_before = commit.live.get("run"), commit.was.get("run")
    if run is None or run_before is None:
        return run is not run_before
    return bool(run.get("inputs", [])[:1] != run_before.get("inputs", [])[:1])


def _submission(record: SubmissionRecord) -> JsonObject:
    return {"type": "submission", "record": record.to_json()}


def _documents(commit: _Commit) -> list[JsonObject]:
    """``inbox_update``, ``agent_changed``, ``usage_changed`` (R125 group 6)."""
    events: list[JsonObject] = []
    docs_before, docs = _docs(commit.before), _docs(commit.after)
    items = queued_items(docs.get("pi.inbox"))
    if items != queued_items(docs_before.get("pi.inbox")):
        events.append({"type": "inbox_update", "items": items})
    if docs.get("pi.agent") != docs_before.get("pi.agent"):
        events.append({"type": "agent_changed", "agent": _agent(commit.after)})
    if docs.get("pi.usage") != docs_before.get("pi.usage"):
        events.append({"type": "usage_changed", "usage": _usage(commit.after)})
    return events


def _beginnings(commit: _Commit) -> list[JsonObject]:
    """``compaction_start``, ``run_start``, ``turn_start`` (R125 group 7)."""
    events: list[JsonObject] = []
    started = {status["task_id"] for status in commit.was.get("compactions") or []}
    for status in commit.live.get("compactions") or []:
        if status["task_id"] not in started:
            events.append(
                {
                    "type": "compaction_start",
                    "task_id": status["task_id"],
                    "reason": status["reason"],
                    "blocking": bool(status.get("blocking")),
                }
            )
    run = commit.live.get("run")
    if run is not None and _run_changed(commit):
        events.append({"type": "run_start", "inputs": run.get("inputs", [])})
    for task in commit.tasks.values():
        if task.kind == GENERATION and commit.previous_tasks.get(task.id) is None:
            events.append({"type": "turn_start", "task_id": task.id})
    return events
