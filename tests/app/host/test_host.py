"""``SessionHost``: the store's holder serves its session on a Unix socket (issue 15; R123, R124).

Every test speaks the wire over a real socket beside a real SQLite store, with
the host's own screen open as ``pidurable`` opens it.
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.ai import FauxProvider
from pi_durable_tui.app import PermissionChoices
from pi_durable_tui.app._wire import MAX_MESSAGE, MAX_PENDING, WINDOW, Mirror
from pi_durable_tui.app.client import HostGone, HostRefused
from pi_durable_tui.harness import LIVE_DOC
from pi_durable_tui.kernel import Tx
from tests.app.host.conftest import Follower, ServeFactory
from tests.app.screen_support import FAST, call, gate_command, say, seed_history, user
from tests.harness.run_support import within


def _approval_call(follower: Follower) -> str | None:
    for slot in (follower.mirror.docs.get(LIVE_DOC.kind) or {}).get("tools") or []:
        approval = slot.get("approval")
        if isinstance(approval, dict) and "decision" not in approval:
            return str(slot["call_id"])
    return None


def _answers(follower: Follower) -> list[str]:
    return follower.texts("pi.assistant")


async def test_a_late_joiner_of_a_10000_entry_session_gets_the_newest_window_not_the_history(
    serve: ServeFactory,
) -> None:
    served = await serve()
    await seed_history(served.rig, 10_000)
    follower = await served.follower()
    snapshot = await follower.next("snapshot")
    assert len(snapshot["entries"]) == WINDOW
    assert snapshot["has_older"] is True
    assert follower.texts()[-1] == "message 9999"
    oldest = snapshot["entries"][0]["id"]
    page = await within(follower.link.call("older", before=oldest, count=10))
    assert len(page["entries"]) == 10
    assert page["entries"][-1]["id"] == oldest - 1


async def test_a_prompt_sent_by_a_client_is_answered_and_both_clients_follow_every_commit(
    serve: ServeFactory,
) -> None:
    served = await serve(say("Hello from the model, streamed in pieces."), settings=FAST)
    first, second = await served.follower(), await served.follower(name="web")
    await first.next("snapshot")
    await second.next("snapshot")
    await within(second.link.call("submit", text="hi there"))
    for follower in (first, second):
        await follower.until(lambda m: bool(_answers_of(m)), "the answer")
        assert follower.texts() == ["hi there"]
    seqs = [m["seq"] for m in first.seen if m["t"] == "commit"]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)
    assert _answers(first) == _answers(second) == ["Hello from the model, streamed in pieces."]
    # What the host's own screen shows came from the same commits.
    assert served.rig.texts("user") == ["hi there"]


def _answers_of(mirror: Mirror) -> list[dict[str, Any]]:
    return [e for e in mirror.entries if e["kind"] == "pi.assistant"]


async def test_streamed_text_travels_as_appends_of_its_new_bytes(serve: ServeFactory) -> None:
    text = "word " * 200
    served = await serve(faux=FauxProvider([say(text)], tokens_per_second=2000), settings=FAST)
    follower = await served.follower()
    await follower.next("snapshot")
    await within(follower.link.call("submit", text="stream"))
    await follower.until(lambda m: bool(_answers_of(m)), "the answer")
    appends = [
        op
        for message in follower.seen
        if message["t"] == "commit"
        for doc in message.get("docs", [])
        for op in doc["ops"]
        if op["op"] == "append"
    ]
    assert appends, "streamed text came as appends"
    assert sum(len(op["text"]) for op in appends) <= len(text) + 20


async def test_a_client_that_reconnects_from_its_seq_gets_only_the_frames_it_missed(
    serve: ServeFactory,
) -> None:
    served = await serve(say("one"), say("two"))
    follower = await served.follower()
    await follower.next("snapshot")
    await within(follower.link.call("submit", text="first"))
    await follower.until(lambda m: len(_answers_of(m)) == 1, "the first answer")
    since = follower.mirror.seq
    await follower.link.close()
    await within(served.rig.controller.submit("second"))
    await served.rig.idle()
    again = await served.follower(since=since)
    again.mirror = follower.mirror
    await again.until(lambda m: len(_answers_of(m)) == 2, "the second answer")
    kinds = {m["t"] for m in again.seen}
    assert "snapshot" not in kinds
    assert min(m["seq"] for m in again.seen if m["t"] == "commit") > since
    assert again.texts() == ["first", "second"]


async def test_a_reconnect_from_a_seq_the_host_no_longer_holds_gets_a_snapshot(
    serve: ServeFactory,
) -> None:
    served = await serve()
    follower = await served.follower(since=0)
    snapshot = await follower.next("snapshot")
    assert snapshot["seq"] == served.rig.app.harness.session.storage.last_seq


async def test_a_client_that_falls_behind_gets_one_fresh_snapshot_and_the_session_never_waits(
    serve: ServeFactory,
) -> None:
    served = await serve()
    follower = await served.follower()
    await follower.next("snapshot")
    connection = next(iter(served.host._connections.values()))
    follower.link._writer.transport.pause_reading()  # type: ignore[attr-defined]  # a stuck client
    bulk = "x" * 20_000
    root = served.rig.app.root
    for n in range(MAX_PENDING * 3):

        def append(tx: Tx, n: int = n) -> None:
            tx.append(root.id, "pi.user", model=user(f"{n} {bulk}"))

        await within(root.commit(append))
    assert connection.collapsed >= 1  # its backlog became a snapshot; no commit waited
    last = served.rig.app.harness.session.storage.last_seq
    await follower.link.close()
    fresh = await served.follower()
    await fresh.until(lambda m: m.seq == last, "the current state")
    assert fresh.texts()[-1].startswith(f"{MAX_PENDING * 3 - 1} ")


async def test_a_malformed_message_is_refused_and_the_connection_and_host_go_on(
    serve: ServeFactory,
) -> None:
    served = await serve(say("still here"))
    follower = await served.follower()
    await follower.next("snapshot")
    for bad in (
        b"not json\n",
        b"[1, 2]\n",
        b'{"t": "call", "id": 1, "method": "rm -rf"}\n',
        b'{"t": "call", "id": 2, "method": "submit", "args": {"text": 5}}\n',
        b'{"t": "nonsense"}\n',
    ):
        follower.link.send_raw(bad)
        error = await follower.next("error")
        assert error["code"] == "malformed"
        assert error["message"]
    with pytest.raises(HostRefused, match="Not decided"):
        await within(follower.link.call("decide", call_id="nope", choice="once"))
    await within(follower.link.call("submit", text="are you there"))
    await follower.until(lambda m: bool(_answers_of(m)), "an answer")
    assert _answers(follower) == ["still here"]


async def test_an_oversized_message_closes_that_connection_only(serve: ServeFactory) -> None:
    served = await serve(say("unharmed"))
    bad, good = await served.follower(), await served.follower()
    await bad.next("snapshot")
    await good.next("snapshot")
    bad.link.send_raw(b'{"t": "call", "x": "' + b"a" * (MAX_MESSAGE + 10) + b'"}\n')
    error = await bad.next("error")
    assert error["code"] == "oversized"
    with pytest.raises(HostGone):
        await bad.drain()
    await within(good.link.call("submit", text="still fine?"))
    await good.until(lambda m: bool(_answers_of(m)), "an answer")
    assert [c["name"] for c in served.host.clients] == ["terminal", "terminal"]


async def test_the_socket_beside_the_store_is_mode_0600_and_a_stale_one_is_replaced(
    serve: ServeFactory,
) -> None:
    served = await serve()
    path = served.host.path
    assert path == Path(f"{served.rig.app.store}.sock")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    await served.host.close()
    assert not path.exists()
    path.write_text("left by a killed host")
    host = type(served.host)(served.rig.app)
    await within(host.start())
    try:
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        follower = await served.follower()
        assert (await follower.next("snapshot"))["conversation"] == served.rig.app.root.id
    finally:
        for link in served.links:
            await link.close()
        await host.close()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as another user")
async def test_a_peer_of_another_user_is_refused_by_its_credentials(serve: ServeFactory) -> None:
    served = await serve()
    os.chmod(served.host.path, 0o666)  # only the credential check stands in the way now
    os.chmod(served.host.path.parent, 0o755)
    for parent in served.host.path.parents:
        if parent == Path("/"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o005)
    script = (
        "import os, socket, sys\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "os.chdir(os.path.dirname(sys.argv[1]))\n"
        "s.connect(os.path.basename(sys.argv[1]))\n"
        # Nothing is sent: the host refuses before reading a byte (a write could
        # race with its close and fail with EPIPE).
        "print(s.makefile('rb').readline().decode())\n"
    )
    short = str(served.host.path)
    argv = [sys.executable, "-c", script, short]
    done = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=30)
    assert '"forbidden"' in done.stdout, done.stderr
    assert served.host.clients == [served.host.clients[0]]  # nobody attached


async def test_an_approval_is_decided_by_a_client_and_a_second_decision_is_refused(
    serve: ServeFactory,
) -> None:
    served = await serve(
        call("bash", command="touch made && echo approved-output"),
        say("ran it"),
        permissions=PermissionChoices(),
    )
    follower = await served.follower()
    await follower.next("snapshot")
    await within(follower.link.call("submit", text="run the command"))
    await follower.until(lambda m: _approval_call(follower) is not None, "the approval request")
    call_id = _approval_call(follower)
    assert served.rig.model.approval is not None  # the host's own screen asks too
    await within(follower.link.call("decide", call_id=call_id, choice="once"))
    with pytest.raises(HostRefused):
        await within(follower.link.call("decide", call_id=call_id, choice="deny"))
    await follower.until(lambda m: "ran it" in _answers(follower), "the answer")
    results = [e for e in follower.mirror.entries if e["kind"] == "pi.tool-result"]
    assert "approved-output" in str(results[0]["model"])
    # Each is said once more as a message of its own, after the commit that holds it.
    asked = [m for m in follower.seen if m["t"] == "permission_request"]
    decided = [m for m in follower.seen if m["t"] == "permission_decision"]
    assert [(m["call_id"], m["tool"]) for m in asked] == [(call_id, "bash")]
    assert [(m["call_id"], m["decision"]["choice"]) for m in decided] == [(call_id, "once")]
    assert asked[0]["seq"] < decided[0]["seq"]
    commit = next(m for m in follower.seen if m["t"] == "commit" and m["seq"] == asked[0]["seq"])
    assert follower.seen.index(commit) < follower.seen.index(asked[0])


async def test_esc_from_a_client_aborts_the_run_for_everyone_and_returns_the_queued_texts(
    serve: ServeFactory,
) -> None:
    served = await serve(call("bash", command=gate_command()), say("never"))
    follower = await served.follower()
    await follower.next("snapshot")
    await within(follower.link.call("submit", text="run"))
    await served.rig.until(lambda: served.rig.model.status.startswith("Running bash"), "runs")
    await within(follower.link.call("submit", text="queued steer"))
    await served.rig.until(lambda: len(served.rig.model.queue) == 1, "queued")
    assert await within(follower.link.call("abort")) == ["queued steer"]
    await served.rig.until(lambda: not served.rig.model.busy, "the host's screen is idle")
    await follower.until(lambda m: "run" not in (m.docs.get(LIVE_DOC.kind) or {}), "idle")
    assert served.rig.card("bash").tool.status == "aborted"  # type: ignore[union-attr]


async def test_esc_from_a_client_stops_the_shell_command_the_hosts_user_runs(
    serve: ServeFactory,
) -> None:
    served = await serve()
    follower = await served.follower()
    await follower.next("snapshot")
    running = asyncio.ensure_future(
        served.rig.controller.run_shell("echo started; sleep 30", context=True)
    )
    await follower.until(lambda m: "shell" in (m.docs.get(LIVE_DOC.kind) or {}), "it runs")
    await within(follower.link.call("abort"))
    await within(running)
    [block] = served.rig.blocks("shell")
    assert block.tool is not None
    assert block.tool.status == "aborted"


async def test_clients_see_who_joins_and_leaves_and_the_host_knows_when_it_is_alone(
    serve: ServeFactory,
) -> None:
    served = await serve()
    first = await served.follower(name="terminal")
    second = await served.follower(name="web")
    message = await first.next("clients")
    while len(message["clients"]) < 3:
        message = await first.next("clients")
    assert [c["name"] for c in message["clients"]] == ["terminal", "terminal", "web"]
    assert message["clients"][0]["host"] is True
    assert message["clients"][1]["pid"] == os.getpid()
    await second.link.close()
    while len(message["clients"]) != 2:
        message = await first.next("clients")
    await first.link.close()
    await within(served.host.alone())


async def test_closing_the_host_says_bye_and_a_waiting_call_ends(serve: ServeFactory) -> None:
    served = await serve(call("bash", command=gate_command()))
    follower = await served.follower()
    await follower.next("snapshot")
    await served.host.close()
    with pytest.raises(HostGone, match="host closing"):
        await follower.drain()
    with pytest.raises(HostGone):
        await follower.link.call("submit", text="too late")


ATTACH_SCRIPT = """\
import os, socket, sys
found = open(sys.argv[1]).read()
os.chdir(os.path.dirname(found))
s = socket.socket(socket.AF_UNIX)
s.connect(os.path.basename(found))
print("host said:", s.makefile("rb").readline().decode().strip())
"""


@pytest.mark.parametrize(
    "launch",
    [
        "{python} {script} {where}",  # carries the command's mark
        "exec env -u PIDURABLE_RUN {python} {script} {where}",  # mark cleared, own group
    ],
    ids=["marked", "unmarked"],
)
async def test_a_command_the_agent_runs_cannot_attach_to_its_own_session(
    serve: ServeFactory, tmp_path: Path, launch: str
) -> None:
    script = tmp_path / "attach.py"
    script.write_text(ATTACH_SCRIPT)
    where = tmp_path / "socket-path"
    command = launch.format(python=sys.executable, script=script, where=where)
    served = await serve(call("bash", command=command), say("tried"))
    where.write_text(str(served.host.path))
    follower = await served.follower()
    await follower.next("snapshot")
    await within(follower.link.call("submit", text="attach to yourself"))
    await follower.until(lambda m: "tried" in _answers(follower), "the answer")
    (result,) = [e for e in follower.mirror.entries if e["kind"] == "pi.tool-result"]
    assert "forbidden" in str(result["model"]), result["model"]
    assert "may not attach" in str(result["model"])
    assert len(served.host.clients) == 2  # the host's own screen and the follower only
