"""The web page's server: token, Host and Origin checks, and the wire over a WebSocket (issue 15).

Every test runs a real aiohttp server on 127.0.0.1 over a real ``SessionHost``
of a real SQLite session, and speaks to it with aiohttp's client.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from pi_durable_tui.app._wire import MAX_MESSAGE, WINDOW
from pi_durable_tui.app.web import parse_web_address
from tests.app.screen_support import FAST, background_subagent, say, seed_history
from tests.app.web.conftest import PageFactory, Socket
from tests.harness.run_support import within


def _answers(socket: Socket) -> list[dict[str, Any]]:
    return [e for e in socket.mirror.entries if e["kind"] == "pi.assistant"]


async def _answered(socket: Socket) -> None:
    while not _answers(socket):
        await socket.next()


async def test_the_page_without_the_token_or_with_a_wrong_one_is_401(
    web_page: PageFactory,
) -> None:
    page = await web_page()
    for url in (f"{page.base}/", f"{page.base}/?token=wrong", f"{page.base}/static/app.js"):
        async with page.client.get(url) as response:
            assert response.status == 401, url
            assert "token" in await response.text()


async def test_the_page_with_its_token_is_served_and_sets_a_cookie_for_its_assets(
    web_page: PageFactory,
) -> None:
    page = await web_page()
    async with page.client.get(f"{page.base}/?token={page.token}") as response:
        assert response.status == 200
        assert "<html" in await response.text()
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        cookie = response.cookies[page.server.access.cookie]
        assert cookie["httponly"]
        assert cookie["samesite"] == "Strict"
    async with page.client.get(f"{page.base}/static/app.js") as response:
        assert response.status == 200  # the cookie carried the token
    async with page.client.get(f"{page.base}/static/..%2f_server.py") as response:
        assert response.status == 404


async def test_a_websocket_without_the_token_or_with_a_wrong_one_is_refused_401(
    web_page: PageFactory,
) -> None:
    page = await web_page()
    for token in ("", "wrong"):
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await page.socket(token=token)
        assert refused.value.status == 401
    assert page.served.host.attached == 0


async def test_a_websocket_from_another_sites_page_is_refused_403(web_page: PageFactory) -> None:
    page = await web_page()
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await page.socket(Origin="http://evil.example")
    assert refused.value.status == 403
    own = await page.socket(Origin=page.base)
    snapshot = await own.hello()
    assert snapshot["conversation"] == page.served.rig.app.root.id


async def test_a_request_naming_another_host_is_refused_403(web_page: PageFactory) -> None:
    page = await web_page()
    headers = {"Host": f"rebound.example:{page.server.address.port}"}
    async with page.client.get(f"{page.base}/?token={page.token}", headers=headers) as response:
        assert response.status == 403


async def test_a_page_gets_the_snapshot_then_the_commits_of_a_prompt_it_sent(
    web_page: PageFactory,
) -> None:
    page = await web_page(say("Answer for the page."), settings=FAST)
    socket = await page.socket()
    snapshot = await socket.hello()
    assert snapshot["entries"] == []
    reply = await socket.call(1, "submit", text="from the browser")
    assert reply["ok"] is True
    await _answered(socket)
    commits = [m for m in socket.seen if m["t"] == "commit"]
    assert commits
    assert [c["seq"] for c in commits] == sorted({c["seq"] for c in commits})
    assert _answers(socket)[0]["model"][0]["content"][0]["text"] == "Answer for the page."
    # The host's own screen saw the same prompt: one session, one code path.
    assert page.served.rig.texts("user") == ["from the browser"]
    clients = page.served.host.clients
    assert any(c["name"] == "web" and c["address"].startswith("127.0.0.1:") for c in clients)


def _subagents(nodes: list[dict[str, Any]]) -> list[int]:
    """The conversations of the subagents in a ``tasks`` tree, depth first."""
    found = []
    for node in nodes:
        if node.get("subagent_conversation_id"):
            found.append(node["subagent_conversation_id"])
        found += _subagents(node.get("children") or [])
    return found


def _texts(socket: Socket, kind: str) -> list[str]:
    return [str(e["model"]) for e in socket.mirror.entries if e["kind"] == kind]


async def test_a_page_follows_a_subagents_conversation_from_the_task_tree_and_back_to_main(
    web_page: PageFactory,
) -> None:
    page = await web_page(*background_subagent(say("Started the review.")), settings=FAST)
    socket = await page.socket()
    root = (await socket.hello())["conversation"]
    await socket.call(1, "submit", text="go")
    while not _subagents(socket.mirror.tasks):
        await socket.next()
    [child] = _subagents(socket.mirror.tasks)

    await socket.ws.send_str(json.dumps({"t": "follow", "conversation": child}))
    snapshot = await socket.next("snapshot")
    assert snapshot["conversation"] == child != root
    while not any("[bg] review" in text for text in _texts(socket, "pi.user")):
        await socket.next()  # the subagent's task, in its snapshot or a commit after it
    page.served.rig.release("bg-go")
    while not any("Findings: fine." in text for text in _texts(socket, "pi.assistant")):
        await socket.next()  # the subagent's own commits, as they come
    assert socket.mirror.conversation == child
    shown = socket.mirror.seq

    # A page that reconnects while it shows the subagent gets what it missed of it, no snapshot.
    again = await page.socket()
    hello = {"t": "hello", "v": 1, "name": "web", "conversation": child, "since": snapshot["seq"]}
    await again.ws.send_str(json.dumps(hello))
    replayed: list[dict[str, Any]] = []
    while not replayed or replayed[-1]["seq"] < shown:
        message = json.loads((await within(again.ws.receive())).data)  # no mirror: a reconnect's
        assert message["t"] != "snapshot"
        if message["t"] == "commit":
            replayed.append(message)
    assert replayed[0]["seq"] > snapshot["seq"]
    found = [str(e["model"]) for m in replayed for e in m.get("entries", [])]
    assert any("Findings: fine." in text for text in found)

    await socket.ws.send_str(json.dumps({"t": "follow", "conversation": root}))
    back = await socket.next("snapshot")
    assert back["conversation"] == root
    assert any("go" in text for text in _texts(socket, "pi.user"))


async def test_a_late_page_of_a_10000_entry_session_gets_the_newest_window(
    web_page: PageFactory,
) -> None:
    page = await web_page()
    await seed_history(page.served.rig, 10_000)
    snapshot = await (await page.socket()).hello()
    assert len(snapshot["entries"]) == WINDOW
    assert snapshot["has_older"] is True


async def test_a_malformed_or_binary_message_is_refused_and_the_connection_goes_on(
    web_page: PageFactory,
) -> None:
    page = await web_page(say("Still answering."), settings=FAST)
    socket = await page.socket()
    await socket.hello()
    await socket.ws.send_str("{not json")
    assert (await socket.next("error"))["code"] == "malformed"
    await socket.ws.send_str(json.dumps({"t": "call", "id": 1, "method": "rm -rf"}))
    assert (await socket.next("error"))["code"] == "malformed"
    await socket.ws.send_bytes(b'{"t": "bye"}')
    assert (await socket.next("error"))["code"] == "malformed"
    assert (await socket.call(2, "submit", text="after the noise"))["ok"] is True
    await _answered(socket)


async def test_an_oversized_message_closes_that_socket_only_and_the_host_serves_on(
    web_page: PageFactory,
) -> None:
    page = await web_page(say("The host is unharmed."), settings=FAST)
    other = await page.socket()
    await other.hello()
    big = await page.socket()
    await big.hello()
    await big.ws.send_str(
        json.dumps(
            {"t": "call", "id": 1, "method": "submit", "args": {"text": "x" * (MAX_MESSAGE + 10)}}
        )
    )
    while True:
        frame = await within(big.ws.receive())
        if frame.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
            break
    assert big.ws.close_code == aiohttp.WSCloseCode.MESSAGE_TOO_BIG
    assert (await other.call(1, "submit", text="still here"))["ok"] is True
    await _answered(other)
    assert page.served.rig.texts("user") == ["still here"]


async def test_the_host_closing_says_bye_to_the_page(web_page: PageFactory) -> None:
    page = await web_page()
    socket = await page.socket()
    await socket.hello()
    await within(page.served.host.close())
    assert (await socket.next("bye"))["reason"] == "host closing"


@pytest.mark.parametrize(
    ("text", "allow_remote", "host"),
    [
        ("127.0.0.1:0", False, "127.0.0.1"),
        ("localhost:8080", False, "localhost"),
        ("[::1]:8080", False, "::1"),
        ("0.0.0.0:8080", True, "0.0.0.0"),
    ],
)
def test_web_addresses_are_loopback_unless_remote_is_allowed(
    text: str, allow_remote: bool, host: str
) -> None:
    assert parse_web_address(text, allow_remote=allow_remote).host == host


@pytest.mark.parametrize(
    ("text", "allow_remote", "words"),
    [
        ("0.0.0.0:8080", False, "--allow-remote"),
        ("192.168.1.5:8080", False, "not a loopback address"),
        (":8080", True, "give the host"),
        ("127.0.0.1", False, "HOST:PORT"),
        ("127.0.0.1:99999", False, "HOST:PORT"),
    ],
)
def test_a_bad_web_address_is_one_line_saying_what_to_do(
    text: str, allow_remote: bool, words: str
) -> None:
    with pytest.raises(ValueError) as refused:
        parse_web_address(text, allow_remote=allow_remote)
    assert words in str(refused.value)
    assert "\n" not in str(refused.value)
