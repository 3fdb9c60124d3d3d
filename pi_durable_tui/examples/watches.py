"""Document states and watches: observers see committed values only.

A state holds the current committed value and calls subscribers after each
commit; a watch yields one frame per commit with the operations that changed the
document (a growing string arrives as ``append`` operations, which is how
streamed text stays cheap); a late joiner starts from the current value.

Run: ``python -m pi_durable_tui.examples.watches``
"""

from __future__ import annotations

import asyncio

from pi_durable_tui.kernel import Ownerless, Session, Tx, define_doc
from pi_durable_tui.storage import MemoryStorage

LIVE = define_doc("example.live", initial=lambda: {"text": ""})


async def main() -> None:
    session = await Session.open(MemoryStorage())

    async def start(tx: Tx) -> int:
        conversation = tx.create_conversation(Ownerless())
        await tx.doc(LIVE, conversation.id)
        return conversation.id

    conversation_id = await session.commit(start)
    state = await session.document_state(LIVE, conversation_id)
    state.subscribe(lambda value, ops: print("state ->", value))
    watch = await session.watch_doc(LIVE, conversation_id)
    assert watch is not None

    for word in ("Durable ", "streams ", "cost their new bytes."):

        async def stream(tx: Tx, word: str = word) -> None:
            (await tx.doc(LIVE, conversation_id))["text"] += word

        await session.commit(stream)

    frames = aiter(watch)
    for _ in range(3):
        frame = await anext(frames)
        print("frame ->", frame.ops)
    await watch.stop()

    late = await session.watch_doc(LIVE, conversation_id)
    assert late is not None
    print("late joiner starts from:", late.value)
    await session.close()


if __name__ == "__main__":
    asyncio.run(main())
