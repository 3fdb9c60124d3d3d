"""Durable tasks: phases, checkpoints, a child task and a wait.

A ``report`` task asks a child ``count`` task to count words, waits for it, and
completes with the child's result. Every step is a commit, so a killed process
would continue from the last checkpoint (see the ``recovery`` example).

Run: ``python -m pi_durable_tui.examples.tasks``
"""

from __future__ import annotations

import asyncio

from pi_durable_tui.kernel import (
    Aborted,
    Completed,
    ConversationOwned,
    Ownerless,
    Session,
    TaskOwned,
    TaskRegistry,
    TaskRuntime,
    Tx,
    Waiting,
    define_task,
)
from pi_durable_tui.storage import MemoryStorage, TaskRecord


async def count_words(task: TaskRecord, runtime: TaskRuntime) -> None:
    text = str(task.input)
    await runtime.transition(Completed({"words": len(text.split())}))


async def ask_child(task: TaskRecord, runtime: TaskRuntime) -> None:
    # Creating the child and parking on it is one commit: a restart sees both or neither.
    def spawn(tx: Tx) -> Waiting:
        child = tx.create_task(COUNT, task.input, ownership=TaskOwned(runtime.task_id))
        return Waiting(on=[child.id], checkpoint={"phase": "report", "child": child.id})

    await runtime.commit(spawn)


async def report(task: TaskRecord, runtime: TaskRuntime) -> None:
    child: int = task.state["checkpoint"]["child"]
    [outcome] = await runtime.outcomes([child])
    await runtime.transition(Completed({"child": outcome["result"]}))


async def stop(task: TaskRecord, runtime: TaskRuntime) -> None:
    await runtime.transition(Aborted("stopped by the user"))


COUNT = define_task(
    "example.count", initial=lambda _: {"phase": "count"}, phases={"count": count_words}, abort=stop
)
REPORT = define_task(
    "example.report",
    initial=lambda _: {"phase": "ask"},
    phases={"ask": ask_child, "report": report},
    abort=stop,
)


async def main() -> None:
    session = await Session.open(MemoryStorage(), registry=TaskRegistry([COUNT, REPORT]))
    graph = session.watch_task_graph()
    graph.subscribe(
        lambda value: print(
            "live tasks:",
            sorted(
                f"{node['kind']}#{node['id']} {node['state']['status']}"
                for node in value["tasks"].values()
            ),
        )
    )

    def start(tx: Tx) -> int:
        conversation = tx.create_conversation(Ownerless())
        task = tx.create_task(
            REPORT,
            "durable tasks survive kill -9",
            ownership=ConversationOwned(),
            conversation_id=conversation.id,
        )
        return task.id

    task_id = await session.commit(start)
    final = await session.wait_for_task(task_id)  # starts scheduling, waits for the outcome
    print("outcome:", final.state["outcome"])
    await session.close()


if __name__ == "__main__":
    asyncio.run(main())
