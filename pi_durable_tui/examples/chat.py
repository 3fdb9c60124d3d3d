"""A chat: two turns on a SQLite store, the answer streamed through commits, then usage.

The model is the offline faux provider, pacing its answers like a real stream.
Streamed text is committed to the conversation's ``pi.live`` document at most
every 100 ms (R85). The example follows the conversation's view (R123), as a
screen would, and prints each committed partial as it arrives: every commit
carries only the text it appended (an ``append`` operation). When a turn ends,
the answer is one ``pi.assistant`` entry and ``pi.live`` is empty again. Last,
the spend of the conversation and of the session (R115, R116).

Run: ``python -m pi_durable_tui.examples.chat``
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from pi_durable_tui.ai import (
    FauxProvider,
    FauxUsage,
    ModelCost,
    ModelRef,
    Models,
    faux_model,
    faux_response,
)
from pi_durable_tui.examples._transcript import entry_line, print_transcript
from pi_durable_tui.harness import LIVE_DOC, USAGE_DOC, AgentChange, Harness, Input, create_registry
from pi_durable_tui.storage import SqliteStorage

ANSWERS = [
    faux_response(
        "A durable agent commits every step before showing it, "
        "so a crash loses nothing that was shown.",
        usage=FauxUsage(input=40, output=22),
    ),
    faux_response(
        "Run it again with --continue: it reopens the same store and carries on.",
        usage=FauxUsage(input=80, output=18),
    ),
]


def show_streamed(value: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    """Print the partial answer a commit brought, and how the commit changed it."""
    changes = [op for op in ops if op["path"][:3] == ["docs", "pi.live", "generation"]]
    message = value["docs"]["pi.live"].get("generation", {}).get("message")
    if not changes or message is None:
        return
    text = "".join(block.get("text", "") for block in message["content"])
    if [op["op"] for op in changes] == ["append"]:
        how = f"this commit appended {changes[0]['text']!r}"
    else:
        how = "this commit set the message"
    print(f"  streamed: {text!r} ({how})")


async def chat(harness: Harness) -> None:
    """Two turns with streamed answers, then the spend."""
    root = await harness.root(agent=AgentChange(model=ModelRef("faux", "faux-1")))
    view = await root.view_state()  # what a screen renders: entries and documents
    view.subscribe(show_streamed)
    for prompt in ("What is a durable agent?", "And after kill -9?"):
        print(f"user: {prompt}")
        record = await (await root.submit(Input(prompt))).wait()
        [answer] = await root.entries(limit=1)  # the newest entry is the answer
        assert answer.id == record.answer
        print(f"{entry_line(answer)} ({record.status})")
        print("pi.live after the turn:", await root.snapshot(LIVE_DOC))
    print("transcript:")
    print_transcript(await root.entries())
    ledger = await root.snapshot(USAGE_DOC) or {}
    for model, spent in ledger["models"].items():
        print(f"pi.usage[{model}]: {spent['total_tokens']} tokens")
    usage = await harness.usage()  # the sum over every conversation of the session
    tokens = f"{usage['input']} input + {usage['output']} output tokens"
    print(f"session usage: {tokens}, ${usage['cost']['total']:.6f}")


async def main() -> None:
    # 40 tokens per second (4 characters each): each answer streams for over half a second.
    # A priced model ($3 / $15 per million input / output tokens), so the spend has a cost.
    priced = faux_model("faux-1", cost=ModelCost(input=3.0, output=15.0))
    faux = FauxProvider(ANSWERS, models=[priced], tokens_per_second=40)
    models = Models()
    models.register_faux(faux)
    with tempfile.TemporaryDirectory() as directory:
        storage = await SqliteStorage.open(Path(directory) / "session.sqlite")
        harness = await Harness.open(storage, models=models, registry=create_registry())
        try:
            await chat(harness)
        finally:
            await harness.close()  # an unclosed SQLite store keeps the process alive


if __name__ == "__main__":
    asyncio.run(main())
