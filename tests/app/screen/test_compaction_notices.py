"""Compaction failures on screen (issue 12; reference 5.3; R108, R114).

A summarizer that fails, scripted with the faux provider: a manual ``/compact``
and an automatic (threshold) compaction each end in one notice saying what failed
and what to do, read back through the controller and the view model; the footer's
context figure stays the one of the last answer.
"""

from __future__ import annotations

import pytest

from pi_durable_tui.app.screen._blocks import entry_message
from pi_durable_tui.app.screen._compaction_notices import (
    CompactionFailure,
    automatic_failure_notice,
    compaction_notice,
)
from tests.app.screen_support import (
    AUTO_COMPACTING,
    ScreenFactory,
    ScreenRig,
    say,
    summarizer_down,
)
from tests.harness.run_support import within

LONG = "A long first answer to summarize later. " * 20
WHAT_TO_DO = "The conversation goes on uncompacted; /compact retries, /new starts fresh."


async def last_answer_tokens(rig: ScreenRig) -> int | None:
    """The context figure the footer must show: the newest answer's usage total."""
    page = await rig.app.harness.session.storage.scan_entries(
        rig.model.conversation_id, order="desc", limit=20
    )
    for stored in page.items:
        if stored.entry.kind == "pi.assistant":
            usage = entry_message(stored.entry).get("usage") or {}
            return int(usage.get("total_tokens") or 0) or None
    return None


def compaction_errors(rig: ScreenRig) -> list[str]:
    return [n.text for n in rig.model.notices if n.level == "error" and "ompaction" in n.text]


async def test_a_failed_manual_compact_says_why_and_what_to_do_once_and_keeps_the_context_figure(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        say(LONG), summarizer_down(), settings={"compaction": {"keep_recent_tokens": 1}}
    )
    await rig.ask("first")
    before = rig.model.footer.context_tokens
    assert before is not None

    await within(rig.controller.compact())
    await rig.until(lambda: bool(compaction_errors(rig)), "the failure notice")
    await rig.idle()

    assert compaction_errors(rig) == [
        f"Compaction failed: Summarization failed: summarizer down. {WHAT_TO_DO}"
    ]
    assert rig.texts("compaction") == []
    assert rig.model.footer.context_tokens == before == await last_answer_tokens(rig)


async def test_a_failed_automatic_compaction_says_why_and_the_turn_goes_on_uncompacted_r108(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        say(LONG), summarizer_down(), say("sent anyway"), settings=AUTO_COMPACTING
    )
    await rig.ask("first")
    await rig.ask("second")
    await rig.until(lambda: bool(compaction_errors(rig)), "the failure notice")

    assert compaction_errors(rig) == [
        f"Automatic compaction failed: Summarization failed: summarizer down. {WHAT_TO_DO}"
    ]
    assert rig.texts("assistant")[-1] == "sent anyway"
    assert rig.texts("compaction") == []
    assert rig.model.footer.context_tokens == await last_answer_tokens(rig)
    assert rig.model.footer.context_tokens is not None


@pytest.mark.parametrize(
    ("reason", "notice"),
    [
        ("manual", None),  # the controller that started it says so, once
        (
            "threshold",
            (
                "error",
                "Automatic compaction failed: no model\x1b[2J here. The conversation goes on"
                " uncompacted; /compact retries, /new starts fresh.",
            ),
        ),
        (
            "overflow",
            (
                "error",
                "Automatic compaction after a context overflow failed: no model\x1b[2J here."
                " The turn stopped; /compact retries, /new starts fresh.",
            ),
        ),
    ],
)
def test_each_automatic_failure_has_one_line_saying_what_to_do(
    reason: str, notice: tuple[str, str] | None
) -> None:
    failure = CompactionFailure(7, reason, "no model\x1b[2J\nhere.")
    expected = None if notice is None else (notice[0], notice[1].replace("\x1b[2J", ""))
    assert automatic_failure_notice(failure) == expected
    assert CompactionFailure.from_json(failure.to_json()) == failure


def test_a_failed_outcome_without_a_reason_still_says_what_to_do() -> None:
    assert compaction_notice({"status": "faulted"}) == (
        "error",
        f"Compaction faulted: no reason given. {WHAT_TO_DO}",
    )
