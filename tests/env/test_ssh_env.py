"""What ``SshEnv`` does beyond the conformance suite (issue 17).

Connection failures are one line saying what to do; the remote environment is
scrubbed of its own secret-looking variables, and spill files hide their
values; variables given to ``exec`` never appear on a remote command line;
more commands than OpenSSH's ten sessions per connection still all run; a
finished command leaves no guard behind. The server is the real ``sshd`` of
``tests/env/conftest.py``, on this machine, so remote processes are visible in
this machine's ``/proc``.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pi_durable_tui.env import FileError, SpillPolicy
from pi_durable_tui.env.conformance import Captured
from pi_durable_tui.env.ssh import SshConnectError, SshEnv
from tests.env.sshd_server import REMOTE_SECRET_NAME, REMOTE_SECRET_VALUE, Sshd, keygen
from tests.env.test_orphan_guard import group_members, wait_until


@pytest.fixture
async def ssh_env(ssh_client: Sshd, tmp_path: Path) -> AsyncIterator[SshEnv]:
    env = await SshEnv.connect(ssh_client.url(str(tmp_path)))
    try:
        yield env
    finally:
        await env.close()


async def test_an_unknown_host_key_is_refused_with_the_line_that_trusts_it(
    ssh_client: Sshd, tmp_path: Path
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(SshConnectError) as caught:
        await SshEnv.connect(ssh_client.url("/tmp"), known_hosts=str(empty))
    message = str(caught.value)
    assert "\n" not in message
    assert "is not in" in message
    assert f"ssh-keyscan -p {ssh_client.port} 127.0.0.1 >> {empty}" in message
    assert f"ssh -p {ssh_client.port} {ssh_client.user}@127.0.0.1" in message


async def test_a_changed_host_key_is_refused_and_named_as_a_change(
    ssh_client: Sshd, tmp_path: Path
) -> None:
    other = keygen(tmp_path / "other_host_key")
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{ssh_client.port} {other}\n")
    with pytest.raises(SshConnectError) as caught:
        await SshEnv.connect(ssh_client.url("/tmp"), known_hosts=str(known))
    assert "CHANGED" in str(caught.value)
    assert f"ssh-keygen -R '[127.0.0.1]:{ssh_client.port}'" in str(caught.value)


async def test_a_key_the_server_does_not_accept_is_a_refused_login(
    ssh_client: Sshd, tmp_path: Path
) -> None:
    keygen(tmp_path / "stranger")
    with pytest.raises(SshConnectError) as caught:
        await SshEnv.connect(ssh_client.url("/tmp"), client_keys=[str(tmp_path / "stranger")])
    assert f"login as {ssh_client.user} on 127.0.0.1:{ssh_client.port} was refused" in str(
        caught.value
    )


async def test_a_closed_port_is_one_line_naming_the_host(ssh_client: Sshd) -> None:
    url = f"ssh://{ssh_client.user}@127.0.0.1:1/tmp"
    with pytest.raises(SshConnectError) as caught:
        await SshEnv.connect(url)
    assert str(caught.value).startswith("Could not connect to 127.0.0.1:1 over SSH:")


async def test_the_working_directory_and_the_footer_name_the_host(
    ssh_env: SshEnv, ssh_client: Sshd, tmp_path: Path
) -> None:
    assert ssh_env.cwd == str(tmp_path)
    assert ssh_env.display == f"{ssh_client.user}@127.0.0.1:{tmp_path}"
    assert ssh_env.id == f"ssh://{ssh_client.user}@127.0.0.1:{ssh_client.port}"
    home = await SshEnv.connect(ssh_client.url("/~"))
    try:
        assert home.cwd == home.absolute_path("~")
    finally:
        await home.close()


async def test_a_remote_secret_looking_variable_is_scrubbed_unless_allowed(
    ssh_client: Sshd, ssh_env: SshEnv, tmp_path: Path
) -> None:
    captured = Captured()
    await ssh_env.exec(["env"], on_output=captured)
    assert REMOTE_SECRET_NAME not in captured.text()
    assert "SHLVL=" in captured.text()  # the rest of the remote environment is there
    allowed = await SshEnv.connect(ssh_client.url(str(tmp_path)), allow_env=["PIDURABLE_*"])
    try:
        captured = Captured()
        await allowed.exec(["env"], on_output=captured)
        assert f"{REMOTE_SECRET_NAME}={REMOTE_SECRET_VALUE}" in captured.text()
    finally:
        await allowed.close()


async def test_a_spill_file_hides_remote_and_local_secret_values(
    ssh_client: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_ONLY_TOKEN", "local-secret-9876543210")
    env = await SshEnv.connect(ssh_client.url(str(tmp_path)), allow_env=["PIDURABLE_*"])
    try:
        result = await env.exec(
            f'echo "${REMOTE_SECRET_NAME}"; echo local-secret-9876543210; echo end',
            spill=SpillPolicy(0, 0),
        )
        assert result.spill_path is not None
        text = await env.read_text_file(result.spill_path)
        assert text == "[redacted]\n[redacted]\nend\n"
        await env.remove(result.spill_path)
    finally:
        await env.close()


def _cmdlines_holding(value: bytes) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if value in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def test_given_variables_reach_the_command_exactly_and_never_a_command_line(
    ssh_env: SshEnv,
) -> None:
    value = 'it\'s "quoted" \\ $dollar `tick`\nsecond line \u00fc\t-marker-4242\n'
    captured = Captured()
    running = asyncio.ensure_future(
        ssh_env.exec(
            ["sh", "-c", 'printf "%s" "$GIVEN"; printf "\\n--\\n"; sleep 0.5'],
            env={"GIVEN": value},
            on_output=captured,
        )
    )
    while "--" not in captured.text():
        await captured.arrived.wait()
        captured.arrived.clear()
    assert _cmdlines_holding(b"-marker-4242") == []
    assert (await running).exit_code == 0
    assert captured.text().split("\n--\n")[0] == value


async def test_more_commands_than_the_servers_sessions_all_run(ssh_env: SshEnv) -> None:
    async def one(index: int) -> str:
        captured = Captured()
        await ssh_env.exec(f"sleep 0.3; echo {index}", on_output=captured)
        return captured.text()

    outputs = await asyncio.gather(*(one(index) for index in range(14)))
    assert outputs == [f"{index}\n" for index in range(14)]


async def test_a_finished_command_leaves_no_guard_in_its_group(ssh_env: SshEnv) -> None:
    captured = Captured()
    await ssh_env.exec("echo $$", on_output=captured)
    group = int(captured.first_line())
    wait_until(lambda: group_members(group) == [], f"group {group} to be empty")


async def test_a_remote_command_gets_the_working_directory_error_of_a_missing_one(
    ssh_env: SshEnv,
) -> None:
    with pytest.raises(FileError) as caught:
        await ssh_env.exec(["true"], cwd="/no/such/place")
    assert (caught.value.code, str(caught.value)) == (
        "not_found",
        "Working directory does not exist: /no/such/place",
    )


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


async def test_after_the_connection_drops_the_next_operation_connects_again(
    ssh_env: SshEnv, ssh_client: Sshd
) -> None:
    await ssh_env.write_file("before.txt", "1")
    (listener,) = _children(ssh_client.process.pid)
    for session in _children(listener):  # every connection's server process: a dropped link
        os.kill(session, signal.SIGKILL)

    # The call in flight when the drop is noticed fails (it may have reached the host, so
    # it is not repeated); the calls after it connect again.
    failures: list[FileError] = []
    while len(failures) < 50:
        try:
            await ssh_env.write_file("after.txt", "2")
            break
        except FileError as error:
            failures.append(error)
            await asyncio.sleep(0.05)
    assert all(f.code == "unknown" and "SSH connection" in str(f) for f in failures)
    assert len(failures) < 50

    captured = Captured()
    assert (await ssh_env.exec("cat before.txt after.txt", on_output=captured)).exit_code == 0
    assert captured.text() == "12"
