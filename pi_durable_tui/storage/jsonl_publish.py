"""Writing one commit to a JSONL store: the publication protocol and reclamation (R130, R132).

``plan_commit`` turns a prepared batch into the exact bytes every file gets and
the documents' new current values, with no I/O: a failure there (a delta that
does not apply) is a ``StorageRejected`` that leaves the store as it was.
``Publisher.write`` then writes the plan in the protocol's order:

1. append each affected sidecar's record (one line per document);
2. with ``fsync``, flush each affected sidecar, and the directory when a sidecar
   file was created (so a confirmed record cannot lose its file);
3. failpoint ``jsonl.after_sidecars``; append the commit's ``main.jsonl`` lines,
   its table records followed by its marker, in one write; with ``fsync``, flush
   ``main.jsonl``; failpoint ``jsonl.after_marker``;
4. reclaim.

An exception from steps 1-3 leaves the commit's outcome unknown; the storage
poisons itself. A main-only commit appends to ``main.jsonl`` alone.

Reclamation (R132). Once a base or a retirement of a current-only document is
confirmed, its sidecar is rewritten to hold only the new base (through
``<file>.reclaim``, flushed when ``fsync``, and an atomic rename), or removed
when the document is retired; a current-only document created and retired in
one commit never gets a sidecar. The marker is already written (and flushed when
``fsync``) by then, so ``main.jsonl`` needs no flush first. A failed reclamation
keeps the sidecar as it was (open reclaims it later); rewindable sidecars are
never reclaimed; ``main.jsonl`` is never compacted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pi_durable_tui.storage import failpoints
from pi_durable_tui.storage.batch import PreparedBatch, PreparedRevision
from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.json_ops import JsonObject, Op, apply_ops, loads
from pi_durable_tui.storage.jsonl_files import (
    RecordType,
    SidecarFiles,
    fsync_directory,
    marker_line,
    record_line,
    replace_file,
    sidecar_line,
    write_all,
)
from pi_durable_tui.storage.jsonl_index import Current, JsonlIndex

AFTER_SIDECARS = failpoints.define("jsonl.after_sidecars")
AFTER_MARKER = failpoints.define("jsonl.after_marker")


@dataclass(slots=True)
class Plan:
    """Everything a commit writes, serialized before any I/O."""

    main: bytes = b""
    sidecars: list[tuple[int, bytes, bool]] = field(default_factory=list)
    """``(document_id, line, created)`` per affected sidecar."""
    currents: dict[int, Current] = field(default_factory=dict)
    """New current content of each live document the commit creates or changes."""
    reclaims: list[tuple[int, bytes | None]] = field(default_factory=list)
    """``(document_id, content)`` to rewrite a sidecar with, or ``None`` to remove it."""


def plan_commit(batch: PreparedBatch, index: JsonlIndex) -> Plan:
    """Serialize a prepared batch into the lines of every file it touches.

    Args:
        batch: The batch, checked by ``prepare_batch`` against ``index``.
        index: The committed state.

    Raises:
        StorageRejected: A delta does not apply to its document, or leaves its root
            something other than an object.
    """
    seq = batch.seq
    tables: list[tuple[RecordType, Sequence[tuple[object, str]]]] = [
        ("conversation", batch.conversations),
        ("entry", batch.entries),
        ("task", batch.tasks),
        ("submission", batch.submissions),
        # REMINDER: retirements before creations, in this order on replay too, so an
        # address retired and re-created in one commit ends up live.
        ("retire", batch.retired),
        ("document", batch.new_documents),
    ]
    lines = [record_line(kind, seq, text) for kind, records in tables for _, text in records]
    created = {record.id for record, _ in batch.new_documents}
    ended = {record.id for record, _ in batch.retired}
    ended |= {record.id for record, _ in batch.new_documents if record.retired_at is not None}
    plan = Plan()
    for revision in batch.revisions:
        document_id = revision.document_id
        everything = batch.reclaim.get(document_id)
        if everything:
            continue  # retired current-only: nothing of it would survive reclamation
        state = index.sidecars.get(document_id)
        ordinal = 0 if state is None else state.ordinals
        data = sidecar_line(seq, ordinal, revision.kind, revision.version, revision.text).encode()
        plan.sidecars.append((document_id, data, document_id in created))
        if document_id not in ended:
            plan.currents[document_id] = _next_content(index, revision)
        if everything is False and state is not None and state.records > 0:
            plan.reclaims.append((document_id, data))  # the new base is all that stays
    for document_id, everything in batch.reclaim.items():
        state = index.sidecars.get(document_id)
        if everything and state is not None and state.records > 0:
            plan.reclaims.append((document_id, None))
    refs = [(r.document_id, r.kind, r.version) for r in batch.revisions]
    lines.append(marker_line(seq, refs))
    plan.main = "".join(lines).encode()
    return plan


def _next_content(index: JsonlIndex, revision: PreparedRevision) -> Current:
    document_id = revision.document_id
    if revision.kind == "base":
        base: JsonObject = loads(revision.text)  # type: ignore[assignment]
        return Current(revision.version, base, 0)
    current = index.current[document_id]
    try:
        ops: list[Op] = loads(revision.text)  # type: ignore[assignment]
        value = apply_ops(current.value, ops)
    except Exception as error:  # any failure to apply is the caller's bad delta
        raise StorageRejected(f"Document {document_id} operations do not apply: {error}") from None
    if not isinstance(value, dict):
        raise StorageRejected(
            f"Document {document_id} operations make its value a "
            f"{type(value).__name__}, not an object"
        )
    return Current(revision.version, value, current.deltas + 1)


class Publisher:
    """The open files of a store and the order in which a commit is written to them."""

    def __init__(self, directory: Path, main_fd: int, *, fsync: bool) -> None:
        self.directory = directory
        self.fsync = fsync
        self._main_fd: int | None = main_fd
        self._sidecars = SidecarFiles(directory)

    def write(self, plan: Plan) -> dict[int, int]:
        """Write a planned commit, then reclaim.

        Returns:
            How many records each reclaimed sidecar holds now.

        Raises:
            OSError: A write or flush failed or was short; the commit's outcome is
                unknown.
            FailpointError: An armed failpoint fired.
        """
        # REMINDER: the order is the protocol (R130): sidecars, their flushes, then the
        # marker. Publishing in memory before the marker is written would show a commit
        # that reopening may not find.
        try:
            descriptors = []
            for document_id, data, created in plan.sidecars:
                fd = self._sidecars.descriptor(document_id, new=created)
                write_all(fd, data)
                descriptors.append(fd)
            if self.fsync:
                for fd in descriptors:
                    os.fsync(fd)
                if any(created for _, _, created in plan.sidecars):
                    fsync_directory(self.directory)
            AFTER_SIDECARS.hit()
            if self._main_fd is None:
                raise OSError("the store is closed")
            write_all(self._main_fd, plan.main)
            if self.fsync:
                os.fsync(self._main_fd)
            AFTER_MARKER.hit()
        finally:
            self._sidecars.trim()
        try:
            return self._reclaim(plan)
        except Exception:  # R132: reclamation never costs committed state
            return {}

    def _reclaim(self, plan: Plan) -> dict[int, int]:
        remaining: dict[int, int] = {}
        for document_id, content in plan.reclaims:
            path = self._sidecars.path(document_id)
            try:
                self._sidecars.forget(document_id)
                if content is None:
                    path.unlink(missing_ok=True)
                    remaining[document_id] = 0
                else:
                    replace_file(path, content, fsync=self.fsync)
                    remaining[document_id] = 1
            except OSError:
                continue  # the dead revisions stay until a later open reclaims them
        return remaining

    def close(self) -> None:
        """Close every file; idempotent."""
        self._sidecars.close()
        fd, self._main_fd = self._main_fd, None
        if fd is not None:
            os.close(fd)
