"""Admission of submissions, the inbox, boundaries and run settlement (R59-R70).

All functions run inside one commit (they take the ``Tx``):

- ``admit`` (R59): the request-ID check, the busy check, queueing, immediate
  placement of a write, or placement of an input that starts a run; with a
  ``PlannedRequest`` still current, that run's generation starts at ``request``
  (issue 14: the turn's first request planned before the commit).
- ``run_boundary`` (R61-R63): at ``post_tools`` (writes and steers) or ``final``
  (writes, steers and follow-ups), selected writes are placed first in ID order,
  then selected user items in ID order; a stale head write settles
  ``unanswered``/``stale``; a selected reset makes the boundary ``final``.
- ``start_run`` creates the conversation-owned generation that settles the inputs.
- ``settle`` settles submissions; ``withdraw_inputs`` withdraws queued inputs but
  keeps queued writes (R48, R57, R67); ``withdraw`` withdraws one queued
  submission (R66).

Inbox items: ``{"id", "mode": "steer"|"follow_up", "content"}`` for input and
``{"id", "mode": "write", "entry"}`` for writes, in submission ID order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pi_durable_tui.harness._errors import ConversationBusy, SubmissionRejected
from pi_durable_tui.harness._services import HarnessServices, RequestPlan
from pi_durable_tui.harness._submission_types import EntryDraft, Input, Write
from pi_durable_tui.harness.state import (
    INBOX_DOC,
    LIVE_DOC,
    append_user,
    is_busy,
    remove_compaction,
)
from pi_durable_tui.kernel import ConversationOwned, Tx
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import SubmissionRecord, TaskRecord

BoundaryKind = Literal["post_tools", "final"]


@dataclass(slots=True)
class Boundary:
    """What a boundary placed (R61-R64)."""

    kind: BoundaryKind
    user_inputs: list[int]
    """Input submissions placed, in ID order."""
    reset: bool = False
    """A ``head: "self"`` write was placed (the boundary behaved as ``final``)."""
    records: dict[int, SubmissionRecord] = field(default_factory=dict)
    """Every submission the boundary placed or found stale, as it left them."""


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """A first request planned before the admission commit, and the store it judged."""

    plan: RequestPlan
    seq: int
    """The Session's ``published_seq`` when planning began."""

    def current(self, services: HarnessServices) -> bool:
        """Whether nothing was committed since the planning began.

        # REMINDER: read on the commit line, where the published seq counts every
        # stored commit before this one (the line holds its lock until a commit is
        # stored and taken in). Commits that store nothing change no document or entry
        # a plan reads.
        """
        return services.session.published_seq == self.seq


async def admit(
    tx: Tx,
    services: HarnessServices,
    conversation_id: int,
    submission: Input | Write,
    planned: PlannedRequest | None = None,
) -> SubmissionRecord:
    """Admit a submission in one commit (R59).

    ``planned``: the first request of the run this input starts, planned outside
    the line; applied only when the input is placed at once and the plan is
    current, else the generation prepares itself (R83).

    Raises:
        ConversationBusy: A ``when_busy="reject"`` input to a busy conversation.
        SubmissionRejected: The request ID names a submission of another type.
    """
    kind: Literal["input", "write"] = "input" if isinstance(submission, Input) else "write"
    if submission.request_id is not None:
        existing = await tx.submission_by_request(conversation_id, submission.request_id)
        if existing is not None:
            if existing.type != kind:
                raise SubmissionRejected(
                    f"Request {submission.request_id} already identifies a submission of "
                    f"type {existing.type}"
                )
            return existing
    live = await tx.doc(LIVE_DOC, conversation_id)
    inbox = await tx.doc(INBOX_DOC, conversation_id)
    busy = is_busy(live)
    if busy and isinstance(submission, Input) and submission.when_busy == "reject":
        raise ConversationBusy(conversation_id)
    if busy or inbox.get("items"):
        record = tx.create_submission(
            conversation_id, kind, status="queued", request_id=submission.request_id
        )
        inbox.setdefault("items", []).append(_item(record.id, submission))
        if not busy:
            placed = await run_boundary(tx, services, conversation_id, "final")
            if placed.user_inputs:
                start_run(tx, services, conversation_id, live, placed.user_inputs)
            # REMINDER: the boundary may have placed (or found stale) the new record.
            return placed.records.get(record.id, record)
        return record
    if isinstance(submission, Write):
        return await _write_now(tx, services, conversation_id, submission)
    entry = append_user(
        tx, conversation_id, submission.content_json(), services.session.clock.now()
    )
    record = tx.create_submission(
        conversation_id,
        "input",
        status="placed",
        request_id=submission.request_id,
        entry=entry.id,
    )
    request = None
    if planned is not None and planned.current(services):
        request = await planned.plan.apply(tx, entry.id)
    start_run(tx, services, conversation_id, live, [record.id], request=request)
    return record


