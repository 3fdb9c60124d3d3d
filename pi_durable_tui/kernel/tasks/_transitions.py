"""Task state changes inside a commit, and the rules judged on its candidate records.

Everything here runs on the line, inside the commit it concerns, and judges the
commit's *candidate* records (what is live once it lands), so work created in
the very same commit counts (R11, R53):

- ``apply_state``: the state a phase returned from a runtime commit, applied when
  the commit prepares. Running and waiting states replace the task's state; a
  wait names existing tasks, closes no cycle, and uses ``fail_fast`` only on
  tasks the waiter owns (R51, R52); an outcome goes through ``finish_outcome``;
- ``finish_outcome``: an outcome becomes ``completing`` while the task has live
  ordinary owned work, else ``terminal`` with checkpoint and memos dropped (R53, R56);
- ``write_scheduler_outcome``: a ``faulted`` or ``orphaned`` outcome, with the
  harness's cleanup hook in the commit that makes it final (R45, R54);
- ``prepare_commit``, when any commit prepares: new tasks and task-owned
  conversations need a live owner (R11), and a task that became terminal
  retires its task documents (R56).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

from pi_durable_tui.kernel._errors import OwnershipRejected, WaitRejected
from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel._tx import Tx
from pi_durable_tui.kernel.tasks._host import TaskHost
from pi_durable_tui.kernel.tasks._ownership import CandidateIndex, ordinary_owned_work
from pi_durable_tui.kernel.tasks._records import check_checkpoint, ended, held, with_state
from pi_durable_tui.kernel.tasks._states import Running, TaskState, Waiting, outcome_json
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import DocumentRecord, ScopeRef, TaskRecord


def candidate_index(host: TaskHost, staged: StagedCommit) -> CandidateIndex:
    """Return the live index as this commit would leave it."""
    return CandidateIndex(host.live, staged.tasks, staged.conversations)


def finish_outcome(
    host: TaskHost, staged: StagedCommit, record: TaskRecord, outcome: JsonObject
) -> TaskRecord:
    """Stage and return a record holding ``outcome``: ``completing`` while owned work is live.

    A terminal record drops checkpoint and memos and gets ``ended_at`` (R53, R56).
    """
    if ordinary_owned_work(candidate_index(host, staged), record.id):
        record = held(record, outcome)
    else:
        record = ended(record, outcome, host.clock.now())
    staged.put_task(record)
    return record


async def write_scheduler_outcome(
    host: TaskHost, staged: StagedCommit, record: TaskRecord, outcome: JsonObject
) -> None:
    """Stage a ``faulted`` or ``orphaned`` outcome, with cleanup when it is final (R45, R54).

    Raises:
        Exception: Whatever the cleanup hook raised; the commit then lands nothing.
    """
    final = finish_outcome(host, staged, record, outcome)
    if not final.is_live:
        await host.hooks.scheduler_outcome(Tx(staged), final, outcome)


async def apply_state(host: TaskHost, staged: StagedCommit, task_id: int, state: TaskState) -> None:
    """Stage the state a task's phase returned from a runtime commit (R38, R51-R53).

    Raises:
        WaitRejected: An invalid wait (R51, R52).
        TypeError: A checkpoint that is not a JSON object with a phase.
    """
    record = staged.candidate_task(task_id)
    assert record is not None, "the runtime gate checked the task is running"
    if isinstance(state, Running):
        checkpoint = check_checkpoint(state.checkpoint, f"Task {task_id} checkpoint")
        staged.put_task(with_state(record, {"status": "running", "checkpoint": checkpoint}))
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
        staged.put_task(waiting)
        await _check_wait(host, staged, waiting)
    else:
        finish_outcome(host, staged, record, outcome_json(state))


async def prepare_commit(host: TaskHost, staged: StagedCommit) -> None:
    """Check new owned work, then retire the documents of tasks that ended (R11, R56).

    Raises:
        OwnershipRejected: New owned work without a live owner (R11).
    """
    await _check_new_work(host, staged)
    await _retire_ended(host, staged)


async def _owner_problem(host: TaskHost, staged: StagedCommit, owner_id: int) -> str | None:
    record = staged.candidate_task(owner_id)
    if record is None:
        record = await host.storage.task(owner_id)
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


async def _check_new_work(host: TaskHost, staged: StagedCommit) -> None:
    for task_id in staged.new_task_ids:
        record = staged.tasks[task_id]
        if record.owner is None:
            continue
        problem = await _owner_problem(host, staged, record.owner)
        if problem is not None:
            raise OwnershipRejected(
                f"Cannot create task {record.kind} owned by task {record.owner}: {problem}"
            )
        owner = staged.candidate_task(record.owner)
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
    for conversation in staged.conversations.values():
        if conversation.owner is None:
            continue
        problem = await _owner_problem(host, staged, conversation.owner.task_id)
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


async def _check_wait(host: TaskHost, staged: StagedCommit, waiting: TaskRecord) -> None:
    state = waiting.state
    on: list[int] = state["on"]
    for target in on:
        if target == waiting.id:
            raise WaitRejected(f"Task {target} cannot close a wait cycle")
        record = staged.candidate_task(target) or await host.storage.task(target)
        if record is None:
            raise WaitRejected(f"Task {target} does not exist")
        if state["policy"] == "fail_fast" and record.owner != waiting.id:
            raise WaitRejected(f"Task {waiting.id} can wait failFast only on tasks it owns")
    index = candidate_index(host, staged)
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


async def _task_documents(host: TaskHost, task_id: int) -> AsyncIterator[DocumentRecord]:
    cursor = None
    while True:
        page = await host.storage.scan_documents(
            ScopeRef("task", task_id), limit=200, cursor=cursor
        )
        for record in page.items:
            yield record
        if page.cursor is None:
            return
        cursor = page.cursor


async def _retire_ended(host: TaskHost, staged: StagedCommit) -> None:
    for task_id, record in list(staged.tasks.items()):
        if record.is_live:
            continue
        scope = ScopeRef("task", task_id)
        documents = staged.documents
        for draft in [d for d in documents.drafts.values() if d.address.scope == scope]:
            documents.retire_draft(draft)
        if host.live.recent.owns_no_documents(task_id):
            continue  # born in this Session, which wrote no document under it
        async for document in _task_documents(host, task_id):
            documents.retire_record(document, {})
