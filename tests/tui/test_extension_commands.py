"""``/reload`` and ``/mcp`` in the app (issue 16): the controller is called, the outcome shown."""

from __future__ import annotations

from pi_durable_tui.bench.tui_model import RecordingController
from pi_durable_tui.tui import PidurableApp
from tests.tui.test_commands import run_command


async def test_reload_swaps_the_extension_files_in_and_says_the_next_call_uses_them(
    app: PidurableApp, controller: RecordingController
) -> None:
    await run_command(app, "/reload")

    assert controller.called("reload_extensions") == [()]
    assert app.notice_bar.shown_notices[-1].text.startswith("Reloaded the extension files")


async def test_reload_shows_each_file_that_failed_as_one_error_notice(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.reload_failures = ["/home/me/.pidurable/extensions/x.py: SyntaxError: bad"]

    await run_command(app, "/reload")

    shown = [(n.level, n.text) for n in app.notice_bar.shown_notices]
    assert ("error", controller.reload_failures[0]) in shown
    assert not any(text.startswith("Reloaded") for _, text in shown)


async def test_mcp_asks_the_controller_for_the_servers(
    app: PidurableApp, controller: RecordingController
) -> None:
    await run_command(app, "/mcp", "escape")

    assert controller.called("mcp_servers") == [()]