def _item(submission_id: int, submission: Input | Write) -> JsonObject:
    if isinstance(submission, Write):
        return {"id": submission_id, "mode": "write", "entry": submission.entry.to_json()}
    mode = "steer" if submission.when_busy == "steer" else "follow_up"
    return {"id": submission_id, "mode": mode, "content": submission.content_json()}


async def _write_now(
    tx: Tx, services: HarnessServices, conversation_id: int, write: Write
) -> SubmissionRecord:
    await _done_with(tx, conversation_id, write.request_id)
    if _stale(write.entry, await _range_start(services, conversation_id)):
        return tx.create_submission(
            conversation_id,
            "write",
            status="unanswered",
            request_id=write.request_id,
            reason="stale",
        )
    entry = _append_draft(tx, conversation_id, write.entry)
    return tx.create_submission(
        conversation_id, "write", status="done", request_id=write.request_id, entry=entry.id
    )


COMPACTION_REQUEST = "compaction:"
"""A compaction summary is the write submission with request ID ``compaction:<task id>`` (R112)."""


def compaction_request(task_id: int) -> str:
    """The request ID of compaction ``task_id``'s summary write (R112)."""
    return f"{COMPACTION_REQUEST}{task_id}"


async def _done_with(tx: Tx, conversation_id: int, request_id: str | None) -> None:
    """A compaction summary leaves its status when placed, found stale or withdrawn (R112).

    The summary's write names its task by its request ID, so the entry keeps
    only ``{reason}`` as its data (R112).
    """
    task = (request_id or "").removeprefix(COMPACTION_REQUEST)
    if request_id is not None and request_id.startswith(COMPACTION_REQUEST) and task.isdigit():
        remove_compaction(await tx.doc(LIVE_DOC, conversation_id), int(task))


def _append_draft(tx: Tx, conversation_id: int, draft: EntryDraft) -> Any:
    return tx.append(
        conversation_id,
        draft.kind,
        model=draft.model,
        data=draft.data,
        head=draft.head,
        edits=draft.edits,
    )


async def _range_start(services: HarnessServices, conversation_id: int) -> int | None:
    """The start of the committed active range: the newest head marker's ``head`` (R63, R71)."""
    # REMINDER: read directly from storage: the line is held, so this is the
    # committed state, and it is not a table read of the Tx (which may have written).
    marker = await services.session.storage.find_latest_head_marker(conversation_id)
    return None if marker is None else marker.entry.head


def _stale(draft: EntryDraft, range_start: int | None) -> bool:
    """A numeric head older than the active range start is stale; ``self`` never is (R63)."""
    head = draft.head
    return isinstance(head, int) and range_start is not None and head < range_start


def start_run(
    tx: Tx,
    services: HarnessServices,
    conversation_id: int,
    live: JsonObject,
    inputs: list[int],
    *,
    request: JsonObject | None = None,
) -> TaskRecord:
    """Create the generation that settles ``inputs`` and mark the conversation busy (R59).

    ``request``: the ``request`` checkpoint the admission or a round's settlement
    prepared for it (the generation then starts there instead of at ``prepare``, R83).
    """
    task = tx.create_task(
        services.task_definition("pi.generation"),
        {} if request is None else {"request": request},
        ownership=ConversationOwned(),
        conversation_id=conversation_id,
    )
    live["run"] = {"task_id": task.id, "inputs": list(inputs)}
    return task


