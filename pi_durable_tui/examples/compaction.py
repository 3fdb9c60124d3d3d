"""Compaction: older context replaced by a model-written summary, by hand and at a threshold.

The faux model has a 420-token context window and the harness keeps 150 tokens
in reserve, so a request estimated above 270 tokens is first compacted (R108).
After three turns the example compacts by hand (``compact(instructions)``): the
model summarizes the older entries, and a ``pi.compaction`` entry whose ``head``
is the first kept entry starts the active context (R109-R112). Then the
conversation goes on until a turn starts above the threshold, and a blocking
compaction runs before that turn's request. The summary entry and the active
context are printed before and after each compaction; nothing is deleted from
the transcript, only the context sent to the model gets shorter.

Run: ``python -m pi_durable_tui.examples.compaction``
"""

from __future__ import annotations

import asyncio

from pi_durable_tui.ai import FauxMatch, FauxProvider, ModelRef, Models, faux_model, faux_response
from pi_durable_tui.examples._transcript import message_of, message_text
from pi_durable_tui.harness import (
    COMPACTION,
    AgentChange,
    CompactionSettings,
    Conversation,
    Harness,
    Settings,
    create_registry,
)
from pi_durable_tui.storage import EntryRecord, MemoryStorage

WINDOW = 420
RESERVE = 150
SETTINGS = Settings(
    compaction=CompactionSettings(
        reserve_tokens=RESERVE, keep_recent_tokens=100, background_tokens=0
    )
)
PROMPTS = [
    "We are planning a week in Lisbon in May for two people.",
    "The budget is 2,000 euros without flights.",
    "We prefer small guesthouses to hotels, in Alfama or Graca.",
    "Add a day trip to Sintra, by train.",
    "One of us is vegetarian; note good restaurants.",
    "Book a fado evening on the Friday.",
    "Now write the final plan, day by day.",
]
# A summarization request carries the transcript in <conversation> tags (R111).
SUMMARIES = [
    faux_response(
        "## Goal\nA week in Lisbon in May for two. Budget 2,000 EUR without flights; "
        "guesthouses in Alfama or Graca.",
        match=FauxMatch(user="Additional focus"),  # only the manual one has instructions
    ),
    faux_response(
        "## Goal\nA week in Lisbon in May for two, 2,000 EUR, guesthouses, a Sintra day trip "
        "by train, vegetarian restaurants.",
        match=FauxMatch(user="<conversation>"),
    ),
]
ANSWERS = [
    faux_response(f"Noted: {prompt.lower()} I will keep this in mind for the plan. " * 2)
    for prompt in PROMPTS
]


async def show_context(conversation: Conversation, label: str, at: int | None = None) -> None:
    """Print the messages of the active context (as of entry ``at``), the head marker first."""
    view = await conversation.context(at)
    messages = [message for message in view.messages if message["role"] != "system"]
    print(f"{label}: {len(messages)} messages")
    for message in messages:
        print(f"    {message['role']}: {message_text(message)[:70]}")


def show_summary(entry: EntryRecord) -> None:
    """Print a summary entry: why it was made, where it starts, the summary text."""
    text = message_text(message_of(entry))
    summary = text.partition("<summary>")[2].partition("</summary>")[0].strip()
    print(f"{entry.kind} entry {entry.id}: data {entry.data}, head {entry.head} (first kept entry)")
    print(f"    summary: {summary}")


async def newest_usage(conversation: Conversation) -> int:
    """The tokens the newest model request counted (input plus output)."""
    for entry in await conversation.entries():
        usage = message_of(entry).get("usage")
        if usage:
            return int(usage["input"] + usage["output"])
    return 0


async def main() -> None:
    small = faux_model("faux-small", context_window=WINDOW, max_tokens=200)
    faux = FauxProvider([*SUMMARIES, *ANSWERS], models=[small])
    models = Models()
    models.register_faux(faux)
    harness = await Harness.open(
        MemoryStorage(), models=models, registry=create_registry(), settings=SETTINGS
    )
    root = await harness.root(agent=AgentChange(model=ModelRef("faux", "faux-small")))
    for prompt in PROMPTS[:3]:
        await (await root.submit(prompt)).wait()
    print(f"after 3 turns the newest request counted {await newest_usage(root)} tokens")
    await show_context(root, "active context before compact()")

    task_id = await root.compact("Keep the budget and the neighbourhoods.")
    await harness.wait_for_task(task_id)
    [summary] = await root.entries(limit=1)
    show_summary(summary)
    await show_context(root, "active context after compact()")

    for prompt in PROMPTS[3:]:
        before = await newest_usage(root)
        await (await root.submit(prompt)).wait()
        entries = await root.entries(limit=100)
        newest = next(e for e in entries if e.kind == COMPACTION)
        if newest.id == summary.id:
            print(f"turn {prompt!r}: the request before it counted {before} tokens")
            continue
        print(f"turn {prompt!r}: the request before it counted {before} tokens;")
        print(f"  this one would pass {WINDOW} - {RESERVE} = {WINDOW - RESERVE}: compacted first")
        show_summary(newest)
        previous = entries[entries.index(newest) + 1]  # entries are newest first
        await show_context(root, "active context just before it", at=previous.id)
        await show_context(root, "active context after the automatic compaction")
        break
    print(f"storage keeps all {len(entries)} entries; only the context sent to the model shrank")
    await harness.close()


if __name__ == "__main__":
    asyncio.run(main())
