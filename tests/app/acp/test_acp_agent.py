"""``pidurable acp`` end to end: a real process speaking the Agent Client Protocol (issue 15).

Each test spawns ``python -m pi_durable_tui acp`` with the faux model and talks
to it over its stdin and stdout with the client of ``conftest`` (written from
the protocol's schema, not from the agent's code).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.app import sessions_dir
from tests.app.acp.conftest import Spawn, text_response, tool_response
from tests.deadlines import WAIT

SLEEPER = "31.25"
"""The backgrounded command's duration: it names the process."""
SLEEP_ARGV = [b"sleep", SLEEPER.encode()]

SLOW = 20
"""Tokens per second of an answer long enough to be cancelled mid-stream."""


def _argv(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _processes_with_home(home: Path) -> list[int]:
    """Processes whose environment names this test's ``PIDURABLE_HOME``."""
    marker = f"PIDURABLE_HOME={home}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if marker in environ.split(b"\0"):
                found.append(int(entry))
    return found


def test_a_prompt_streams_chunks_and_a_tool_call_then_ends_its_turn(
    agent: Spawn, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = agent(
        {
            "content": [
                {"type": "thinking", "text": "Let me look first."},
                {"type": "text", "text": "I will run it. "},
                {"type": "tool_call", "name": "bash", "arguments": {"command": "echo hi-there"}},
            ]
        },
        text_response("It printed hi-there. All done."),
    )
    session = client.initialize_and_open()
    store = Path(session)
    monkeypatch.setenv("PIDURABLE_HOME", str(client.home))
    assert store.parent.parent == sessions_dir(str(client.project))  # where pidurable keeps them
    assert client.prompt(session, "run echo") == {"stopReason": "end_turn"}
    assert client.text() == "I will run it. It printed hi-there. All done."
    assert client.text("agent_thought_chunk") == "Let me look first."
    [call] = client.of("tool_call")
    assert call["kind"] == "execute"
    assert call["title"] == "bash: echo hi-there"
    assert call["rawInput"] == {"command": "echo hi-there"}
    updates = [u for u in client.of("tool_call_update") if u["toolCallId"] == call["toolCallId"]]
    assert updates[-1]["status"] == "completed"
    assert "hi-there" in updates[-1]["content"][0]["content"]["text"]
    assert all(u["sessionId"] == session for u in client.updates)
    plans = [[e["content"] for e in u["entries"]] for u in client.of("plan")]
    assert any(any(c.startswith("bash") for c in entries) for entries in plans), plans


def test_session_cancel_mid_stream_ends_the_turn_cancelled(agent: Spawn) -> None:
    client = agent(text_response("word " * 400), tokens_per_second=SLOW)
    session = client.initialize_and_open()
    asked = client.start(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "talk"}]}
    )
    client.until_update("agent_message_chunk")
    client.notify("session/cancel", {"sessionId": session})
    assert client.response(asked)["result"] == {"stopReason": "cancelled"}
    assert len(client.text()) < len("word " * 400)


def test_a_permission_request_answered_allow_runs_the_call(agent: Spawn) -> None:
    client = agent(tool_response("touch allowed-file"), text_response("ran"), mode=None)
    session = client.initialize_and_open()
    client.permission = lambda params: "once"
    assert client.prompt(session, "make it") == {"stopReason": "end_turn"}
    [asked] = client.asked
    assert asked["sessionId"] == session
    assert "touch allowed-file" in asked["toolCall"]["title"]
    kinds = {option["optionId"]: option["kind"] for option in asked["options"]}
    assert kinds["once"] == "allow_once"
    assert kinds["deny"] == "reject_once"
    assert (client.project / "allowed-file").exists()


def test_a_permission_request_answered_reject_does_not_run_the_call(agent: Spawn) -> None:
    client = agent(tool_response("touch rejected-file"), text_response("did not"), mode=None)
    session = client.initialize_and_open()
    client.permission = lambda params: "deny"
    assert client.prompt(session, "make it") == {"stopReason": "end_turn"}
    assert len(client.asked) == 1
    assert not (client.project / "rejected-file").exists()
    [call] = client.of("tool_call")
    final = [u for u in client.of("tool_call_update") if u["toolCallId"] == call["toolCallId"]]
    assert final[-1]["status"] == "failed"


def test_session_load_replays_a_stored_sessions_history(agent: Spawn) -> None:
    first = agent(tool_response("echo stored-output", lead="Running. "), text_response("Stored."))
    session = first.initialize_and_open()
    first.prompt(session, "remember this")
    assert first.close_stdin() == 0
    again = agent()
    again.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    loaded = again.request(
        "session/load", {"sessionId": session, "cwd": str(again.project), "mcpServers": []}
    )
    assert loaded is None
    assert again.text("user_message_chunk") == "remember this"
    assert again.text() == "Running. Stored."
    [call] = again.of("tool_call")
    assert call["status"] == "completed"
    assert call["title"] == "bash: echo stored-output"


LONG = 2_500
"""Entries of the long session: many pages of the replay, far past the window (60)."""


ANSWER = {
    "role": "assistant",
    "api": "faux",
    "provider": "faux",
    "model": "faux-1",
    "usage": {"input": 1, "output": 1, "cache_read": 0, "cache_write": 0, "total_tokens": 2},
    "stop_reason": "stop",
    "timestamp": 0,
}
"""A stored answer's fields (its ``content`` set per answer)."""


