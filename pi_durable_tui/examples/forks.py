"""Forks: a child conversation sees its parent's entries up to the fork entry.

Each parent document is copied by its fork policy: ``asOf`` (value as of the fork
entry), ``current`` (value when the fork commits) or ``initial`` (not copied).

Run: ``python -m pi_durable_tui.examples.forks``
"""

from __future__ import annotations

import asyncio

from pi_durable_tui.kernel import Ownerless, Session, Tx, define_doc
from pi_durable_tui.storage import MemoryStorage

PLAN = define_doc("example.plan", initial=lambda: {"steps": []}, history="rewindable", fork="asOf")
BUDGET = define_doc("example.budget", initial=lambda: {"left": 100}, fork="current")
SCRATCH = define_doc("example.scratch", initial=lambda: {"text": ""}, fork="initial")


async def main() -> None:
    session = await Session.open(MemoryStorage())

    async def write(tx: Tx) -> tuple[int, int]:
        conversation = tx.create_conversation(Ownerless())
        step = tx.append(conversation.id, "example.step", data="outline")
        (await tx.doc(PLAN, conversation.id))["steps"].append("outline")
        (await tx.doc(BUDGET, conversation.id))["left"] = 90
        (await tx.doc(SCRATCH, conversation.id))["text"] = "draft ideas"
        return conversation.id, step.id

    parent, fork_at = await session.commit(write)

    async def later(tx: Tx) -> None:
        tx.append(parent, "example.step", data="write chapter 1")
        (await tx.doc(PLAN, parent))["steps"].append("write chapter 1")
        (await tx.doc(BUDGET, parent))["left"] = 40

    await session.commit(later)
    child = await session.commit(lambda tx: tx.fork_conversation(parent, fork_at, Ownerless()))

    entries = await session.storage.scan_entries(child.id, order="asc")
    print("child entries:", [stored.entry.data for stored in entries.items])
    print("plan (asOf):   ", await session.snapshot(PLAN, child.id))
    print("budget (current):", await session.snapshot(BUDGET, child.id))
    print("scratch (initial):", await session.snapshot(SCRATCH, child.id))
    await session.close()


if __name__ == "__main__":
    asyncio.run(main())
