"""Recovery after ``kill -9``: a task continues from its last committed checkpoint.

The example starts a worker process that runs a durable ``backup`` task on a
SQLite store, kills it with SIGKILL in the middle, then starts a fresh worker on
the same store. The task continues at the tick it had committed; its one
side effect (a line in a ledger file) happened exactly once, because it is keyed
by a memo (first writer wins, R40) and the effect checks the key.

Run: ``python -m pi_durable_tui.examples.recovery``
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import uuid
from pathlib import Path

from pi_durable_tui.examples._workers import kill_and_rerun
from pi_durable_tui.kernel import (
    Aborted,
    Completed,
    ConversationOwned,
    Ownerless,
    Running,
    Session,
    TaskRegistry,
    TaskRuntime,
    Tx,
    define_task,
)
from pi_durable_tui.storage import TaskRecord
from pi_durable_tui.storage.sqlite import SqliteStorage

TICKS = 8


def say(text: str) -> None:
    print(text, flush=True)


async def copy(task: TaskRecord, runtime: TaskRuntime) -> None:
    ledger = Path(str(task.input))
    # The memo fixes one key for this effect, even if this phase runs again after a crash.
    key = await runtime.memo("copy-key", uuid.uuid4().hex)
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    if f"copied {key}" not in lines:
        with ledger.open("a") as file:
            file.write(f"copied {key}\n")
    say("copied")
    await runtime.transition(Running({"phase": "tick", "tick": 0}))


async def tick(task: TaskRecord, runtime: TaskRuntime) -> None:
    done: int = task.state["checkpoint"]["tick"]
    say(f"tick {done}")
    await asyncio.sleep(0.05)  # real work would go here
    if done + 1 < TICKS:
        await runtime.transition(Running({"phase": "tick", "tick": done + 1}))
    else:
        await runtime.transition(Completed({"ticks": TICKS}))


async def abort(task: TaskRecord, runtime: TaskRuntime) -> None:
    await runtime.transition(Aborted())


BACKUP = define_task(
    "example.backup",
    initial=lambda _: {"phase": "copy"},
    phases={"copy": copy, "tick": tick},
    abort=abort,
)


async def worker(store: str, ledger: str) -> None:
    storage = await SqliteStorage.open(store)
    session = await Session.open(storage, registry=TaskRegistry([BACKUP]))
    tasks = (await session.inspect())["tasks"]  # the live tasks, as the store has them
    if tasks:
        state = tasks[0]["state"]
        say(f"reopened: task {tasks[0]['id']} is {state['status']} at {state.get('checkpoint')}")
        task_id: int = tasks[0]["id"]
    else:

        def start(tx: Tx) -> int:
            conversation = tx.create_conversation(Ownerless())
            task = tx.create_task(
                BACKUP, ledger, ownership=ConversationOwned(), conversation_id=conversation.id
            )
            return task.id

        task_id = await session.commit(start)
    final = await session.wait_for_task(task_id)
    say(f"outcome: {final.state['outcome']}")
    await session.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = os.path.join(directory, "session.sqlite")
        ledger = os.path.join(directory, "ledger.txt")
        module = "pi_durable_tui.examples.recovery"
        command = [sys.executable, "-m", module, "--worker", store, ledger]
        kill_and_rerun(command, kill_at="tick 3")
        print("ledger:", Path(ledger).read_text().strip().splitlines())


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        asyncio.run(worker(sys.argv[2], sys.argv[3]))
    else:
        main()
