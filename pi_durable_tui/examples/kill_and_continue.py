"""Kill and continue: an agent killed with SIGKILL in the middle of a ``bash`` command.

The example starts a worker process that runs a scripted agent session on a
SQLite store: the model asks for a slow ``bash`` command that appends to a
ledger file and prints steps. The command's output is committed while it runs
(R103). When the worker has committed two steps, the example kills it with
SIGKILL, then starts a second worker on the same store:

- submitting the same input again with its ``request_id`` returns the submission
  the first worker made: nothing is duplicated (R59);
- ``bash`` is not replay-safe, so the command is not run again: the model gets an
  ``interrupted`` result holding the output that had been committed (R95);
- the faux script chooses its responses by position in the conversation, so the
  second process gets the same next response as the first would have.

The ledger shows the command started exactly once.

Run: ``python -m pi_durable_tui.examples.kill_and_continue``
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.examples._coding_agent import open_coding_agent
from pi_durable_tui.examples._transcript import message_of, message_text
from pi_durable_tui.examples._workers import kill_and_rerun
from pi_durable_tui.harness import TOOL_RESULT, Conversation, Harness, Input
from pi_durable_tui.storage import SqliteStorage

# Each step prints, then sleeps; once the worker is gone, the next echo hits a
# closed pipe and the shell ends, so nothing is left running after the kill.
COMMAND = "echo started >> ledger.txt; for i in 1 2 3 4 5 6; do echo step $i; sleep 0.4; done"
SCRIPT = [
    faux_response(faux_tool_call("bash", {"command": COMMAND})),
    faux_response("The build was interrupted; I will not rerun it without asking."),
]


def say(text: str) -> None:
    print(text, flush=True)


async def worker(store: str, workdir: str) -> None:
    storage = await SqliteStorage.open(store)
    harness, root = await open_coding_agent(SCRIPT, workdir, choose_by="position", storage=storage)
    try:
        await build(harness, root)
    finally:
        await harness.close()  # an unclosed SQLite store keeps the process alive


async def build(harness: Harness, root: Conversation) -> None:
    """Submit the build request (again, after a restart) and print how it ends."""
    tasks = (await harness.inspect())["tasks"]
    if tasks:
        say(f"reopened with live tasks: {[(t['kind'], t['state']['status']) for t in tasks]}")
    shown = 0  # output lines printed so far

    def show_output(value: dict[str, Any], _ops: object) -> None:
        nonlocal shown
        for slot in value["docs"]["pi.live"].get("tools", []):
            lines = str(slot.get("output", "")).splitlines()
            for line in lines[shown:]:
                say(f"committed output: {line}")
            shown = max(shown, len(lines))

    view = await root.view_state()  # what a screen renders
    view.subscribe(show_output)
    submission = await root.submit(Input("Build the project", request_id="build-1"))
    say(f"submission {submission.id} for request build-1 is {submission.record.status}")
    record = await submission.wait()
    for entry in sorted(await root.entries(), key=lambda e: e.id):
        if entry.kind == TOOL_RESULT:
            say("tool result the model got:")
            for block in message_of(entry)["content"]:
                for line in block["text"].splitlines():
                    say(f"  {line}")
    [answer] = await root.entries(limit=1)
    say(f"answer ({record.status}): {message_text(message_of(answer))}")


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = os.path.join(directory, "session.sqlite")
        module = "pi_durable_tui.examples.kill_and_continue"
        command = [sys.executable, "-m", module, "--worker", store, directory]
        kill_and_rerun(command, kill_at="committed output: step 2")
        print("ledger:", Path(directory, "ledger.txt").read_text().split())


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        asyncio.run(worker(sys.argv[2], sys.argv[3]))
    else:
        main()
