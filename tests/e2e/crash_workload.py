"""The child process of the crash tests: a scripted durable workload that can be killed anywhere.

Run: ``python -m tests.e2e.crash_workload --backend sqlite|jsonl|postgres --store PATH
--ledger PATH [--seed N] [--run K] [--pace MS]``. It opens the store (reopening
an existing one; for ``postgres`` the store named PATH in the database at
``$PIDURABLE_DATABASE_URL``), runs the script of ``crash_model`` to completion, and exits 0.
A restart after SIGKILL resumes where the store says it was: the driver reads
its step from a session document, the tasks continue from their committed
checkpoints (R22, R36-R38); nothing restarts from scratch.

What it prints on stdout (one ``word {json}`` line each, flushed at once):

- ``ready``: printed before the store is opened, so a kill after it lands in
  recovery or work, never in imports;
- ``repairs`` (JSONL): what recovery cut from torn tails (R131);
- ``opened`` with the store's last seq (before the Session reconciles anything),
  ``session`` with it after ``Session.open`` (reconciliation may commit, R22);
- ``published`` for every commit the Session publishes (seq and entry IDs),
  printed by a commit listener, which runs on the line before the next commit
  can start: the store is never more than one commit ahead of these lines;
- ``resume-task`` for every live task found at open (label, status, checkpoint,
  memos), then ``resumed``, and ``resume-driver`` with the driver's step;
- ``ack`` after a commit returned, never before (R2): every commit of the
  workload that appends an entry is acknowledged with the entry, its data and
  the commit's seq; the commits of the scheduler and of memos append no entry;
- ``interrupted`` when an unsafe effect is found in its intent phase;
- ``report`` for anything the Session reports instead of raising;
- ``complete`` at the end, with the store's last seq and this run's commit count.

Effects go to an append-only ledger file (one JSON line each, fsynced before the
program goes on): ``tick`` is the replay-safe effect (at least once; a tick
runs again when a kill interrupts it before its commit); ``unsafe`` is the
replay-unsafe effect, run inside the effect sandwich (R39):
memo a key (R40), commit the intent checkpoint, perform the effect, commit the
outcome. Recovery in the intent phase records ``interrupted`` and never redoes
it, so it happens at most once.

Own failpoints (``PIDURABLE_FAILPOINT``, see ``pi_durable_tui.storage.failpoints``):
``workload.before_effect`` (after the intent commit, before the unsafe effect),
``workload.after_effect`` (after it, before the outcome commit) and
``workload.after_safe_effect`` (after a tick's effect, before its commit).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from pi_durable_tui.kernel import (
    Aborted,
    CommitInfo,
    Completed,
    ConversationOwned,
    Ownerless,
    Report,
    Running,
    Session,
    TaskDefinition,
    TaskOwned,
    TaskRegistry,
    TaskRuntime,
    TaskState,
    Tx,
    Waiting,
    define_doc,
    define_task,
)
from pi_durable_tui.storage import (
    LIVE_TASK_STATUSES,
    EntryRecord,
    Storage,
    TaskRecord,
    failpoints,
)
from pi_durable_tui.storage.jsonl import JsonlStorage
from pi_durable_tui.storage.postgres import PostgresStorage
from pi_durable_tui.storage.sqlite import SqliteStorage
from tests.e2e.crash_model import (
    HOLDER_REASON,
    TASK_KINDS,
    VICTIM_REASON,
    Step,
    build_script,
    child_labels,
    driver_entry,
    fields,
)

BEFORE_EFFECT = failpoints.define("workload.before_effect")
AFTER_EFFECT = failpoints.define("workload.after_effect")
AFTER_SAFE_EFFECT = failpoints.define("workload.after_safe_effect")

DRIVER_DOC = define_doc(
    "crash.driver", scope="session", initial=lambda: {"step": 0, "conversation": 0, "tasks": {}}
)
COUNTERS = define_doc(
    "crash.counters",
    scope="session",
    initial=lambda: {"notes": 0, "sum": 0},
    checkpoint_when=lambda value, ops, deltas: deltas >= 1,
)
NOTES = define_doc(
    "crash.notes",
    history="rewindable",
    initial=lambda: {"lines": []},
    checkpoint_when=lambda value, ops, deltas: deltas >= 1,
)
PROGRESS = define_doc("crash.progress", initial=lambda: {"ticks": {}})

Build = Callable[[Tx], Awaitable[tuple[EntryRecord, TaskState | None]]]


def emit(word: str, payload: dict[str, Any]) -> None:
    """Print one protocol line and flush it, so it survives a SIGKILL right after."""
    sys.stdout.write(f"{word} {json.dumps(payload, sort_keys=True)}\n")
    sys.stdout.flush()


class Ledger:
    """The append-only effect ledger: one JSON line per effect, fsynced before returning."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def record(self, **fields: Any) -> None:
        os.write(self._fd, (json.dumps(fields, sort_keys=True) + "\n").encode())
        os.fsync(self._fd)


