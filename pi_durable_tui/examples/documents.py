"""Typed documents: define one, change it in commits, read it now and as of an entry.

Run: ``python -m pi_durable_tui.examples.documents``
"""

from __future__ import annotations

import asyncio

from pi_durable_tui.kernel import Ownerless, Session, Tx, define_doc
from pi_durable_tui.storage import MemoryStorage

# A conversation document whose history is kept, so it can be read as of any entry.
NOTES = define_doc(
    "example.notes",
    initial=lambda: {"title": "", "lines": []},
    history="rewindable",
    fork="asOf",
    # Store a complete base every 8 deltas, which bounds replay on reads.
    checkpoint_when=lambda value, ops, deltas_since_base: deltas_since_base >= 8,
)


async def main() -> None:
    session = await Session.open(MemoryStorage())

    async def start(tx: Tx) -> tuple[int, int]:
        conversation = tx.create_conversation(Ownerless())
        first = tx.append(conversation.id, "example.note", data={"text": "first"})
        notes = await tx.doc(NOTES, conversation.id)
        notes["title"] = "Groceries"
        notes["lines"].append("milk")
        return conversation.id, first.id

    conversation_id, first_entry = await session.commit(start)

    async def more(tx: Tx) -> None:
        tx.append(conversation_id, "example.note", data={"text": "second"})
        notes = await tx.doc(NOTES, conversation_id)
        notes["lines"].append("bread")
        notes["title"] += " for Sunday"  # stored as one string append, not a whole new title

    await session.commit(more)

    print("now:       ", await session.snapshot(NOTES, conversation_id))
    print("as of first:", await session.snapshot_as_of(NOTES, conversation_id, first_entry))
    await session.close()


if __name__ == "__main__":
    asyncio.run(main())
