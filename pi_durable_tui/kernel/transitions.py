"""Resolving task state changes inside a commit (R11, R38, R51-R53, R56).

``resolve_transitions`` runs when a commit prepares, after its callback returned
and before storage. It turns the states task phases returned into records, and
checks everything that must be judged on the commit's candidate records:

- a returned outcome becomes ``completing`` while the task has live ordinary
  owned work (judged with the work created in this very commit), else
  ``terminal`` with checkpoint and memos dropped (R53, R56);
- new tasks and task-owned conversations need a live owner (R11);
- waits name existing tasks, close no cycle, and use ``fail_fast`` only on owned
  tasks (R51, R52);
- a task that becomes terminal retires its task documents (R56).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING

from pi_durable_tui.kernel.errors import OwnershipRejected, WaitRejected
from pi_durable_tui.kernel.ownership import CandidateIndex, ordinary_owned_work
from pi_durable_tui.kernel.tasks import (
    Aborted,
    Completed,
    Failed,
    Running,
    Waiting,
    check_checkpoint,
    outcome_json,
    with_state,
)
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import DocumentRecord, ScopeRef, TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.kernel.session import Session
    from pi_durable_tui.kernel.tx import Tx


def candidate_index(session: Session, tx: Tx) -> CandidateIndex:
    """Return the live index as this commit would leave it."""
    return CandidateIndex(session.live, tx.tasks, tx.conversations)


def finish_outcome(session: Session, tx: Tx, record: TaskRecord, outcome: JsonObject) -> TaskRecord:
    """Return a record holding ``outcome``: ``completing`` while owned work is live (R53).

    The record is staged in ``tx``. A terminal record drops checkpoint and memos
    and gets ``ended_at`` (R56).
    """
    index = candidate_index(session, tx)
    if ordinary_owned_work(index, record.id):
        held = with_state(record, {"status": "completing", "outcome": outcome}, memos=None)
        tx.put_task(held)
        return held
    final = with_state(
        record,
        {"status": "terminal", "outcome": outcome},
        memos=None,
        ended_at=session.clock.now(),
    )
    tx.put_task(final)
    return final


async def resolve_transitions(session: Session, tx: Tx) -> None:
    """Apply requested states, then check ownership and waits, then retire task documents.

    Raises:
        OwnershipRejected: New owned work without a live owner (R11).
        WaitRejected: An invalid wait (R51, R52).
        TypeError: A checkpoint that is not a JSON object with a phase.
    """
    waits: list[TaskRecord] = []
    for task_id, state in tx.task_requests.items():
        record = tx.candidate_task(task_id)
        assert record is not None, "the runtime gate checked the task is running"
        if isinstance(state, Running):
            checkpoint = check_checkpoint(state.checkpoint, f"Task {task_id} checkpoint")
            tx.put_task(with_state(record, {"status": "running", "checkpoint": checkpoint}))
        elif isinstance(state, Waiting):
            checkpoint = check_checkpoint(state.checkpoint, f"Task {task_id} checkpoint")
            if state.policy not in ("all_settled", "fail_fast"):
                raise WaitRejected(f"Task {task_id} wait policy must be all_settled or fail_fast")
            if isinstance(state.on, (str, bytes)) or any(
                not isinstance(i, int) or isinstance(i, bool) for i in state.on
            ):
                raise WaitRejected(f"Task {task_id} must wait on a list of task IDs")
            on: list[Json] = list(state.on)
            waiting = with_state(
                record,
                {"status": "waiting", "checkpoint": checkpoint, "on": on, "policy": state.policy},
            )
            tx.put_task(waiting)
            waits.append(waiting)
    for task_id, state in tx.task_requests.items():
        if isinstance(state, (Completed, Failed, Aborted)):
            record = tx.candidate_task(task_id)
            assert record is not None
            finish_outcome(session, tx, record, outcome_json(state))
    await _check_new_work(session, tx)
    for waiting in waits:
        await _check_wait(session, tx, waiting)
    await _retire_ended(session, tx)


async def _owner_problem(session: Session, tx: Tx, owner_id: int) -> str | None:
    record = tx.candidate_task(owner_id)
    if record is None:
        record = await session.storage.task(owner_id)
    if record is None:
        return f"Task {owner_id} does not exist"
    status = record.status
    if status == "completing":
        return f"Task {owner_id} is completing"
    if status == "terminal":
        return f"Task {owner_id} is terminal"
    if record.abort_requested:
        return f"Task {owner_id} is abort-marked"
    return None


async def _check_new_work(session: Session, tx: Tx) -> None:
    for task_id in tx.new_task_ids:
        record = tx.tasks[task_id]
        if record.owner is None:
            continue
        problem = await _owner_problem(session, tx, record.owner)
        if problem is not None:
            raise OwnershipRejected(
                f"Cannot create task {record.kind} owned by task {record.owner}: {problem}"
            )
        owner = tx.candidate_task(record.owner)
        assert owner is not None
        if record.conversation_id != owner.conversation_id:
            raise OwnershipRejected(
                f"Task {record.kind} must live in its owner's conversation "
                f"{owner.conversation_id}, not {record.conversation_id}"
            )
        if record.background:
            raise OwnershipRejected(
                f"Task {record.kind} owned by task {record.owner} cannot be background"
            )
    for conversation in tx.conversations.values():
        if conversation.owner is None:
            continue
        problem = await _owner_problem(session, tx, conversation.owner.task_id)
        if problem is not None:
            raise OwnershipRejected(
                f"Cannot create conversation owned by task {conversation.owner.task_id}: {problem}"
            )


def _wait_edges(index: CandidateIndex, task_id: int) -> Iterable[int]:
    """Tasks a task waits for: its wait's ``on``, and (as a hold) its ordinary owned work."""
    record = index.task(task_id)
    if record is None:
        return ()
    edges = list(ordinary_owned_work(index, task_id))
    if record.state["status"] == "waiting":
        edges.extend(record.state["on"])
    return edges


async def _check_wait(session: Session, tx: Tx, waiting: TaskRecord) -> None:
    state = waiting.state
    on: list[int] = state["on"]
    for target in on:
        if target == waiting.id:
            raise WaitRejected(f"Task {target} cannot close a wait cycle")
        record = tx.candidate_task(target) or await session.storage.task(target)
        if record is None:
            raise WaitRejected(f"Task {target} does not exist")
        if state["policy"] == "fail_fast" and record.owner != waiting.id:
            raise WaitRejected(f"Task {waiting.id} can wait failFast only on tasks it owns")
    index = candidate_index(session, tx)
    seen: set[int] = set()
    stack = list(on)
    while stack:
        current = stack.pop()
        if current == waiting.id:
            raise WaitRejected(f"Task {waiting.id} cannot close a wait cycle")
        if current in seen:
            continue
        seen.add(current)
        stack.extend(_wait_edges(index, current))


async def _task_documents(session: Session, task_id: int) -> AsyncIterator[DocumentRecord]:
    cursor = None
    while True:
        page = await session.storage.scan_documents(
            ScopeRef("task", task_id), limit=200, cursor=cursor
        )
        for record in page.items:
            yield record
        if page.cursor is None:
            return
        cursor = page.cursor


async def _retire_ended(session: Session, tx: Tx) -> None:
    for task_id, record in list(tx.tasks.items()):
        if record.is_live:
            continue
        scope = ScopeRef("task", task_id)
        for draft in [d for d in tx.drafts.values() if d.address.scope == scope]:
            tx.retire_draft(draft)
        async for document in _task_documents(session, task_id):
            tx.retire_record(document, {})
