"""Harness errors, with the reference's messages (people and tests match on them).

The tree (all are ``KernelError``s, so one ``except`` catches the durable core)::

    KernelError
    └── HarnessError
        ├── ConversationBusy       a ``when_busy="reject"`` input to a busy conversation (R59)
        ├── HarnessClosed          an operation after ``close()`` (R23, R27)
        ├── RegistryIncomplete     a registry without the built-in tasks (R21)
        ├── SubmissionRejected     a request ID reused for another type (R59)
        └── UnknownSubmission      ``Submission <id> does not exist`` (R66, R68)
"""

from __future__ import annotations

from pi_durable_tui.kernel import KernelError


class HarnessError(KernelError):
    """Base class of the harness's own errors."""


class ConversationBusy(HarnessError):
    """The conversation runs and the input asked ``when_busy="reject"`` (R59)."""

    def __init__(self, conversation_id: int) -> None:
        super().__init__(f"Conversation {conversation_id} is busy")
        self.conversation_id = conversation_id


class HarnessClosed(HarnessError):
    """The harness is closed; new operations are refused (R23, R27)."""

    def __init__(self) -> None:
        super().__init__("Harness is closed")


class RegistryIncomplete(HarnessError):
    """The registry lacks built-in tasks (R21)."""

    def __init__(self, missing: list[str]) -> None:
        super().__init__(
            f"Registry lacks built-in tasks {', '.join(missing)}; create it with create_registry()"
        )


class SubmissionRejected(HarnessError):
    """A submission was refused before anything was written (R59)."""


class UnknownSubmission(HarnessError):
    """No submission has this ID (in this conversation)."""

    def __init__(self, submission_id: int) -> None:
        super().__init__(f"Submission {submission_id} does not exist")
        self.submission_id = submission_id
