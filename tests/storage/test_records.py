"""The stored JSON of every record type (``pi_durable_tui.storage.records``).

Backends keep records as the text of ``to_json`` (R10, R128), so the format is
pinned here byte for byte: each record, with its optional fields left at their
defaults and with all of them set, turns into exactly the stored text below and
``from_json`` of that text gives back an equal record.
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_durable_tui.storage.json_ops import dumps, loads
from pi_durable_tui.storage.records import (
    ConversationOwner,
    ConversationRecord,
    ConversationScope,
    DocumentRecord,
    EntryRecord,
    ForkPoint,
    SessionScope,
    SubmissionRecord,
    TaskRecord,
    TaskScope,
)

STORED: list[tuple[Any, str]] = [
    (ConversationRecord(1), '{"id":1}'),
    (
        ConversationRecord(5, parent=ForkPoint(1, 4), owner=ConversationOwner(1, 3)),
        '{"id":5,"parent":{"conversation_id":1,"at":4},"owner":{"conversation_id":1,"task_id":3}}',
    ),
    (EntryRecord(2, 1, "user"), '{"id":2,"conversation_id":1,"kind":"user"}'),
    (
        EntryRecord(
            2,
            1,
            "user",
            model=[{"role": "user"}],
            data={"a": [1, None]},
            head=2,
            edits=[{"op": "x"}],
            by_task_id=7,
        ),
        '{"id":2,"conversation_id":1,"kind":"user","model":[{"role":"user"}],'
        '"data":{"a":[1,null]},"head":2,"edits":[{"op":"x"}],"by_task_id":7}',
    ),
    (
        TaskRecord(3, 1, "pi.tool", 1, None, {"status": "pending"}),
        '{"id":3,"conversation_id":1,"kind":"pi.tool","version":1,"input":null,'
        '"state":{"status":"pending"},"background":false,"abort_requested":false}',
    ),
    (
        TaskRecord(
            3,
            1,
            "pi.tool",
            2,
            {"x": 1},
            {"status": "running", "checkpoint": {}},
            owner=9,
            background=True,
            abort_requested=True,
            started_at=1.5,
            ended_at=2.5,
            memos={"m": "v"},
        ),
        '{"id":3,"conversation_id":1,"kind":"pi.tool","version":2,"input":{"x":1},'
        '"state":{"status":"running","checkpoint":{}},"background":true,"abort_requested":true,'
        '"owner":9,"started_at":1.5,"ended_at":2.5,"memos":{"m":"v"}}',
    ),
    (
        SubmissionRecord(4, 1, "input", "queued"),
        '{"id":4,"conversation_id":1,"type":"input","status":"queued"}',
    ),
    (
        SubmissionRecord(
            4, 1, "write", "unanswered", "r1", entry=6, answer=8, reason="aborted", detail=[1]
        ),
        '{"id":4,"conversation_id":1,"type":"write","status":"unanswered","request_id":"r1",'
        '"entry":6,"answer":8,"reason":"aborted","detail":[1]}',
    ),
    (
        DocumentRecord(6, "pi.live", SessionScope(), 3),
        '{"id":6,"kind":"pi.live","scope":{"kind":"session"},"created_at":3}',
    ),
    (
        DocumentRecord(6, "pi.docs", ConversationScope(1, "rewindable", "current"), 3, "k", 9),
        '{"id":6,"kind":"pi.docs","scope":{"kind":"conversation","conversation_id":1,'
        '"history":"rewindable","fork":"current"},"created_at":3,"key":"k","retired_at":9}',
    ),
    (
        DocumentRecord(6, "pi.task", TaskScope(3), 3),
        '{"id":6,"kind":"pi.task","scope":{"kind":"task","task_id":3},"created_at":3}',
    ),
]


@pytest.mark.parametrize(("record", "text"), STORED, ids=lambda v: type(v).__name__)
def test_every_record_is_stored_as_its_pinned_json_text(record: Any, text: str) -> None:
    assert dumps(record.to_json()) == text


@pytest.mark.parametrize(("record", "text"), STORED, ids=lambda v: type(v).__name__)
def test_every_record_comes_back_equal_from_its_stored_text(record: Any, text: str) -> None:
    assert type(record).from_json(loads(text)) == record


def test_a_task_stored_without_its_flags_reads_them_as_false() -> None:
    task = TaskRecord.from_json(
        {"id": 3, "conversation_id": 1, "kind": "k", "version": 1, "state": {"status": "pending"}}
    )

    assert (task.input, task.background, task.abort_requested) == (None, False, False)


def test_an_unknown_document_scope_kind_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown document scope 'galaxy'"):
        DocumentRecord.from_json(
            {"id": 1, "kind": "d", "scope": {"kind": "galaxy"}, "created_at": 1}
        )
