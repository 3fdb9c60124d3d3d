"""The inbox: steering, following up and refusing while the agent works.

While the agent runs a slow ``bash`` command, three inputs arrive:

- a steer (``when_busy="steer"``) is placed after the current tool round, so the
  model reads it right after the command's result (R61, R62);
- a follow-up (the default) waits until the run answers and then starts the next
  run (R64);
- a ``when_busy="reject"`` input is refused with ``ConversationBusy`` and leaves
  no record (R59).

Then, during a second slow command, a queued follow-up and a queued write (an
application note) are pending when ``Conversation.abort()`` (Esc) runs: the
input is withdrawn (``unanswered``/``aborted``), the write stays queued and is
placed at the next boundary (R67).

Run: ``python -m pi_durable_tui.examples.inbox``
"""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.examples._coding_agent import open_coding_agent
from pi_durable_tui.examples._transcript import print_transcript
from pi_durable_tui.harness import (
    INBOX_DOC,
    ConversationBusy,
    EntryDraft,
    Input,
    ViewState,
    Write,
)

SCRIPT = [
    faux_response(faux_tool_call("bash", {"command": "sleep 0.5; echo 12 passed"}), match="tests"),
    faux_response("Tests pass (12) and lint is clean.", match="lint"),
    faux_response("Summary: 12 tests pass, lint clean.", match="summary"),
    faux_response(faux_tool_call("bash", {"command": "sleep 30"}), match="benchmarks"),
    faux_response("Noted.", match="Anything new"),
]


async def tool_running(view: ViewState) -> None:
    """Return once a tool call of the current round is running (from committed state)."""
    running = asyncio.Event()

    def check(value: dict[str, Any], _ops: object) -> None:
        slots = value["docs"]["pi.live"].get("tools", [])
        if any(slot["status"] == "running" for slot in slots):
            running.set()

    unsubscribe = view.subscribe(check)
    check(view.value, None)
    await running.wait()
    unsubscribe()


async def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        harness, root = await open_coding_agent(SCRIPT, workdir)
        view = await root.view_state()  # what a screen renders

        first = await root.submit(Input("Run the tests"))
        await tool_running(view)
        print("busy: bash is running")
        steer = await root.submit(Input("Also check lint", when_busy="steer"))
        follow_up = await root.submit(Input("Then write a summary"))
        try:
            await root.submit(Input("Are you there?", when_busy="reject"))
        except ConversationBusy as error:
            print("reject:", error)
        inbox = await root.snapshot(INBOX_DOC) or {}
        print("inbox:", [(item["mode"], item["content"]) for item in inbox["items"]])
        for name, handle in (("first", first), ("steer", steer), ("follow-up", follow_up)):
            print(f"{name}: {(await handle.wait()).status}")
        print("transcript:")
        print_transcript(await root.entries())

        print("--- Esc while a follow-up and a write are queued ---")
        await root.submit(Input("Run the benchmarks"))
        await tool_running(view)
        queued_input = await root.submit(Input("Compare with yesterday"))
        note = EntryDraft("example.note", data={"text": "benchmarks were started by hand"})
        queued_write = await root.submit(Write(note))
        await root.abort()
        record = await queued_input.status()
        print(f"queued input after abort: {record.status}/{record.reason}")
        print(f"queued write after abort: {(await queued_write.status()).status}")
        inbox = await root.snapshot(INBOX_DOC) or {}
        print("inbox after abort:", [item["mode"] for item in inbox["items"]])
        await (await root.submit(Input("Anything new?"))).wait()
        print(f"queued write after the next input: {(await queued_write.status()).status}")
        print("transcript since the benchmarks:")
        print_transcript(await root.entries(limit=6))
        await harness.close()


if __name__ == "__main__":
    asyncio.run(main())
