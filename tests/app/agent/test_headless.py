"""Print and JSON modes in process: answers, committed events, retries, one-line failures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pi_durable_tui.app import PermissionChoices
from pi_durable_tui.app.agent._headless import describe_failure, retry_line
from pi_durable_tui.harness import USER
from pi_durable_tui.storage.records import SubmissionRecord
from tests.app.conftest import OpenApp
from tests.app.support import (
    FAUX,
    run,
    stored_entries,
    text,
    tool_call,
    write_script,
    write_settings,
)
from tests.harness.run_support import within
from tests.wire_lines import entries, mirrored, of_type

RATE_LIMITED = {"error": {"message": "rate limited", "status": 429, "retry_after_ms": 300}}


@pytest.fixture
def one_retry(project: Path) -> None:
    """Retry once, after the provider's retry-after (no backoff of our own)."""
    settings = {"retry": {"base_delay_ms": 0, "max_retries": 1}}
    write_settings(project / ".pidurable" / "settings.json", settings)


async def test_print_mode_prints_only_the_final_answer_after_a_tool_round(
    open_app: OpenApp, project: Path
) -> None:
    script = write_script(
        project, tool_call("bash", {"command": "echo hi"}, "Looking."), text("Done.")
    )
    app = await open_app(model=FAUX, faux_script=str(script))

    printed = await run(app, "go")

    assert (printed.status, printed.out, printed.err) == (0, "Done.\n", "")


async def test_json_mode_prints_the_wires_messages_a_snapshot_then_every_commit_up_to_the_result(
    open_app: OpenApp, project: Path
) -> None:
    script = write_script(project, tool_call("bash", {"command": "echo hi"}), text("Done."))
    app = await open_app(model=FAUX, faux_script=str(script))

    printed = await run(app, "go", mode="json")
    await app.close()

    found = printed.messages()
    assert printed.status == 0
    assert [m["t"] for m in found[:2]] == ["welcome", "snapshot"]
    assert found[1]["entries"] == []
    commits = of_type(found, "commit")
    seqs = [m["seq"] for m in commits]
    assert seqs == sorted(set(seqs))  # one message per commit, in order
    assert seqs[0] > found[1]["seq"]
    stored = [entry.to_json() for entry in await stored_entries(app.store)]
    assert entries(found) == stored  # every committed entry, in order, as stored (R2)
    mirror = mirrored(found)  # the wire's own mirror applies every document operation
    assert (mirror.entries, mirror.seq) == (stored, seqs[-1])
    assert mirror.docs["pi.live"] == {}  # the run ended: no run, no tool slots
    [settled] = [s for m in commits for s in m.get("submissions", []) if s["status"] == "done"]
    result = found[-1]
    assert result["t"] == "result"
    assert (result["status"], result["text"]) == ("done", "Done.")
    assert settled["answer"] == result["answer"] == stored[-1]["id"]


async def test_a_retried_429_prints_the_wait_and_the_attempt_in_print_mode_r87(
    open_app: OpenApp, project: Path, one_retry: None
) -> None:
    app = await open_app(model=FAUX, faux_script=str(write_script(project, RATE_LIMITED)))

    printed = await run(app, "go")

    assert printed.status == 1
    retry, failure = printed.err.splitlines()
    assert retry == "pidurable: retrying in 0.3s (attempt 2): rate limited"
    assert failure == "pidurable: the model request failed: rate limited"


async def test_a_retried_429_is_committed_with_its_wait_and_printed_in_json_mode_r87(
    open_app: OpenApp, project: Path, one_retry: None
) -> None:
    app = await open_app(model=FAUX, faux_script=str(write_script(project, RATE_LIMITED)))

    printed = await run(app, "go", mode="json")

    retries = [
        op["value"]
        for m in of_type(printed.messages(), "commit")
        for doc in m.get("docs", [])
        for op in doc["ops"]
        if doc["kind"] == "pi.live" and op["path"] == ["generation", "retry"] and "value" in op
    ]
    assert [retry["error"] for retry in retries] == ["rate limited"]
    assert printed.messages()[-1]["status"] == "unanswered"
    assert printed.err == "pidurable: the model request failed: rate limited\n"


