"""``ending_notices``: what a commit ended badly becomes a notice, said once (reference 5.3)."""

from __future__ import annotations

from pi_durable_tui.app.screen._ending_notices import ending_notices
from pi_durable_tui.app.screen._feed import Frame, Settled
from pi_durable_tui.storage import EntryRecord


def failed_answer(text: str) -> EntryRecord:
    """A stored assistant message of a model call that failed with ``text``."""
    message = {"role": "assistant", "content": [], "stop_reason": "error", "error_message": text}
    return EntryRecord(7, 1, "pi.assistant", model=[message])


def test_a_failure_the_transcript_does_not_show_becomes_a_no_answer_notice() -> None:
    watched = {3}
    frame = Frame(submissions=(Settled(3, "unanswered", "no_model", "Model x is not available"),))
    assert ending_notices(frame, watched) == [
        ("error", 'No answer: no_model "Model x is not available"')
    ]
    assert watched == set()


def test_a_model_error_stored_in_the_same_commit_is_not_repeated_as_a_notice() -> None:
    watched = {3}
    frame = Frame(
        entries=(failed_answer("rate limited"),),
        submissions=(Settled(3, "unanswered", "model_error", "rate limited"),),
    )
    assert ending_notices(frame, watched) == []
    assert watched == set()


def test_an_abort_an_answer_and_an_unwatched_submission_give_no_notice() -> None:
    watched = {1, 2}
    frame = Frame(
        submissions=(
            Settled(1, "unanswered", "aborted"),
            Settled(2, "done"),
            Settled(9, "unanswered", "faulted", "boom"),
        )
    )
    assert ending_notices(frame, watched) == []
    assert watched == set()
