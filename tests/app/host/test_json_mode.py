"""``--mode json`` is a client of the run's own host: it prints the wire (issue 15).

The run's process serves its session to its standard output through
``SessionHost.serve_client``; the lines are read back with the wire's own
``decode`` and ``Mirror`` (``tests.wire_lines``).
"""

from __future__ import annotations

import io
from pathlib import Path

from pi_durable_tui.app import run_headless
from tests.app.conftest import OpenApp
from tests.app.support import FAUX, run, stored_entries, text, write_script
from tests.wire_lines import entries, mirrored, of_type


async def test_a_continued_session_starts_from_a_snapshot_of_its_newest_entries_then_its_commits(
    open_app: OpenApp, project: Path
) -> None:
    script = str(write_script(project, text("first answer"), text("second answer")))
    app = await open_app(model=FAUX, faux_script=script)
    assert (await run(app, "one")).status == 0
    await app.close()
    again = await open_app(model=FAUX, faux_script=script, continue_session=True)

    printed = await run(again, "two", mode="json")
    await again.close()

    found = printed.messages()
    [snapshot] = of_type(found, "snapshot")
    before = [entry["id"] for entry in snapshot["entries"]]
    stored = [entry.to_json() for entry in await stored_entries(again.store)]
    assert before == [entry["id"] for entry in stored[: len(before)]]  # the earlier run's
    new = entries(found, snapshots=False)
    assert new == stored[len(before) :]  # then only what this run committed
    assert mirrored(found).entries == stored
    assert found[-1]["text"] == "second answer"
    assert found[-1]["answer"] == stored[-1]["id"]


class _ClosedPipe(io.StringIO):
    """Standard output whose reader left (``| head -1``)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError("the reader left")


async def test_a_closed_standard_output_stops_the_printing_not_the_run(
    open_app: OpenApp, project: Path
) -> None:
    app = await open_app(model=FAUX, faux_script=str(write_script(project, text("answered"))))

    status = await run_headless(app, "go", _ClosedPipe(), io.StringIO(), mode="json")
    await app.close()

    assert status == 0
    assert [e.kind for e in await stored_entries(app.store)][-1] == "pi.assistant"


async def test_an_unanswered_input_ends_with_its_result_and_exit_status_1(
    open_app: OpenApp, project: Path
) -> None:
    failing = {"error": {"message": "the provider is down", "status": 500}}
    settings = project / ".pidurable" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"retry": {"max_retries": 0}}')
    app = await open_app(model=FAUX, faux_script=str(write_script(project, failing)))

    printed = await run(app, "go", mode="json")

    result = printed.messages()[-1]
    assert printed.status == 1
    assert (result["t"], result["status"], result["text"]) == ("result", "unanswered", None)
    assert result["reason"] == "model_error"
    assert printed.err == "pidurable: the model request failed: the provider is down\n"
