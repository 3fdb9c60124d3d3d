"""The creation hook and an agent change written in the same commit (R25).

A task-owned conversation gets a copy of its owner task's conversation's agent;
an agent change the creating commit wrote wins over that copy, whether it came
through the convenience (``create_conversation(agent=...)``, applied after the
hook) or through ``configure`` right after a raw ``tx.create_conversation``
(written before the hook, which runs when the commit prepares). The other
creation rules are in ``test_lifecycle``.
"""

from __future__ import annotations

from pi_durable_tui.ai import ModelRef
from pi_durable_tui.harness import (
    AGENT_DOC,
    AgentChange,
    ExtensionEdit,
    HarnessRuntime,
    configure,
    define_extension,
    define_task,
)
from pi_durable_tui.kernel import Completed, ConversationOwned, TaskOwned, Tx
from pi_durable_tui.storage import TaskRecord
from tests.harness.harness_support import HarnessKit


async def _complete(_task: TaskRecord, runtime: HarnessRuntime) -> None:
    await runtime.commit(lambda tx: Completed(None))


NOTHING = define_task(
    "test.nothing",
    initial=lambda _input: {"phase": "run"},
    phases={"run": _complete},
    abort=_complete,
)
"""A task kind; it never runs here (nothing in these tests starts scheduling)."""
CHILD = AgentChange(
    model=ModelRef("faux", "child-model"),
    tools=["read"],
    instructions="child rules",
    extensions=ExtensionEdit(remove=("subagent",)),
)


async def test_r25_configure_after_a_raw_create_in_the_same_commit_wins_over_the_owner_copy(
    kit: HarnessKit,
) -> None:
    kit.install(define_extension("tasks", tasks=[NOTHING]))
    root = await kit.root(instructions="parent rules", thinking_level="high")
    definition = kit.harness.definition(NOTHING)

    async def start(tx: Tx) -> int:
        # As the background subagent does: its task and its conversation in one commit.
        task = tx.create_task(definition, None, ownership=ConversationOwned(), conversation_id=1)
        record = tx.create_conversation(TaskOwned(task.id))
        await configure(tx, record.id, CHILD)
        return record.id

    child = await root.commit(start)

    parent = await root.snapshot(AGENT_DOC)
    agent = await kit.harness.conversation(child).snapshot(AGENT_DOC)
    assert parent is not None
    assert agent is not None
    assert agent == {**parent, **CHILD.to_json()}
    assert agent["model"] == {"provider": "faux", "model_id": "child-model"}
    assert agent["tools"] == ["read"]
    assert agent["instructions"] == "child rules"
    assert agent["extensions"] == {"add": [], "remove": ["subagent"]}
    # Fields the change left alone are the owner's.
    assert (agent["thinking_level"], agent["cwd"]) == ("high", parent["cwd"])


async def test_r25_the_convenience_agent_change_wins_over_the_owner_copy_too(
    kit: HarnessKit,
) -> None:
    kit.install(define_extension("tasks", tasks=[NOTHING]))
    root = await kit.root(instructions="parent rules")
    definition = kit.harness.definition(NOTHING)
    task_id = await root.commit(
        lambda tx: (
            tx.create_task(definition, None, ownership=ConversationOwned(), conversation_id=1).id
        )
    )

    child = await kit.harness.create_conversation(ownership=TaskOwned(task_id), agent=CHILD)

    parent = await root.snapshot(AGENT_DOC)
    assert parent is not None
    assert await child.snapshot(AGENT_DOC) == {**parent, **CHILD.to_json()}


async def test_r25_a_raw_create_without_a_change_is_an_exact_copy_of_the_owner_agent(
    kit: HarnessKit,
) -> None:
    kit.install(define_extension("tasks", tasks=[NOTHING]))
    root = await kit.root(instructions="parent rules")
    definition = kit.harness.definition(NOTHING)

    def start(tx: Tx) -> int:
        task = tx.create_task(definition, None, ownership=ConversationOwned(), conversation_id=1)
        return tx.create_conversation(TaskOwned(task.id)).id

    child = await root.commit(start)

    assert await kit.harness.conversation(child).snapshot(AGENT_DOC) == await root.snapshot(
        AGENT_DOC
    )
