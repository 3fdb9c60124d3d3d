"""The web page in a real headless Chromium (issue 15).

``pidurable serve --web 127.0.0.1:0`` runs as a real process on a real SQLite
session with the faux model; Debian's ``chromium`` (``/usr/bin/chromium``),
driven by Playwright with that browser (never ``playwright install``), opens
the printed URL. The page shows the transcript a terminal made before it
(Markdown rendered, HTML in it shown as text), a prompt typed into it is
answered with its text seen streaming, and an approval of a command (mode
``ask``) is clicked and the command runs. On a session with a long history, the
"Load older messages" button pages the rest in, and a subagent's entry in the
task tree opens its conversation (the page sends ``follow``), then "Back to
main". When the host stops (the serve process ends: ``bye``; its store's disk
fills: ``stopped``) the page says so and shuts its input: the typed text stays,
read-only, and no key or button sends anything. Skips, saying why, without
Chromium or Playwright (``.ci/run`` installs the browser).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.app._socket import socket_path
from pi_durable_tui.app.client import HostLink
from tests.app.host.conftest import Follower
from tests.app.support import text, tool_call, write_script
from tests.app.web.conftest import serve_process
from tests.cli.support import mount_tmpfs, unmount
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
    async with _serving(tmp_path, project, project / "web.sqlite", script, "ask") as served:
        yield served


@contextlib.asynccontextmanager
async def _serving(
    tmp_path: Path, project: Path, store: Path, script: Path, mode: str
) -> AsyncIterator[Served]:
    """``pidurable serve --session STORE --web 127.0.0.1:0`` until SIGTERM."""
    arguments = ["--session", str(store), "--model", "faux/faux-1", "--faux-script", str(script)]
    arguments += ["--permission-mode", mode, "--web", "127.0.0.1:0"]
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


HISTORY = 100
"""Entries seeded before serving: more than a snapshot's window (60)."""


async def _seeded_store(store: Path, project: Path) -> None:
    """A session whose main conversation holds ``HISTORY`` user messages."""
    from pi_durable_tui.app import AgentApp, AppOptions

    app = await AgentApp.open(AppOptions(cwd=str(project), session=str(store)))
    try:

        def append(tx: Any) -> None:
            for n in range(HISTORY):
                message = {"role": "user", "content": f"message {n}", "timestamp": 0}
                tx.append(app.root.id, "pi.user", model=[message])

        await app.root.commit(append)
    finally:
        await app.close()


@pytest.fixture
async def served_history(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Served]:
    monkeypatch.setenv("PIDURABLE_HOME", str(tmp_path / "home"))
    review = {"user": "[bg]"}
    gate = "echo started; while [ ! -e bg-go ]; do sleep 0.01; done; echo released"
    script = write_script(
        project,
        {**tool_call("bash", {"command": gate}), "match": review},
        {**text("Findings: fine."), "match": review},
        tool_call("subagent", {"task": "[bg] review", "background": True}),
        text("Started the review."),
        text("Noted the findings."),
    )
    store = project / "long.sqlite"
    await _seeded_store(store, project)
    async with _serving(tmp_path, project, store, script, "auto") as served:
        yield served


async def test_the_page_loads_older_messages_and_opens_a_subagents_conversation_and_back(
    served_history: Served, browser: Any, project: Path
) -> None:
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(served_history.url)

    # The newest window first; the button pages the rest of the history in.
    await page.locator(".block.user", has_text="message 99").wait_for(timeout=MS)
    assert await page.locator(".block.user").count() == 60
    await page.click("#older")
    await page.locator(".block.user", has_text="message 0").first.wait_for(timeout=MS)
    assert await page.locator(".block.user").count() == HISTORY
    await page.locator("#older").wait_for(state="hidden", timeout=MS)

    # A background subagent's entry in the task tree opens its conversation.
    await page.fill("#input", "go")
    await page.press("#input", "Enter")
    await page.locator(".block.assistant", has_text="Started the review.").wait_for(timeout=MS)
    opener = page.locator("#tasks button.open-conversation")
    await opener.wait_for(timeout=MS)
    await opener.click()
    await page.locator("#viewing").wait_for(state="visible", timeout=MS)
    await page.locator(".block.user", has_text="[bg] review").wait_for(timeout=MS)
    assert await page.locator(".block.user", has_text="message 99").count() == 0
    (project / "bg-go").touch()  # its command ends; its answer streams into this view
    await page.locator(".block.assistant", has_text="Findings: fine.").wait_for(timeout=MS)
    assert await page.locator(".block.tool[data-status=done]").count() == 1

    # Back to main: the main conversation's transcript again.
    await page.click("#back")
    await page.locator("#viewing").wait_for(state="hidden", timeout=MS)
    await page.locator(".block.user", has_text="go").last.wait_for(timeout=MS)
    await page.locator(".block.assistant", has_text="Started the review.").wait_for(timeout=MS)
    assert await page.locator(".block.assistant", has_text="Findings: fine.").count() == 0
    assert errors == []


