"""Shared pieces of the JSONL backend tests: a workload and a dump of every read.

``workload()`` is a deterministic list of commit batches that touches every kind
of record and document write (forks, copies, retirements, family keys, version
changes, reclamation, non-ASCII text in every file). ``dump(storage)`` asks a
store every question the Storage protocol answers and returns the answers as
plain data, so two stores are equal when their dumps are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from pi_durable_tui.storage import (
    ChangeDocument,
    ConversationOwner,
    ConversationRecord,
    ConversationScope,
    CopyDocument,
    CreateDocument,
    DocAddress,
    EntryRecord,
    ForkPoint,
    MemoryStorage,
    Page,
    PutConversation,
    PutEntry,
    PutSubmission,
    PutTask,
    RetireDocument,
    ScopeRef,
    SessionScope,
    StorageError,
    SubmissionRecord,
    TaskRecord,
    TaskScope,
    Write,
)
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import SubmissionStatus

TEXT = "héllo wörld 漢字 🎉"
"""Non-ASCII text with 2-, 3- and 4-byte UTF-8 sequences."""

# Fixed IDs, so tests can name what they damage.
E1, S_DOC, L_DOC, A_DOC, I_DOC, T1, U1, E2, E3, D_DOC, T2 = range(2, 13)
C2, A2_DOC, L2_DOC, E4, C3, I2_DOC, R_DOC, X_DOC, K_A, K_B, T3, U2 = range(13, 25)
E5, N1_DOC, T4, U3, E6 = range(25, 30)
LAST_THREE_RECLAIM_FREE = True
"""The last three commits of the workload reclaim nothing (see the torn-tail test)."""


def task(
    task_id: int,
    state: dict[str, Any],
    *,
    conversation: int = 1,
    owner: int | None = None,
    background: bool = False,
    abort: bool = False,
) -> PutTask:
    """Return a task write with a small input."""
    return PutTask(
        TaskRecord(
            task_id,
            conversation,
            "pi.test",
            1,
            {"prompt": TEXT},
            state,
            owner=owner,
            background=background,
            abort_requested=abort,
        )
    )


def running(phase: str) -> dict[str, Any]:
    return {"status": "running", "checkpoint": {"phase": phase}}


def terminal(result: Any) -> dict[str, Any]:
    return {"status": "terminal", "outcome": {"status": "completed", "result": result}}


def append(document_id: int, text: str, path: str = "text") -> ChangeDocument:
    return ChangeDocument(document_id, 1, ops=[{"op": "append", "path": [path], "text": text}])


def entry(
    entry_id: int, conversation: int = 1, kind: str = "pi.user", data: Any = None, **fields: Any
) -> PutEntry:
    """Return an entry write; its data defaults to non-ASCII text."""
    data = {"text": TEXT} if data is None else data
    return PutEntry(EntryRecord(entry_id, conversation, kind, data=data, **fields))


def workload() -> list[list[Write]]:
    """Return the batches of the shared workload; commit ``i`` gets seq ``i + 1``."""
    latest = ConversationScope(1, "latest", "initial")
    rewindable = ConversationScope(1, "rewindable", "asOf")
    return [
        # 1
        [
            PutConversation(ConversationRecord(1)),
            CreateDocument(S_DOC, "pi.settings", SessionScope(), 1, {"theme": "dark"}),
        ],
        # 2
        [
            entry(E1),
            CreateDocument(L_DOC, "pi.live", latest, 1, {"text": ""}),
            CreateDocument(A_DOC, "pi.agent", rewindable, 1, {"model": "x"}),
            CreateDocument(I_DOC, "pi.inbox", latest, 1, {"items": []}),
        ],
        # 3
        [
            task(T1, {"status": "pending", "checkpoint": {"phase": "start"}}),
            PutSubmission(SubmissionRecord(U1, 1, "input", "queued", request_id="r1")),
        ],
        # 4
        [
            task(T1, running("start")),
            PutSubmission(SubmissionRecord(U1, 1, "input", "placed", request_id="r1", entry=E1)),
            append(L_DOC, "Grüße "),
        ],
        # 5
        [entry(E2, kind="pi.assistant"), entry(E3, head=E2)],
        # 6
        [ChangeDocument(A_DOC, 1, base={"model": "y"}), append(L_DOC, "🎉")],
        # 7
        [
            CreateDocument(D_DOC, "pi.progress", TaskScope(T1), 1, {"progress": 0}),
            task(T2, {"status": "pending", "checkpoint": {"phase": "go"}}, owner=T1),
        ],
        # 8
        [
            ChangeDocument(D_DOC, 1, ops=[{"op": "set", "path": ["progress"], "value": 1}]),
            ChangeDocument(S_DOC, 1, base={"theme": "light"}),
            task(
                T1,
                {
                    "status": "waiting",
                    "checkpoint": {"phase": "join"},
                    "on": [T2],
                    "policy": "all_settled",
                },
            ),
        ],
        # 9
        [
            PutConversation(ConversationRecord(C2, parent=ForkPoint(1, E2))),
            CopyDocument(A2_DOC, "pi.agent", ConversationScope(C2, "rewindable", "asOf"), A_DOC, 5),
            CopyDocument(L2_DOC, "pi.live", ConversationScope(C2, "latest", "initial"), L_DOC, 8),
        ],
        # 10
        [
            entry(E4, C2),
            PutConversation(ConversationRecord(C3, owner=ConversationOwner(1, T2))),
            task(T2, running("go")),
        ],
        # 11
        [
            task(T2, terminal({"answer": TEXT}), owner=T1),
            CreateDocument(
                R_DOC, "pi.hist", ConversationScope(C3, "rewindable", "asOf"), 1, {"n": [0]}
            ),
        ],
        # 12
        [
            ChangeDocument(L_DOC, 1, base={"text": "done"}),
            RetireDocument(I_DOC),
            CreateDocument(I2_DOC, "pi.inbox", latest, 1, {"items": [{"id": 1, "c": TEXT}]}),
            ChangeDocument(
                R_DOC,
                1,
                ops=[{"op": "splice", "path": ["n"], "index": 1, "remove": 0, "insert": [1]}],
            ),
        ],
        # 13
        [
            RetireDocument(R_DOC),
            CreateDocument(X_DOC, "pi.tmp", SessionScope(), 1, {"t": TEXT}),
            RetireDocument(X_DOC),
            CreateDocument(K_A, "pi.note", SessionScope(), 1, {"k": "a"}, key="a"),
            CreateDocument(K_B, "pi.note", SessionScope(), 1, {"k": "b"}, key="b"),
        ],
        # 14
        [
            task(T3, running("bg"), conversation=C2, background=True, abort=True),
            PutSubmission(SubmissionRecord(U2, C2, "write", "queued", request_id="r1")),
        ],
        # 15
        [
            PutSubmission(
                SubmissionRecord(U1, 1, "input", "done", request_id="r1", entry=E1, answer=E2)
            ),
            ChangeDocument(A_DOC, 1, ops=[{"op": "set", "path": ["thinking"], "value": "high"}]),
        ],
        # 16
        [ChangeDocument(A_DOC, 2, base={"model": "z", "thinking": "low"})],
        # 17
        [task(T1, terminal(None)), RetireDocument(D_DOC), append(K_A, "ä", path="k")],
        # 18 (the last three commits reclaim nothing)
        [
            entry(E5, model=[{"role": "user", "content": TEXT}]),
            append(L_DOC, "ñ…"),
            CreateDocument(
                N1_DOC, "pi.notes", ConversationScope(C3, "latest", "initial"), 1, {"notes": "ß"}
            ),
            task(T4, {"status": "pending", "checkpoint": {"phase": "schritt-ü"}}, conversation=C3),
        ],
        # 19
        [
            task(T4, terminal({"text": TEXT}), conversation=C3),
            PutSubmission(SubmissionRecord(U3, C3, "input", "queued", request_id="ü")),
            ChangeDocument(A2_DOC, 1, base={"model": "fork 🎉"}),
            append(N1_DOC, "→ü", path="notes"),
        ],
        # 20
        [
            entry(E6, C2, head=E6),
            append(L_DOC, "✓"),
            append(N1_DOC, "☃", path="notes"),
            PutSubmission(SubmissionRecord(U2, C2, "write", "done", request_id="r1", entry=E6)),
            task(T3, running("bg2"), conversation=C2, background=True, abort=True),
        ],
    ]


async def feed(storage: Storage, batches: list[list[Write]]) -> list[int]:
    """Commit batches in order and return their seqs."""
    return [await storage.commit(batch) for batch in batches]


async def memory_after(batches: list[list[Write]]) -> MemoryStorage:
    """Return a ``MemoryStorage`` fed ``batches``."""
    memory = MemoryStorage()
    await feed(memory, batches)
    return memory


async def _call(fn: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return await fn()
    except StorageError as error:
        return ("error", type(error).__name__, str(error))


async def _scan_pages(scan: Callable[..., Awaitable[Page[Any]]]) -> list[Any]:
    """Every page of a scan (its filters bound), as ``(items, cursor)`` pairs."""
    pages: list[Any] = []
    cursor = None
    while True:
        page = await scan(cursor=cursor)
        pages.append((page.items, page.cursor))
        if page.cursor is None:
            return pages
        cursor = page.cursor


async def quick_dump(storage: Storage) -> dict[str, Any]:
    """Return the store's whole current state in a few dozen reads.

    Everything a reopen could get wrong shows here: the last seq, every record,
    every live document's content, head markers. ``dump`` adds pagination,
    filters, fork visibility of every ID and every historical point.
    """
    s = storage
    out: dict[str, Any] = {"last_seq": s.last_seq}
    conversations = (await s.scan_conversations(limit=1000)).items
    out["conversations"] = conversations
    for c in conversations:
        out[f"entries {c.id}"] = (await s.scan_entries(c.id, limit=1000)).items
        out[f"head {c.id}"] = await s.find_latest_head_marker(c.id)
    out["tasks"] = (await s.scan_tasks(limit=1000)).items
    out["submissions"] = (await s.scan_submissions(limit=1000)).items
    scopes = [ScopeRef("session"), *(ScopeRef("conversation", c.id) for c in conversations)]
    scopes += [ScopeRef("task", t.id) for t in out["tasks"]]
    for scope in scopes:
        documents = (await s.scan_documents(scope, limit=1000)).items
        out[f"docs {scope}"] = [(d, await s.document(d.id)) for d in documents]
    return out


async def dump(storage: Storage, *, max_id: int = 32, history: bool = True) -> dict[str, Any]:
    """Return every answer ``storage`` gives, as comparable plain data.

    Args:
        storage: The store.
        max_id: Look up every ID up to this one.
        history: Also read documents and document scans at every past seq.
    """
    s = storage
    out: dict[str, Any] = {"last_seq": s.last_seq}
    ids = range(1, max_id + 1)
    out["conversations"] = await _scan_pages(partial(s.scan_conversations, limit=2))
    conversations = [c.id for items, _ in out["conversations"] for c in items]
    out["conversation"] = [await s.conversation(i) for i in ids]
    out["owned"] = [await s.scan_conversations(owner_conversation_id=i) for i in ids] + [
        await s.scan_conversations(owner_task_id=i, owner_conversation_id=1) for i in ids
    ]
    out["entry"] = [await s.entry(i) for i in ids]
    # Conversation 99 does not exist: every read of its entries is refused alike.
    out["visible"] = [
        await _call(partial(s.entry, i, c)) for i in ids for c in [*conversations, 99]
    ]
    for c in [*conversations, 99]:
        for order in ("asc", "desc"):
            whole = partial(s.scan_entries, c, order=order, limit=2)
            bounded = partial(
                s.scan_entries, c, min_entry_id=E2, max_entry_id=E5, order=order, limit=1
            )
            out[f"entries {c} {order}"] = await _call(partial(_scan_pages, whole))
            out[f"entries {c} {order} bounded"] = await _call(partial(_scan_pages, bounded))
        out[f"heads {c}"] = [
            await _call(partial(s.find_latest_head_marker, c, at)) for at in (None, E2, E3, E5, E6)
        ]
    out["task"] = [await s.task(i) for i in ids]
    out["tasks"] = await _scan_pages(partial(s.scan_tasks, limit=2))
    for status in ("pending", "running", "waiting", "completing", "terminal"):
        out[f"tasks {status}"] = (await s.scan_tasks(status=status)).items
    out["tasks filtered"] = [
        (
            await s.scan_tasks(conversation_id=1, kind="pi.test", status=["running", "waiting"])
        ).items,
        (await s.scan_tasks(background=True)).items,
        (await s.scan_tasks(abort_requested=False, background=False)).items,
        (await s.scan_tasks(conversation_id=C3)).items,
    ]
    out["submission"] = [await s.submission(i) for i in ids]
    out["submissions"] = await _scan_pages(partial(s.scan_submissions, limit=1))
    statuses: list[SubmissionStatus | list[SubmissionStatus] | None] = [
        None,
        "queued",
        ["placed", "done"],
    ]
    out["submissions filtered"] = [
        (await s.scan_submissions(conversation_id=c, status=st)).items
        for c in (None, 1, C2, C3)
        for st in statuses
    ]
    out["requests"] = [
        await s.submission_by_request(c, r) for c in (1, C2, C3) for r in ("r1", "ü", "x")
    ]
    points: list[int | None] = [None, *range(0, s.last_seq + 2)] if history else [None]
    scopes = [ScopeRef("session"), *(ScopeRef("conversation", c) for c in (1, C2, C3, 99))]
    scopes += [ScopeRef("task", t) for t in (T1, T2, T3, T4)]
    for scope in scopes:
        out[f"docs {scope}"] = [
            await _scan_pages(partial(s.scan_documents, scope, at=at, limit=1)) for at in points
        ]
    addresses = [
        DocAddress(kind, scope, key)
        for kind, scope, key in [
            ("pi.settings", ScopeRef("session"), None),
            ("pi.live", ScopeRef("conversation", 1), None),
            ("pi.inbox", ScopeRef("conversation", 1), None),
            ("pi.agent", ScopeRef("conversation", C2), None),
            ("pi.progress", ScopeRef("task", T1), None),
            ("pi.note", ScopeRef("session"), "a"),
            ("pi.note", ScopeRef("session"), "b"),
            ("pi.tmp", ScopeRef("session"), None),
            ("pi.hist", ScopeRef("conversation", C3), None),
            ("pi.notes", ScopeRef("conversation", C3), None),
        ]
    ]
    out["find"] = [await s.find_document(a, at) for a in addresses for at in points]
    out["document"] = [await _call(partial(s.document, i, at)) for i in ids for at in points]
    return out