async def test_a_request_id_given_twice_answers_once_with_one_user_entry_r59(
    open_app: OpenApp, project: Path
) -> None:
    app = await open_app(model=FAUX, faux_script=str(write_script(project, text("once"))))

    first = await run(app, "go", request_id="job-1")
    again = await run(app, "go", request_id="job-1")
    await app.close()

    assert (first.out, again.out) == ("once\n", "once\n")
    assert [e.kind for e in await stored_entries(app.store)].count(USER) == 1


async def test_resuming_a_session_that_never_had_a_prompt_says_how_to_give_one(
    open_app: OpenApp, project: Path
) -> None:
    app = await open_app(model=FAUX, faux_script=str(write_script(project, text("x"))))

    printed = await run(app, None)

    assert printed.status == 1
    assert printed.err == "pidurable: the session has no prompt to resume; give one with -p TEXT\n"


async def test_resuming_an_answered_session_prints_its_last_answer_again(
    open_app: OpenApp, project: Path
) -> None:
    script = str(write_script(project, text("first answer")))
    app = await open_app(model=FAUX, faux_script=script)
    assert (await run(app, "go")).status == 0
    await app.close()

    again = await open_app(model=FAUX, faux_script=script, continue_session=True)

    assert (await run(again, None)).out == "first answer\n"


@pytest.mark.parametrize(
    ("reason", "detail", "line"),
    [
        ("model_error", "HTTP 500", "the model request failed: HTTP 500"),
        ("aborted", None, "the run was aborted"),
        ("faulted", "boom", "the run failed: boom"),
        ("no_model", None, 'No model is configured; use --model provider/id, or set "model"'),
        (
            "no_model",
            "Model x/y is not available",
            'Model x/y is not available; use --model provider/id, or set "model" in settings '
            "(a local server's model needs the --base-url it was served from)",
        ),
        ("stale", None, "the input was dropped"),
    ],
)
def test_an_unanswered_input_is_described_in_one_line(
    reason: str, detail: str | None, line: str
) -> None:
    record = SubmissionRecord(1, 1, "input", "unanswered", reason=reason, detail=detail)

    described = describe_failure(record)

    assert described.startswith(line)
    assert "\n" not in described


@pytest.mark.parametrize(
    ("delay_ms", "shown"), [(4000, "4s"), (1500, "1.5s"), (300, "0.3s"), (-20, "0s")]
)
def test_a_retry_wait_is_shown_in_seconds(delay_ms: float, shown: str) -> None:
    assert retry_line(1, delay_ms, "busy") == f"pidurable: retrying in {shown} (attempt 2): busy\n"


async def appears(path: Path) -> None:
    """Return once ``path`` exists (callers bound it with ``within``)."""
    while not path.exists():
        await asyncio.sleep(0.01)


async def test_a_bad_settings_edit_during_the_run_is_one_stderr_line_and_the_run_goes_on(
    open_app: OpenApp, project: Path
) -> None:
    settings = project / ".pidurable" / "settings.json"
    write_settings(settings, {"retry": {"max_retries": 1}})
    script = write_script(
        project,
        tool_call("bash", {"command": "touch started; while [ ! -e go ]; do sleep 0.01; done"}),
        tool_call("bash", {"command": "echo again"}),
        text("Done."),
    )
    # The user edits the file while the first command runs (the model may not:
    # pidurable's own files are protected, issue 13).
    app = await open_app(
        model=FAUX, faux_script=str(script), permissions=PermissionChoices(mode="auto")
    )
    running = asyncio.ensure_future(run(app, "go"))
    await within(appears(project / "started"))
    settings.write_text('{"retry": {"max_retries": "many"}}')
    (project / "go").touch()
    printed = await within(running)

    assert (printed.status, printed.out) == (0, "Done.\n")
    assert printed.err == (
        f'pidurable: {settings}: retry.max_retries: expected a whole number, got string "many"; '
        "the settings from before stay in force\n"
    )
    assert app.settings.current().retry.max_retries == 1