async def _long_session(project: Path) -> str:
    """A stored session of ``LONG`` entries, questions and answers in turn; its ID."""
    from pi_durable_tui.ai import FauxProvider
    from pi_durable_tui.app import AgentApp, AppOptions

    options = AppOptions(cwd=str(project), model="faux/faux-1")
    app = await AgentApp.open(options, faux=FauxProvider([]))
    root = app.root

    def append(tx: Any) -> None:
        for n in range(LONG // 2):
            question = {"role": "user", "content": f"question {n}", "timestamp": 0}
            tx.append(root.id, "pi.user", model=[question])
            answer = {**ANSWER, "content": [{"type": "text", "text": f"answer {n}"}]}
            tx.append(root.id, "pi.assistant", model=[answer])

    try:
        await root.commit(append)
        return str(app.session_id)
    finally:
        await app.close()


def test_session_load_replays_every_entry_of_a_long_session_in_order_before_answering(
    agent: Spawn, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = agent()
    monkeypatch.setenv("PIDURABLE_HOME", str(client.home))
    session = asyncio.run(_long_session(client.project))
    client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})

    params = {"sessionId": session, "cwd": str(client.project), "mcpServers": []}
    assert client.request("session/load", params) is None  # after every update

    told = [(u["update"]["sessionUpdate"], u["update"]["content"]["text"]) for u in client.updates]
    expected = []
    for n in range(LONG // 2):
        expected.append(("user_message_chunk", f"question {n}"))
        expected.append(("agent_message_chunk", f"answer {n}"))
    assert told == expected


def test_a_malformed_line_gets_a_json_rpc_error_and_the_agent_stays_up(agent: Spawn) -> None:
    client = agent(text_response("still here"))
    client.write("{not json\n")
    error = client.response(None)["error"]
    assert error["code"] == -32700
    client.send({"id": 7, "method": "no/such", "params": {}})
    assert client.response(7)["error"]["code"] == -32601
    session = client.initialize_and_open()
    assert client.prompt(session, "hello") == {"stopReason": "end_turn"}
    assert client.text() == "still here"


def test_eof_on_stdin_exits_cleanly_with_no_process_left(agent: Spawn) -> None:
    client = agent(tool_response(f"sleep {SLEEPER} &"), text_response("started"))
    session = client.initialize_and_open()
    client.prompt(session, "start it")
    assert client.close_stdin() == 0
    assert not [p for p in _processes_with_home(client.home) if _argv(p)[:2] == SLEEP_ARGV]
    # The run guard (a process of its own) ends a moment after it sees the agent gone.
    deadline = time.monotonic() + WAIT
    while _processes_with_home(client.home):
        assert time.monotonic() < deadline, [_argv(p) for p in _processes_with_home(client.home)]
        time.sleep(0.02)


def test_updates_carry_no_secret_and_no_control_sequence(agent: Spawn) -> None:
    key = "sk-ant-api03-" + "Q" * 40
    answer = f"The key is {key} and \x1b[31mred\x1b[0m\x07 text."
    client = agent(
        {
            "content": [
                {"type": "thinking", "text": f"I saw {key}"},
                {"type": "text", "text": answer},
            ]
        },
        env={"ANTHROPIC_API_KEY": key},
    )
    session = client.initialize_and_open()
    assert client.prompt(session, "tell me") == {"stopReason": "end_turn"}
    said = client.text() + client.text("agent_thought_chunk")
    assert "[redacted]" in said
    assert key not in said
    assert "red text." in said.replace("\x07", "")
    assert not any(ch in said for ch in "\x1b\x07")


def test_session_load_of_a_session_served_elsewhere_attaches_to_its_host(agent: Spawn) -> None:
    first = agent(text_response("Stored."), text_response("Answered by the host."))
    session = first.initialize_and_open()
    first.prompt(session, "remember this")
    assert first.close_stdin() == 0
    # The host replays the faux script the store remembers (the first agent's).
    host = subprocess.Popen(
        [sys.executable, "-m", "pi_durable_tui", "serve", "--session", session],
        cwd=first.project,
        env={**os.environ, "PIDURABLE_HOME": str(first.home)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert host.stderr is not None
        assert "serving" in host.stderr.readline()
        again = agent()
        again.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        params = {"sessionId": session, "cwd": str(again.project), "mcpServers": []}
        assert again.request("session/load", params) is None
        assert again.text("user_message_chunk") == "remember this"
        assert again.text() == "Stored."
        assert again.prompt(session, "and now?") == {"stopReason": "end_turn"}
        assert again.text().endswith("Answered by the host.")
        assert again.close_stdin() == 0
    finally:
        host.send_signal(signal.SIGTERM)
        host.wait(timeout=WAIT)


def test_an_answer_cut_at_max_tokens_and_a_failed_turn_have_their_stop_reasons(
    agent: Spawn,
) -> None:
    client = agent(
        {"content": [{"type": "text", "text": "cut off here"}], "stop_reason": "length"},
        {"error": {"message": "bad request", "status": 400, "retryable": False}},
    )
    session = client.initialize_and_open()
    assert client.prompt(session, "long") == {"stopReason": "max_tokens"}
    assert client.text() == "cut off here"
    assert client.prompt(session, "again") == {"stopReason": "refusal"}