class Workload:
    """The task kinds and the driver of one run; ``run`` numbers the process in its chain."""

    def __init__(self, seed: int, run: int, pace_ms: float, ledger: Ledger) -> None:
        self.seed = seed
        self.run = run
        self.pace = pace_ms / 1000
        self.ledger = ledger
        self.script = build_script(seed)
        self.seqs: dict[int, int] = {}
        self.commits = 0
        self.live: dict[int, TaskRecord] = {}
        """Live tasks as publications leave them (seeded from the store at open)."""
        self.ticker = define_task(
            "crash.ticker",
            initial=lambda _: {"phase": "tick", "tick": 0},
            phases={"tick": self.tick},
            abort=self.abort,
        )
        self.parent = define_task(
            "crash.parent",
            initial=lambda _: {"phase": "spawn"},
            phases={"spawn": self.spawn, "collect": self.collect},
            abort=self.abort,
        )
        self.effect = define_task(
            "crash.effect",
            initial=lambda _: {"phase": "prepare"},
            phases={"prepare": self.prepare, "applying": self.applying},
            abort=self.abort,
        )
        self.holder = define_task(
            "crash.holder",
            initial=lambda _: {"phase": "hold"},
            phases={"hold": self.hold},
            abort=self.stop(HOLDER_REASON),
        )
        self.victim = define_task(
            "crash.victim",
            initial=lambda _: {"phase": "spawn"},
            phases={"spawn": self.spawn},
            abort=self.stop(VICTIM_REASON),
        )
        self.definitions: dict[str, TaskDefinition] = {
            d.name: d for d in (self.ticker, self.parent, self.effect, self.holder, self.victim)
        }

    # -- plumbing --

    def on_commit(self, info: CommitInfo) -> None:
        """Note each publication: it happens on the line, right after storage returned."""
        self.commits += 1
        for entry in info.entries:
            self.seqs[entry.id] = info.seq
        for record in info.tasks:
            if record.is_live:
                self.live[record.id] = record
            else:
                self.live.pop(record.id, None)
        emit("published", {"seq": info.seq, "entries": [entry.id for entry in info.entries]})

    def ack(self, entry: EntryRecord) -> None:
        """Acknowledge an entry whose commit has returned (never earlier)."""
        emit(
            "ack",
            {
                "entry": entry.id,
                "seq": self.seqs[entry.id],
                "conversation": entry.conversation_id,
                "kind": entry.kind,
                "data": entry.data,
                "by_task": entry.by_task_id,
            },
        )

    async def pause(self) -> None:
        await asyncio.sleep(self.pace)

    async def task_commit(self, runtime: TaskRuntime, build: Build) -> None:
        """Commit an entry and the task's next state in one runtime commit, then ack it."""
        appended: list[EntryRecord] = []

        async def commit(tx: Tx) -> TaskState | None:
            entry, state = await build(tx)
            appended.append(entry)
            return state

        await runtime.commit(commit)
        self.ack(appended[-1])

    # -- task kinds --

    async def abort(self, task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.transition(Aborted("the crash workload never aborts this kind"))

    def stop(self, reason: str) -> Callable[[TaskRecord, TaskRuntime], Awaitable[None]]:
        """Return an abort handler that commits an entry and the ``aborted`` outcome (R43)."""

        async def handler(task: TaskRecord, runtime: TaskRuntime) -> None:
            label: str = fields(task.input)["label"]

            async def build(tx: Tx) -> tuple[EntryRecord, TaskState | None]:
                data = {"label": label, "run": self.run}
                entry = tx.append(task.conversation_id, "crash.aborted", data=data)
                return entry, Aborted(reason)

            await self.task_commit(runtime, build)

        return handler

    async def hold(self, task: TaskRecord, runtime: TaskRuntime) -> None:
        """Commit once, then hold until the abort signal cancels this invocation."""
        label: str = fields(task.input)["label"]
        if not fields(task.state["checkpoint"]).get("holding"):

            async def build(tx: Tx) -> tuple[EntryRecord, TaskState | None]:
                data = {"label": label, "run": self.run}
                entry = tx.append(task.conversation_id, "crash.holding", data=data)
                return entry, Running({"phase": "hold", "holding": True})

            await self.task_commit(runtime, build)
        await asyncio.Event().wait()

    async def tick(self, task: TaskRecord, runtime: TaskRuntime) -> None:
        label: str = fields(task.input)["label"]
        total: int = fields(task.input)["ticks"]
        n: int = fields(task.state["checkpoint"])["tick"]
        self.ledger.record(effect="tick", label=label, task=task.id, n=n, run=self.run)
        AFTER_SAFE_EFFECT.hit()
        await self.pause()

        async def build(tx: Tx) -> tuple[EntryRecord, TaskState | None]:
            progress = await tx.doc(PROGRESS, task.conversation_id)
            progress["ticks"].setdefault(label, []).append(n)
            data = {"label": label, "n": n, "run": self.run}
            entry = tx.append(task.conversation_id, "crash.tick", data=data)
            if n + 1 < total:
                return entry, Running({"phase": "tick", "tick": n + 1})
            return entry, Completed({"label": label, "ticks": total})

        await self.task_commit(runtime, build)

    async def spawn(self, task: TaskRecord, runtime: TaskRuntime) -> None:
        label: str = fields(task.input)["label"]
        victim = task.kind == self.victim.name
        sizes: list[int] = [0] if victim else fields(task.input)["sizes"]
        step = Step("victim" if victim else "parent", label, sizes=tuple(sizes))
        labels = child_labels(step)
        kind = self.holder if victim else self.ticker
        await self.pause()

        async def build(tx: Tx) -> tuple[EntryRecord, TaskState | None]:
            # Creating the children and parking on them is one commit: all or nothing.
            children = [
                tx.create_task(
                    kind,
                    {"label": child, "ticks": ticks},
                    ownership=TaskOwned(runtime.task_id),
                )
                for child, ticks in zip(labels, sizes, strict=True)
            ]
            data = {"label": label, "children": labels, "run": self.run}
            entry = tx.append(task.conversation_id, "crash.spawned", data=data)
            ids = [child.id for child in children]
            return entry, Waiting(on=ids, checkpoint={"phase": "collect", "children": ids})

        await self.task_commit(runtime, build)

    async def collect(self, task: TaskRecord, runtime: TaskRuntime) -> None:
        label: str = fields(task.input)["label"]
        outcomes = await runtime.outcomes(fields(task.state["checkpoint"])["children"])
        ticks = [fields(outcome["result"])["ticks"] for outcome in outcomes]

        async def build(tx: Tx) -> tuple[EntryRecord, TaskState | None]:
            data = {"label": label, "ticks": ticks, "run": self.run}
            entry = tx.append(task.conversation_id, "crash.collected", data=data)
            return entry, Completed({"ticks": ticks})

        await self.task_commit(runtime, build)

    async def prepare(self, task: TaskRecord, runtime: TaskRuntime) -> None:
        """The effect sandwich (R39): memo'd key, intent commit, effect, outcome commit."""
        label: str = fields(task.input)["label"]
        key = await runtime.memo("key", f"{label}-{uuid.uuid4().hex[:12]}")
        await self.pause()

        async def intent(tx: Tx) -> tuple[EntryRecord, TaskState | None]:
            data = {"label": label, "effect": "charge", "key": key, "run": self.run}
            entry = tx.append(task.conversation_id, "crash.intent", data=data)
            return entry, Running({"phase": "applying", "key": key})

        await self.task_commit(runtime, intent)
        BEFORE_EFFECT.hit()
        self.ledger.record(effect="unsafe", label=label, key=key, task=task.id, run=self.run)
        AFTER_EFFECT.hit()
        await self.pause()

        async def outcome(tx: Tx) -> tuple[EntryRecord, TaskState | None]:
            data = {"label": label, "status": "applied", "key": key, "run": self.run}
            entry = tx.append(task.conversation_id, "crash.effect", data=data)
            return entry, Completed({"status": "applied", "key": key})

        await self.task_commit(runtime, outcome)

    async def applying(self, task: TaskRecord, runtime: TaskRuntime) -> None:
        """Reached only by recovery: the effect may have happened; never redo it."""
        label: str = fields(task.input)["label"]
        key: str = fields(task.state["checkpoint"])["key"]
        emit("interrupted", {"label": label, "key": key, "task": task.id})

        async def outcome(tx: Tx) -> tuple[EntryRecord, TaskState | None]:
            data = {"label": label, "status": "interrupted", "key": key, "run": self.run}
            entry = tx.append(task.conversation_id, "crash.effect", data=data)
            return entry, Completed({"status": "interrupted", "key": key})

        await self.task_commit(runtime, outcome)

    # -- the driver --

    async def drive(self, session: Session) -> None:
        """Run the script from the step the driver document names."""
        state = await session.snapshot(DRIVER_DOC)
        if state is None:

            async def start(tx: Tx) -> EntryRecord:
                conversation = tx.create_conversation(Ownerless())
                driver = await tx.doc(DRIVER_DOC)
                driver["conversation"] = conversation.id
                data = {"seed": self.seed, "run": self.run}
                return tx.append(conversation.id, "crash.start", data=data)

            self.ack(await session.commit(start))
            state = await session.snapshot(DRIVER_DOC)
            assert state is not None
        emit("resume-driver", {"step": state["step"]})
        conversation: int = state["conversation"]
        tasks: dict[str, int] = dict(state["tasks"])
        for index in range(state["step"], len(self.script)):
            step = self.script[index]
            await self.pause()
            if step.kind == "await":
                await session.wait_for_task(tasks[step.label])
            elif step.kind == "abort":
                await self.abort_victim(session, tasks[step.label])
            elif step.kind == "finish":
                await session.wait_for_idle()
            created: dict[str, int] = {}
            entry = await session.commit(self.step_commit(index, step, conversation, created))
            self.ack(entry)
            tasks.update(created)

    async def abort_victim(self, session: Session, victim: int) -> None:
        """Once the victim's child holds, abort the victim (R46); again after a restart."""

        def ready() -> bool:
            record = self.live.get(victim)
            if record is None or record.abort_requested:
                return True  # aborted already, by the run a kill interrupted
            children = [t for t in self.live.values() if t.owner == victim]
            return bool(children) and all(
                fields(t.state.get("checkpoint") or {}).get("holding") for t in children
            )

        holding = asyncio.Event()

        def check(_: CommitInfo | None = None) -> None:
            if ready():
                holding.set()

        unsubscribe = session.subscribe(check)  # runs after ``on_commit`` noted the commit
        try:
            check()
            await holding.wait()
        finally:
            unsubscribe()
        await session.abort_task(victim)

    def step_commit(
        self, index: int, step: Step, conversation: int, created: dict[str, int]
    ) -> Callable[[Tx], Awaitable[EntryRecord]]:
        """Return the commit callback of one driver step (its marker moves in the same commit)."""
        total = sum(s.value for s in self.script if s.kind == "note")

        async def commit(tx: Tx) -> EntryRecord:
            driver = await tx.doc(DRIVER_DOC)
            driver["step"] = index + 1
            if step.kind == "note":
                counters = await tx.doc(COUNTERS)
                counters["notes"] += 1
                counters["sum"] += step.value
                notes = await tx.doc(NOTES, conversation)
                notes["lines"].append(f"{step.label}={step.value}")
            elif step.kind in TASK_KINDS:
                own = tx.create_conversation(Ownerless())
                record = tx.create_task(
                    self.definitions[TASK_KINDS[step.kind]],
                    task_input(step),
                    ownership=ConversationOwned(),
                    conversation_id=own.id,
                )
                driver["tasks"][step.label] = created[step.label] = record.id
            kind, data = driver_entry(index, step, total)
            return tx.append(conversation, kind, data={**data, "run": self.run})

        return commit


def task_input(step: Step) -> dict[str, Any]:
    """Return the input of the task a driver step creates."""
    if step.kind == "ticker":
        return {"label": step.label, "ticks": step.sizes[0]}
    if step.kind == "parent":
        return {"label": step.label, "sizes": list(step.sizes)}
    return {"label": step.label}


async def live_tasks(session: Session) -> list[TaskRecord]:
    """Return the live tasks as the store has them once the Session opened (R22)."""
    records: list[TaskRecord] = []
    cursor = None
    while True:
        page = await session.storage.scan_tasks(status=LIVE_TASK_STATUSES, cursor=cursor)
        records.extend(page.items)
        if page.cursor is None:
            return records
        cursor = page.cursor


async def open_storage(args: argparse.Namespace) -> Storage:
    if args.backend == "sqlite":
        return await SqliteStorage.open(args.store, synchronous=args.synchronous)
    if args.backend == "postgres":
        return await PostgresStorage.open(os.environ["PIDURABLE_DATABASE_URL"], args.store)
    storage = await JsonlStorage.open(args.store, fsync=args.fsync)
    emit("repairs", {"repairs": list(storage.repairs)})
    return storage


async def run(args: argparse.Namespace) -> None:
    workload = Workload(args.seed, args.run, args.pace, Ledger(args.ledger))
    emit("ready", {"run": args.run, "pid": os.getpid()})
    storage = await open_storage(args)
    emit("opened", {"seq": storage.last_seq})

    def report(item: Report) -> None:
        emit("report", {"code": item.code, "message": item.message, "task": item.task_id})

    registry = TaskRegistry(list(workload.definitions.values()))
    try:
        session = await Session.open(storage, registry=registry, on_report=report)
    except BaseException:
        await storage.close()  # let the process exit and show the error
        raise
    emit("session", {"seq": storage.last_seq})
    session.subscribe(workload.on_commit)
    workload.live.update((record.id, record) for record in await live_tasks(session))
    for record in workload.live.values():
        emit(
            "resume-task",
            {
                "task": record.id,
                "label": fields(record.input)["label"],
                "kind": record.kind,
                "status": record.status,
                "checkpoint": record.state.get("checkpoint"),
                "memos": record.memos,
            },
        )
    emit("resumed", {"tasks": len(workload.live)})
    try:
        session.resume()
        await workload.drive(session)
        seq = storage.last_seq
    finally:
        # REMINDER: also after SessionFailed (R8): a poisoned Session still holds the
        # store, and aiosqlite's worker thread would keep the process from exiting.
        await session.close()
    emit("complete", {"seq": seq, "commits": workload.commits})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.crash_workload")
    parser.add_argument("--backend", choices=["sqlite", "jsonl", "postgres"], required=True)
    parser.add_argument(
        "--store", required=True, help="SQLite file, JSONL directory or PostgreSQL store name"
    )
    parser.add_argument("--ledger", required=True, help="append-only effect ledger file")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--run", type=int, default=1, help="this process's number in its chain")
    parser.add_argument("--pace", type=float, default=0.0, help="ms slept between steps")
    parser.add_argument("--synchronous", choices=["NORMAL", "FULL"], default="NORMAL")
    parser.add_argument("--fsync", action="store_true", help="JSONL: fsync every commit")
    args = parser.parse_args(argv)
    unknown = failpoints.undefined()
    if unknown:
        print(f"unknown failpoints armed: {unknown}", file=sys.stderr)
        return 2
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
