"""The web page in a real headless Chromium (issue 15).

``pidurable serve --web 127.0.0.1:0`` runs as a real process on a real SQLite
session with the faux model; Debian's ``chromium`` (``/usr/bin/chromium``),
driven by Playwright with that browser (never ``playwright install``), opens
the printed URL. The page shows the transcript a terminal made before it
(Markdown rendered, HTML in it shown as text), a prompt typed into it is
answered with its text seen streaming, and an approval of a command (mode
``ask``) is clicked and the command runs. Skips, saying why, without Chromium
or Playwright (``.ci/run`` installs the browser).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.app._socket import socket_path
from pi_durable_tui.app.client import HostLink
from tests.app.host.conftest import Follower
from tests.app.support import text, tool_call, write_script
from tests.app.web.conftest import serve_process
from tests.deadlines import WAIT
from tests.harness.run_support import within

CHROMIUM = "/usr/bin/chromium"
LONG = " ".join(f"word{n:03d}" for n in range(120))
MS = int(WAIT * 1000)

playwright_api = pytest.importorskip(
    "playwright.async_api", reason="the browser test needs playwright (pip install playwright)"
)
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(
        f"the browser test needs Debian's chromium at {CHROMIUM} (apt-get install chromium)",
        allow_module_level=True,
    )


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    store: Path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
async def served(tmp_path: Path, project: Path) -> AsyncIterator[Served]:
    script = write_script(
        project,
        text("First answer with **bold**, `code`, <b>no tags</b> and [no](javascript:alert(1))."),
        text(LONG),
        tool_call("bash", {"command": "touch approved.txt"}),
        text("Done after the approval."),
        tokens_per_second=60,
    )
    store = project / "web.sqlite"
    arguments = ["--session", str(store), "--model", "faux/faux-1", "--faux-script", str(script)]
    arguments += ["--permission-mode", "ask", "--web", "127.0.0.1:0"]
    process = serve_process(tmp_path / "home", project, *arguments)
    try:
        assert process.stdout is not None
        url = (await within(asyncio.to_thread(process.stdout.readline))).strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield Served(process, url, store)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            await within(asyncio.to_thread(process.wait))
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with playwright_api.async_playwright() as driver:
        chromium = await driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield chromium
        finally:
            await chromium.close()


async def _first_exchange_from_a_terminal(served: Served) -> None:
    """A terminal client prompts before the page opens (the page must show it)."""
    follower = Follower(await within(HostLink.connect(socket_path(served.store), name="test")))
    try:
        await follower.next("snapshot")
        await within(follower.link.call("submit", text="hello from a terminal"))
        await follower.until(
            lambda m: any(e["kind"] == "pi.assistant" for e in m.entries), "answer"
        )
    finally:
        await follower.link.close()


async def test_the_page_shows_the_transcript_streams_an_answer_and_takes_an_approval_click(
    served: Served, browser: Any, project: Path
) -> None:
    await _first_exchange_from_a_terminal(served)
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(served.url)
    assert "token=" not in page.url  # taken out of the address bar

    # The transcript made before the page opened, Markdown rendered, HTML left as text.
    first = page.locator(".block.assistant").first
    await first.locator("strong").wait_for(timeout=MS)
    assert await first.locator("strong").inner_text() == "bold"
    assert await first.locator("code").inner_text() == "code"
    assert "<b>no tags</b>" in await first.inner_text()
    assert await first.locator("b").count() == 0
    assert await first.locator("a").count() == 0  # a javascript: target stays text
    assert await page.locator(".block.user").first.inner_text() == "hello from a terminal"

    # A prompt typed in the page, answered with its text seen while it streams.
    await page.fill("#input", "stream something")
    await page.press("#input", "Enter")
    streaming = page.locator(".block.assistant.streaming")
    await streaming.wait_for(timeout=MS)
    await page.wait_for_function(
        "() => { const s = document.querySelector('.block.assistant.streaming');"
        " return s && s.innerText.includes('word0'); }",
        timeout=MS,
    )
    partial = await streaming.inner_text()
    assert partial.strip()
    assert "word119" not in partial
    answer = page.locator(".block.assistant:not(.streaming)", has_text="word119")
    await answer.wait_for(timeout=MS)
    assert (await answer.inner_text()).strip() == LONG
    assert await page.locator(".block.user", has_text="stream something").count() == 1

    # A command the mode asks about: its choices are buttons; a click allows it once.
    await page.fill("#input", "run the command")
    await page.click("#send")
    await page.locator("#approval").wait_for(state="visible", timeout=MS)
    assert await page.inner_text("#approval-argument") == "touch approved.txt"
    assert await page.locator("#approval-buttons button[data-choice=deny]").count() == 1
    await page.click("#approval-buttons button[data-choice=once]")
    await page.locator("#approval").wait_for(state="hidden", timeout=MS)
    await page.locator(".block.tool[data-status=done]").wait_for(timeout=MS)
    await page.locator(".block.assistant", has_text="Done after the approval.").wait_for(timeout=MS)
    assert (project / "approved.txt").exists()
    assert errors == []
