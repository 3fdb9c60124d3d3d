"""``pidurable serve [--web]``: a host without a terminal, until stopped (issue 15).

The real command runs as a process (``python -m pi_durable_tui serve``); a
client attaches over the socket it names, and SIGTERM ends it cleanly.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import aiohttp
import pytest

from pi_durable_tui.app._socket import socket_path
from pi_durable_tui.app.client import HostLink
from tests.app.host.conftest import Follower
from tests.app.support import text, write_script
from tests.app.web.conftest import serve_process
from tests.harness.run_support import within


async def test_serve_hosts_a_session_a_client_prompts_it_and_sigterm_closes_it(
    home: Path, project: Path
) -> None:
    script = write_script(project, text("Served answer."))
    store = project / "served.sqlite"
    served = serve_process(
        home,
        project,
        "--session",
        str(store),
        "--model",
        "faux/faux-1",
        "--faux-script",
        str(script),
    )
    try:
        assert served.stderr is not None
        line = await within(asyncio.to_thread(served.stderr.readline))
        assert "serving" in line
        assert f"pidurable --session {store}" in line
        follower = Follower(await within(HostLink.connect(socket_path(store), name="test")))
        await follower.next("snapshot")
        await within(follower.link.call("submit", text="hello host"))
        await follower.until(
            lambda m: any(e["kind"] == "pi.assistant" for e in m.entries), "the answer"
        )
        assert follower.texts("pi.assistant") == ["Served answer."]
        await follower.link.close()
        served.send_signal(signal.SIGTERM)
        assert await within(asyncio.to_thread(served.wait)) == 0
        assert not socket_path(store).exists()
    finally:
        if served.poll() is None:
            served.kill()
            served.wait()


def test_serve_of_a_session_that_does_not_exist_is_one_line_and_exit_2(
    home: Path, project: Path
) -> None:
    served = serve_process(home, project, "-c")
    _, err = served.communicate(timeout=60)
    assert served.returncode == 2
    assert err.count("\n") == 1
    assert err.startswith("pidurable serve: No session exists")


async def test_serve_with_web_prints_the_pages_url_and_the_page_speaks_the_wire(
    home: Path, project: Path
) -> None:
    script = write_script(project, text("Answer on the web."))
    store = project / "web.sqlite"
    served = serve_process(
        home, project, "--session", str(store), "--model", "faux/faux-1",
        "--faux-script", str(script), "--web", "127.0.0.1:0",
    )  # fmt: skip
    try:
        assert served.stdout is not None
        url = (await within(asyncio.to_thread(served.stdout.readline))).strip()
        assert url.startswith("http://127.0.0.1:")
        assert "/?token=" in url
        base, token = url.split("/?token=")
        async with aiohttp.ClientSession() as client:
            async with client.get(f"{base}/") as response:
                assert response.status == 401
            async with client.get(url) as response:
                assert response.status == 200
            async with client.ws_connect(f"{base}/ws?token={token}") as ws:
                await ws.send_str(json.dumps({"t": "hello", "v": 1, "name": "web"}))
                assert json.loads((await within(ws.receive())).data)["t"] == "welcome"
                assert json.loads((await within(ws.receive())).data)["t"] == "snapshot"
        served.send_signal(signal.SIGTERM)
        assert await within(asyncio.to_thread(served.wait)) == 0
    finally:
        if served.poll() is None:
            served.kill()
            served.wait()


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (("--web", "0.0.0.0:0"), "--allow-remote"),
        (("--web", "nonsense"), "HOST:PORT"),
        (("--allow-remote",), "goes with --web"),
    ],
)
def test_serve_with_a_bad_web_option_is_one_line_and_exit_2(
    home: Path, project: Path, arguments: tuple[str, ...], words: str
) -> None:
    served = serve_process(home, project, *arguments)
    _, err = served.communicate(timeout=60)
    assert served.returncode == 2
    assert err.count("\n") == 1
    assert words in err
