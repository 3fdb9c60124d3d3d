"""A background subagent keeps working after Esc and reports back as a follow-up.

The main agent starts a subagent with ``background: true`` (the ``subagent`` tool
of ``pi_durable_tui.app``): the call returns at once, and a background task
``pi.subagent`` runs the child conversation. The main agent then starts a long
command; the user presses Esc (``Conversation.abort()``), which aborts the
command and the turn but not the background task (R57: abort does not cross a
background boundary). When the child answers, its report reaches the main
conversation as a follow-up input, which starts a new turn there (reference 5.4).
The task graph is printed before and after Esc.

Run: ``python -m pi_durable_tui.examples.subagent_background``
"""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

from pi_durable_tui.ai import (
    FauxMatch,
    faux_response,
    faux_tool_call,
)
from pi_durable_tui.app import SUBAGENTS
from pi_durable_tui.examples._coding_agent import open_coding_agent
from pi_durable_tui.examples._task_tree import graph_reaches, print_task_tree, running_commands
from pi_durable_tui.examples._transcript import print_transcript
from pi_durable_tui.harness import Input

RESEARCH = "Find three sources on durable execution."
CHILD = FauxMatch(user=RESEARCH)
# By position: each conversation gets the matching response at its own turn number.
SCRIPT = [
    faux_response(
        faux_tool_call("subagent", {"task": RESEARCH, "background": True}),
        faux_tool_call("bash", {"command": "sleep 30"}),
        match=FauxMatch(user="Research"),
    ),
    faux_response(
        "The subagent's report is in: three sources found.",
        match=FauxMatch(user="report]"),
    ),
    faux_response(faux_tool_call("bash", {"command": "sleep 1; echo 3 sources"}), match=CHILD),
    faux_response("Found 3 sources: a paper, a talk and a blog post.", match=CHILD),
]


def main_and_child_commands(graph: dict[str, Any]) -> bool:
    """Whether a command executes in the main conversation (1) and one in another."""
    conversations = set(running_commands(graph))
    return 1 in conversations and len(conversations) == 2


async def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        harness, root = await open_coding_agent(SCRIPT, workdir, SUBAGENTS, choose_by="position")
        first = await root.submit(Input("Research durable execution in the background."))
        # Wait until both commands execute: the main agent's and the subagent's.
        graph = await graph_reaches(harness.watch_task_graph(), main_and_child_commands)
        print("task graph before Esc:")
        print_task_tree(graph)
        await root.abort()
        print(f"Esc: the main turn is {(await first.status()).reason}")
        print("task graph after Esc:")
        print_task_tree(harness.task_graph())

        [subagent] = [n for n in harness.task_graph()["tasks"].values() if n["background"]]
        outcome = (await harness.wait_for_task(subagent["id"])).state["outcome"]
        print(f"{subagent['kind']}#{subagent['id']} {outcome['status']}")
        await root.wait_for_idle()  # the report started a turn in the main conversation
        print("main conversation:")
        print_transcript(await root.entries())
        await harness.close()


if __name__ == "__main__":
    asyncio.run(main())
