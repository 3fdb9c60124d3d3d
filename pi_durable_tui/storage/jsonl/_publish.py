"""Writing one commit to a JSONL store: the publication protocol and reclamation (R130, R132).

``jsonl_plan.plan_commit`` turns a prepared batch into the exact bytes every
file gets, with no I/O. ``Publisher.write`` then writes the plan in the
protocol's order:

1. append each affected sidecar's record (one line per document);
2. with ``fsync``, flush each affected sidecar, and the directory when a sidecar
   file was created (so a confirmed record cannot lose its file);
3. failpoint ``jsonl.after_sidecars``; append the commit's ``main.jsonl`` lines,
   its table records followed by its marker, in one write; with ``fsync``, flush
   ``main.jsonl``; failpoint ``jsonl.after_marker``;
4. reclaim.

An exception from steps 1-3 leaves the commit's outcome unknown; the storage
poisons itself. A main-only commit appends to ``main.jsonl`` alone.

Before the first append to an existing sidecar in this session, step 1 checks
that the file is the confirmed length the index expects. A store opened from a
checkpoint does not read sidecars the log tail did not touch, so this is where
a leftover unconfirmed record (a commit killed after writing its sidecars) is
cut, and where a file damaged since the checkpoint is found: it is then checked
in full (``jsonl_sidecars.rescan``), and a file lacking confirmed records fails
the commit with ``StorageCorrupted`` before anything is written (and removes the
checkpoint, so the next open replays everything and reports it, R131).

Reclamation (R132). Once a base or a retirement of a current-only document is
confirmed, its sidecar is rewritten to hold only the new base (through
``<file>.reclaim``, flushed when ``fsync``, and an atomic rename), or removed
when the document is retired; a current-only document created and retired in
one commit never gets a sidecar. The marker is already written (and flushed when
``fsync``) by then, so ``main.jsonl`` needs no flush first. A failed reclamation
keeps the sidecar as it was and the document ``pending`` (a later open reclaims
it); rewindable sidecars are never reclaimed; ``main.jsonl`` is never compacted.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from pi_durable_tui.storage.errors import StorageCorrupted
from pi_durable_tui.storage.failpoints import define as define_failpoint
from pi_durable_tui.storage.jsonl._files import (
    SidecarFiles,
    fsync_directory,
    replace_file,
    write_all,
)
from pi_durable_tui.storage.jsonl._plan_types import Plan, Written
from pi_durable_tui.storage.jsonl._sidecars import rescan

AFTER_SIDECARS = define_failpoint("jsonl.after_sidecars")
AFTER_MARKER = define_failpoint("jsonl.after_marker")


class Publisher:
    """The open files of a store and the order in which a commit is written to them."""

    def __init__(
        self,
        directory: Path,
        main_fd: int,
        main_size: int,
        *,
        fsync: bool,
    ) -> None:
        self.directory = directory
        self.fsync = fsync
        self.main_size = main_size
        """Length of ``main.jsonl``: where the next commit's bytes go."""
        self.sidecar_bytes = 0
        """Bytes appended to sidecars since open."""
        self._main_fd: int | None = main_fd
        self._sidecars = SidecarFiles(directory)
        self.checked: set[int] = set()
        """Sidecars known to hold exactly their confirmed records (checked or written)."""
        self.on_damage: Callable[[str], None] = lambda message: None
        """Told when a sidecar turns out to lack confirmed records."""

    def write(self, plan: Plan) -> Written:
        """Write a planned commit, then reclaim.

        Returns:
            Where the commit's bytes went and what reclamation did.

        Raises:
            OSError: A write or flush failed or was short; the commit's outcome is
                unknown.
            StorageCorrupted: A sidecar lacks confirmed records; nothing was written.
            FailpointError: An armed failpoint fired.
        """
        written = Written(self.main_size)
        # REMINDER: the order is the protocol (R130): sidecars, their flushes, then the
        # marker. Publishing in memory before the marker is written would show a commit
        # that reopening may not find.
        try:
            if plan.sidecars:
                self._write_sidecars(plan, written)
            AFTER_SIDECARS.hit()
            if self._main_fd is None:
                raise OSError("the store is closed")
            write_all(self._main_fd, plan.main)
            self.main_size += len(plan.main)
            if self.fsync:
                os.fsync(self._main_fd)
            AFTER_MARKER.hit()
        finally:
            self._sidecars.trim()
        if plan.reclaims:
            # R132: reclamation never costs committed state, whatever goes wrong in it.
            with contextlib.suppress(Exception):
                self._reclaim(plan, written)
        return written

    def _write_sidecars(self, plan: Plan, written: Written) -> None:
        descriptors = []
        for document_id, _, created in plan.sidecars:
            fd = self._sidecars.descriptor(document_id, new=created)
            if created:
                self.checked.add(document_id)
            elif document_id not in self.checked:
                self._check(document_id, fd, plan, written)
            descriptors.append(fd)
        for fd, (_, data, _) in zip(descriptors, plan.sidecars, strict=True):
            write_all(fd, data)
            self.sidecar_bytes += len(data)
        if self.fsync:
            for fd in descriptors:
                os.fsync(fd)
            if any(created for _, _, created in plan.sidecars):
                fsync_directory(self.directory)

    def _check(self, document_id: int, fd: int, plan: Plan, written: Written) -> None:
        """Make sure an existing sidecar holds exactly its confirmed records."""
        expectation = plan.expected[document_id]
        if os.fstat(fd).st_size != expectation.size:
            path = self._sidecars.path(document_id)
            try:
                run = rescan(path, expectation)
            except StorageCorrupted as error:
                self.on_damage(str(error))
                raise
            if run.size > run.end:
                os.ftruncate(fd, run.end)  # an unconfirmed tail a crash left behind
                if self.fsync:
                    os.fsync(fd)
            written.rescanned[document_id] = (run.first, run.end)
        self.checked.add(document_id)

    def _reclaim(self, plan: Plan, written: Written) -> None:
        for document_id, content in plan.reclaims:
            path = self._sidecars.path(document_id)
            try:
                self._sidecars.forget(document_id)
                if content is None:
                    path.unlink(missing_ok=True)
                    self.checked.discard(document_id)
                else:
                    replace_file(path, content, fsync=self.fsync)
            except OSError:
                written.reclaimed[document_id] = False  # kept: a later open reclaims it
                continue
            written.reclaimed[document_id] = True

    def close(self) -> None:
        """Close every file; idempotent."""
        self._sidecars.close()
        fd, self._main_fd = self._main_fd, None
        if fd is not None:
            os.close(fd)