@pytest.fixture
async def served_waiting(tmp_path: Path, project: Path) -> AsyncIterator[Served]:
    """A session whose first prompt's command waits for a decision (mode ``ask``)."""
    script = write_script(
        project, tool_call("bash", {"command": "touch approved.txt"}), text("Done after it.")
    )
    async with _serving(tmp_path, project, project / "stop.sqlite", script, "ask") as served:
        yield served


async def _shut(page: Any, status: str, draft: str) -> None:
    """The page says ``status`` and shuts its input: ``draft`` stays, nothing sends.

    Typing, Enter, Alt+Enter and Esc change nothing and raise nothing; every
    button that acts on the session (send, follow-up, abort, the approval's
    choices) is disabled.
    """
    await page.locator("#status", has_text=status).wait_for(timeout=MS)
    box = page.locator("#input")
    assert not await box.is_editable()
    assert await box.input_value() == draft
    for button in await page.locator("#composer button, #approval button").all():
        assert await button.is_disabled()
    await box.focus()
    await page.keyboard.type("more words")
    for key in ("Enter", "Alt+Enter", "Escape"):
        await page.keyboard.press(key)
    assert await box.input_value() == draft


async def test_the_page_says_the_session_stopped_and_shuts_its_input_when_the_host_stops(
    served_waiting: Served, browser: Any, project: Path
) -> None:
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(served_waiting.url)
    await page.fill("#input", "run the command")
    await page.press("#input", "Enter")
    await page.locator("#approval").wait_for(state="visible", timeout=MS)
    await page.fill("#input", "my unsent draft")

    served_waiting.process.send_signal(signal.SIGTERM)  # the serve process ends
    assert await within(asyncio.to_thread(served_waiting.process.wait)) == 0
    await _shut(page, "The session stopped: its host stopped serving it", "my unsent draft")
    assert "the host stopped serving (host closing)" in await page.inner_text("#connection")
    assert await page.locator("#approval-buttons button[data-choice=once]").count() == 1  # shown
    assert not (project / "approved.txt").exists()  # nothing was decided
    assert errors == []


async def test_a_prompt_sent_while_the_host_is_gone_comes_back_into_the_box(
    served_waiting: Served, browser: Any
) -> None:
    page = await browser.new_page()
    await page.goto(served_waiting.url)
    await page.locator("#connection", has_text="connected").wait_for(timeout=MS)
    served_waiting.process.kill()  # no bye: the page tries to reconnect
    await within(asyncio.to_thread(served_waiting.process.wait))
    await page.locator("#connection", has_text="reconnecting").wait_for(timeout=MS)
    await page.fill("#input", "sent into the void")
    await page.press("#input", "Enter")
    await page.locator("#notices", has_text="not connected to the host").wait_for(timeout=MS)
    assert await page.locator("#input").input_value() == "sent into the void"


BIG = "word " * 200_000
"""A 1 MB answer: its partials need more than the room the filled disk leaves."""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs for the store (needs root; skipped without), unmounted after."""
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "16m")
    yield disk
    unmount(disk)


@pytest.fixture
async def served_on_small_disk(
    tmp_path: Path, project: Path, small_disk: Path
) -> AsyncIterator[Served]:
    script = write_script(project, text("FIRST-ANSWER"), text(BIG), tokens_per_second=20_000)
    async with _serving(tmp_path, project, small_disk / "s.sqlite", script, "auto") as served:
        yield served


async def test_the_page_says_the_store_failed_and_shuts_its_input_when_the_disk_fills(
    served_on_small_disk: Served, browser: Any, small_disk: Path
) -> None:
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(served_on_small_disk.url)
    await page.fill("#input", "hello")
    await page.press("#input", "Enter")
    await page.locator(".block.assistant", has_text="FIRST-ANSWER").wait_for(timeout=MS)
    (small_disk / "filler").write_bytes(b"\0" * (15 * 1024 * 1024))  # about 1 MiB left
    await page.fill("#input", "a long one please")
    await page.press("#input", "Enter")
    await page.fill("#input", "typed after it")

    await _shut(page, "Stopped: the session store cannot be written", "typed after it")
    assert "is full" in await page.inner_text("#notices")  # the host's line: what failed
    assert served_on_small_disk.process.poll() is None  # the host stays up (SIGTERM ends it)
    assert errors == []
