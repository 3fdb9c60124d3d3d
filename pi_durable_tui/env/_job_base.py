"""What every job this process started shares: mark, group, log, the ``keep`` path (issue 13).

``OwnedJob`` is the base of ``RunningJob`` (started as a job, ``_jobs``) and
``MovedJob`` (a foreground command moved by Ctrl+B, ``_moved_job``). Keeping a
job (``keep_owned``) is one path for both: the command's orphan guard is
released, the run guard is told to spare its mark, the environment forgets its
group and mark (``cleanup()`` spares it), and its log moves out of the run's
directory (a rename: the writers' descriptors keep writing to it) to
``pi-kept-job-<mark>.log`` in the temp directory, which nothing deletes.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

from pi_durable_tui.env._groups import ProcessGroup
from pi_durable_tui.env._orphan_guard import OrphanGuard
from pi_durable_tui.env._run_guard import KEPT_LOG_PREFIX, RUN_GUARD
from pi_durable_tui.env._spill import ByteStreamRedaction


class OwnedJob:
    """A job whose process group this process leads.

    Args:
        mark: The mark every process of the job carries.
        group: The command's process group.
        log_path: Where its output goes.
        kill_grace: Seconds between ``SIGTERM`` and ``SIGKILL``.
        groups: The environment's live groups (the job's is in it until kept).
        marks: The environment's marks (the job's is in it until kept).
    """

    def __init__(
        self,
        mark: str,
        group: ProcessGroup,
        log_path: str,
        kill_grace: float,
        groups: set[ProcessGroup],
        marks: set[str],
    ) -> None:
        self._mark = mark
        self._group = group
        self._log_path = log_path
        self._grace = kill_grace
        self._groups = groups
        self._marks = marks
        self.kept = False
        """Whether ``keep()`` left it running past this process."""
        self.secrets: tuple[bytes, ...] = ()
        """Values its log must not keep once it ended (``seal_log``)."""

    @property
    def mark(self) -> str:
        """The mark every process of the job carries."""
        return self._mark

    @property
    def pid(self) -> int:
        """The PID of the command's leader."""
        return self._group.leader

    @property
    def log_path(self) -> str:
        """The job's log (moved by ``keep()``)."""
        return self._log_path

    def seal_log(self) -> None:
        """Redact the log of an ended job in place, as its committed output is (issue 13).

        Called once the job's last output was committed. A kept job's log is left
        alone: its processes may still write to it (a rename would cut them off).
        """
        if self.kept or not self.secrets:
            return
        with contextlib.suppress(OSError):
            redact_file(self._log_path, self.secrets)

    def keep_owned(self, guard: OrphanGuard | None) -> str:
        """Leave the job running past this process; returns its log's new path."""
        self.kept = True
        if guard is not None:
            guard.release()
        RUN_GUARD.keep(self._mark)
        self._groups.discard(self._group)
        self._marks.discard(self._mark)
        target = os.path.join(tempfile.gettempdir(), f"{KEPT_LOG_PREFIX}{self._mark}.log")
        with contextlib.suppress(OSError):
            os.rename(self._log_path, target)
            self._log_path = target
        return self._log_path


def redact_file(path: str, secrets: tuple[bytes, ...]) -> None:
    """Rewrite ``path`` with every secret value ``[redacted]`` (a new file renamed over it).

    Raises:
        OSError: The file cannot be read or the new one written.
    """
    redaction = ByteStreamRedaction(secrets)
    spare = f"{path}.redacting"
    with open(path, "rb") as source, open(spare, "wb") as target:
        os.fchmod(target.fileno(), 0o600)
        while chunk := source.read(1 << 20):
            target.write(redaction.redact(chunk))
        target.write(redaction.redact(b"", final=True))
    os.replace(spare, path)
