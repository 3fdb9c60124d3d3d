"""A foreground subagent: the ``subagent`` tool call waits for a child conversation's answer.

The main agent hands a task to the ``subagent`` tool (the ``SUBAGENTS`` extension
of ``pi_durable_tui.app``). The call creates a child conversation owned by the
tool task, with the same agent minus the ``subagent`` tool, submits the task
there and waits; the child runs its own turn (a slow ``bash`` command) and its
answer becomes the tool result the main agent reads (reference 5.4). The task
graph, printed while the child's command runs, shows the child conversation
under the tool call that owns it (R126).

Run: ``python -m pi_durable_tui.examples.subagent_foreground``
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from pi_durable_tui.ai import (
    FauxMatch,
    faux_response,
    faux_tool_call,
)
from pi_durable_tui.app import SUBAGENTS
from pi_durable_tui.examples._coding_agent import open_coding_agent
from pi_durable_tui.examples._task_tree import graph_reaches, print_task_tree, running_commands
from pi_durable_tui.examples._transcript import message_of, print_transcript
from pi_durable_tui.harness import Input

MAIN = FauxMatch(user="How many notes")
CHILD = FauxMatch(user="Count the lines")
# By position: each conversation gets the matching response at its own turn number.
SCRIPT = [
    faux_response(
        faux_tool_call("subagent", {"task": "Count the lines of notes.txt with wc -l."}),
        match=MAIN,
    ),
    faux_response("The subagent counted 3 notes.", match=MAIN),
    faux_response(faux_tool_call("bash", {"command": "sleep 0.5; wc -l < notes.txt"}), match=CHILD),
    faux_response("notes.txt has 3 lines.", match=CHILD),
]


async def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        Path(workdir, "notes.txt").write_text("milk\nbread\neggs\n")
        harness, root = await open_coding_agent(SCRIPT, workdir, SUBAGENTS, choose_by="position")

        submission = await root.submit(Input("How many notes do I have?"))
        # The task graph, once a tool call executes outside the main conversation.
        graph = await graph_reaches(
            harness.watch_task_graph(),
            lambda value: any(cid != root.id for cid in running_commands(value)),
        )
        print("task graph while the subagent's command runs:")
        print_task_tree(graph)
        record = await submission.wait()
        print(f"main conversation ({record.status}):")
        print_transcript(await root.entries())
        [tool_result] = [e for e in await root.entries() if e.kind == "pi.tool-result"]
        child = harness.conversation(message_of(tool_result)["details"]["conversation_id"])
        print(f"subagent conversation {child.id}:")
        print_transcript(await child.entries())
        print("task graph after the answer:")
        print_task_tree(harness.task_graph())
        await harness.close()


if __name__ == "__main__":
    asyncio.run(main())
