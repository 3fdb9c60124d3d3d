"""The commit filter (``SessionHooks.filter_json``): every value a commit stores passes it.

The harness redacts secrets here (issue 13, DESIGN.md section 7). What the
filter returns is what storage holds *and* what the Session publishes and keeps
live, so the screen, the store and a reopened session agree.
"""

from __future__ import annotations

import json
from typing import Any

from pi_durable_tui.kernel import ConversationOwned, Ownerless, SessionHooks, Tx
from pi_durable_tui.storage import MemoryStorage
from pi_durable_tui.storage.json_ops import Json
from tests.kernel.support import JOB, NOTES, collect_published, open_session, stored

SECRET = "hunter2-but-longer"


class Masking(SessionHooks):
    """Replaces ``SECRET`` in every string, as the harness's redactor does."""

    def filter_json(self, value: Json) -> Json:
        return _mask(value)


def _mask(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(SECRET, "[x]")
    if isinstance(value, list):
        return [_mask(item) for item in value]
    if isinstance(value, dict):
        return {_mask(key): _mask(item) for key, item in value.items()}
    return value


async def test_entries_tasks_submissions_and_documents_are_stored_and_published_filtered() -> None:
    storage = MemoryStorage()
    session = await open_session(storage, hooks=Masking())
    published = collect_published(session)

    async def write(tx: Tx) -> None:
        conversation = tx.create_conversation(Ownerless())
        tx.append(
            conversation.id,
            "note",
            model=[{"role": "user", "content": f"key {SECRET}"}],
            data={SECRET: [SECRET]},
        )
        tx.create_task(
            JOB, {"arg": SECRET}, ownership=ConversationOwned(), conversation_id=conversation.id
        )
        tx.create_submission(conversation.id, "input", detail={"why": SECRET}, reason=SECRET)
        notes = await tx.doc(NOTES, conversation.id)
        notes["text"] = f"note {SECRET}"

    await session.commit(write)

    info = published[-1]
    everything = json.dumps(
        {
            "entries": [e.to_json() for e in info.entries],
            "tasks": [t.to_json() for t in info.tasks],
            "submissions": [s.to_json() for s in info.submissions],
            "documents": [[c.value, c.ops] for c in info.documents],
        }
    )
    assert SECRET not in everything
    assert "[x]" in everything
    conversation_id = info.entries[0].conversation_id
    document = await stored(storage, NOTES, conversation_id)
    assert document is not None
    assert document.value["text"] == "note [x]"
    entry = await storage.entry(info.entries[0].id)
    assert entry is not None
    assert entry.entry.data == {"[x]": ["[x]"]}
    await session.close()


async def test_a_document_change_is_filtered_in_its_delta_too() -> None:
    storage = MemoryStorage()
    session = await open_session(storage, hooks=Masking())
    conversation = await session.commit(lambda tx: tx.create_conversation(Ownerless()))

    for text in ("plain", f"then {SECRET}"):

        async def write(tx: Tx, text: str = text) -> None:
            (await tx.doc(NOTES, conversation.id))["text"] = text

        await session.commit(write)

    document = await stored(storage, NOTES, conversation.id)
    assert document is not None
    assert document.value["text"] == "then [x]"
    snapshot = await session.snapshot(NOTES, conversation.id)
    assert snapshot is not None
    assert snapshot["text"] == "then [x]"
    await session.close()


async def test_without_a_filter_values_are_stored_as_written() -> None:
    storage = MemoryStorage()
    session = await open_session(storage)

    async def write(tx: Tx) -> int:
        conversation = tx.create_conversation(Ownerless())
        return tx.append(conversation.id, "note", data=SECRET).id

    entry_id = await session.commit(write)

    entry = await storage.entry(entry_id)
    assert entry is not None
    assert entry.entry.data == SECRET
    await session.close()
