"""The ``Submission`` handle a host holds after ``submit`` (R66, R68).

``wait()`` resolves with the settled record: an input on its answer or a terminal
failure, a write when placed or found unplaceable. It asks for progress (it starts
scheduling, R23); cancelling it cancels only that wait. ``status()`` reads the
committed record; ``abort()`` withdraws a queued submission.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pi_durable_tui.harness._errors import UnknownSubmission
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness.conversations._inbox import withdraw
from pi_durable_tui.kernel import Tx
from pi_durable_tui.storage.records import SubmissionRecord

_SETTLED = ("done", "unanswered")


class Submission:
    """A durable hand-off to one conversation (reference 1.8).

    Args:
        services: The harness's shared services.
        record: The record as admitted (or as last read).
    """

    def __init__(self, services: HarnessServices, record: SubmissionRecord) -> None:
        self._services = services
        self._record = record
        services.submissions.track(self)

    @property
    def id(self) -> int:
        """The submission ID."""
        return self._record.id

    @property
    def conversation_id(self) -> int:
        """The conversation it was submitted to."""
        return self._record.conversation_id

    @property
    def request_id(self) -> str | None:
        """The request ID it was submitted with, if any."""
        return self._record.request_id

    @property
    def record(self) -> SubmissionRecord:
        """The record as last committed (the handle follows commits while it lives)."""
        return self._record

    def observe(self, record: SubmissionRecord) -> None:
        """Take a newly committed version of the record (called by the harness)."""
        self._record = record

    async def status(self) -> SubmissionRecord:
        """Return the committed record (R68).

        Raises:
            UnknownSubmission: When the submission no longer exists (never happens
                for a handle made by ``submit``).
            HarnessClosed: After ``close()``.
        """
        self._services.check_open()
        record = await self._services.session.storage.submission(self.id)
        if record is None:
            raise UnknownSubmission(self.id)
        self._record = record
        return record

    async def wait(self) -> SubmissionRecord:
        """Wait until the submission settles and return the settled record (R68).

        A submission that settled before ``close()`` still resolves afterwards (R27).

        Raises:
            HarnessClosed: The harness closed before the submission settled.
            SessionFailed: The session failed meanwhile (R8).
        """
        if self._record.status in _SETTLED:
            return self._record
        self._services.check_open()
        self._services.session.resume()  # waiting asks for progress (R23)
        waiters = self._services.submissions
        future = waiters.register(self.id)
        try:
            record = await self.status()
            if record.status in _SETTLED:
                return record
            # REMINDER: shielded, so cancelling this wait never cancels the future
            # other waiters of the same submission share.
            self._record = await asyncio.shield(future)
            return self._record
        finally:
            waiters.discard(self.id, future)

    async def abort(self) -> Literal["aborted", "already_placed", "settled"]:
        """Withdraw the submission if it is still queued (R66).

        Returns:
            ``aborted`` (withdrawn, settled ``unanswered``/``aborted``),
            ``already_placed`` or ``settled``.

        Raises:
            UnknownSubmission: When the submission does not exist.
        """
        self._services.check_open()

        async def abort(tx: Tx) -> Literal["aborted", "already_placed", "settled", "not_found"]:
            return await withdraw(tx, self.id, self.conversation_id)

        result = await self._services.session.commit(abort)
        if result == "not_found":
            raise UnknownSubmission(self.id)
        return result