async def run_boundary(
    tx: Tx,
    services: HarnessServices,
    conversation_id: int,
    kind: BoundaryKind,
    *,
    head: int | None = None,
) -> Boundary:
    """Place what a boundary selects (R61-R63); the caller decides what runs next (R64).

    Args:
        tx: The commit.
        services: The harness services.
        conversation_id: The conversation.
        kind: ``post_tools`` or ``final``.
        head: The ``head`` of a head marker this commit appended before the
            boundary (a handoff's reset): the active range starts there, so head
            writes older than it are stale (R63).

    Returns:
        What the boundary placed.
    """
    inbox = await tx.doc(INBOX_DOC, conversation_id)
    items: list[JsonObject] = inbox.get("items") or []
    settings = services.settings()
    writes = [item for item in items if item["mode"] == "write"]
    if kind == "post_tools" and any(w["entry"].get("head") == "self" for w in writes):
        kind = "final"  # a selected reset behaves as final (R61)
    users = _select(items, "steer", settings.steering_mode)
    if kind == "final":
        users += _select(items, "follow_up", settings.follow_up_mode)
    users.sort(key=lambda item: item["id"])
    boundary = Boundary(kind, [])
    range_start = head
    if range_start is None and writes:
        range_start = await _range_start(services, conversation_id)
    taken: set[int] = set()
    for item in writes:
        taken.add(item["id"])
        draft = EntryDraft.from_json(item["entry"])
        if _stale(draft, range_start):
            record = await tx.settle_submission(item["id"], "unanswered", reason="stale")
            boundary.records[item["id"]] = record
            await _done_with(tx, conversation_id, record.request_id)
            continue
        entry = _append_draft(tx, conversation_id, draft)
        record = await tx.place_submission(item["id"], entry.id)
        boundary.records[item["id"]] = record
        await _done_with(tx, conversation_id, record.request_id)
        if entry.head is not None:  # heads placed earlier in this boundary count (R63)
            range_start = entry.head
        boundary.reset = boundary.reset or draft.head == "self"
    now = services.session.clock.now()
    for item in users:
        taken.add(item["id"])
        entry = append_user(tx, conversation_id, item["content"], now)
        boundary.records[item["id"]] = await tx.place_submission(item["id"], entry.id)
        boundary.user_inputs.append(item["id"])
    if taken:
        inbox["items"] = [item for item in items if item["id"] not in taken]
    return boundary


def _select(items: list[JsonObject], mode: str, queue_mode: str) -> list[JsonObject]:
    chosen = [item for item in items if item["mode"] == mode]
    return chosen if queue_mode == "all" else chosen[:1]


async def settle(
    tx: Tx,
    submission_ids: list[int],
    status: Literal["done", "unanswered"],
    *,
    answer: int | None = None,
    reason: str | None = None,
    detail: Json = None,
) -> None:
    """Settle submissions; an already-settled one stays as it was (R64)."""
    for submission_id in submission_ids:
        await tx.settle_submission(
            submission_id, status, answer=answer, reason=reason, detail=detail
        )


async def withdraw_inputs(tx: Tx, conversation_id: int) -> list[JsonObject]:
    """Withdraw every queued input (steer, follow-up); queued writes stay (R48, R57, R67).

    Returns:
        The withdrawn inbox items, oldest first.
    """
    inbox = await tx.doc(INBOX_DOC, conversation_id)
    items: list[JsonObject] = inbox.get("items") or []
    withdrawn = [item for item in items if item["mode"] != "write"]
    for item in withdrawn:
        await tx.settle_submission(item["id"], "unanswered", reason="aborted")
    if withdrawn:
        inbox["items"] = [item for item in items if item["mode"] == "write"]
    return withdrawn


async def withdraw(
    tx: Tx, submission_id: int, conversation_id: int | None = None
) -> Literal["aborted", "already_placed", "settled", "not_found"]:
    """Withdraw one submission if it is still queued (R66)."""
    record = await tx.submission(submission_id)
    if record is None or (
        conversation_id is not None and record.conversation_id != conversation_id
    ):
        return "not_found"
    if record.status in ("done", "unanswered"):
        return "settled"
    if record.status == "placed":
        return "already_placed"
    inbox = await tx.doc(INBOX_DOC, record.conversation_id)
    items: list[JsonObject] = inbox.get("items") or []
    await tx.settle_submission(submission_id, "unanswered", reason="aborted")
    if record.type == "write":  # a withdrawn compaction summary leaves its status (R114)
        await _done_with(tx, record.conversation_id, record.request_id)
    inbox["items"] = [item for item in items if item["id"] != submission_id]
    return "aborted"
