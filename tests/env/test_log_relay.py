"""A kept job's relay: it goes on redacting the log once pidurable is gone (issue 13).

A real owner process (``python -c``) starts a job (or moves a running command
to the background, whose output then comes through two pipes) that prints a
secret in two writes (``tests.env.test_job_log.SPLIT_PRINT``), keeps it after
the first write and exits; its run guard then ends the run. The job writes its
second half afterwards: only the relay is left to read it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from pi_durable_tui.env import RUN_DIRECTORY_PREFIX
from pi_durable_tui.env._relay_start import start_relay
from pi_durable_tui.env._strays import carrying, end_processes
from tests.deadlines import WAIT
from tests.env.test_job_log import FIRST, SECRET, SPLIT_PRINT, WAIT_FOR, SampledLog

_OWNER = """
import asyncio, json, pathlib, sys
from pi_durable_tui.env import LocalEnv

async def moved(env, command, wait):
    output, move = [], asyncio.Event()
    command = "echo before; " + wait + "; " + command
    call = asyncio.ensure_future(
        env.exec(command, on_output=lambda d, s, k: output.append(d), move=move)
    )
    while b"before" not in b"".join(output):
        await asyncio.sleep(0.005)
    move.set()
    job = (await call).moved
    pathlib.Path(env.cwd, "moved").touch()
    return job

async def main():
    workdir, command, how, wait = sys.argv[1:5]
    secret = sys.stdin.read()
    env = LocalEnv(workdir, environ={"BENCH_SERVICE_TOKEN": secret, "PATH": "/usr/bin:/bin"})
    job = await (env.start_job(command) if how == "started" else moved(env, command, wait))
    for _ in range(6000):  # the first write read into the log (its first half held back)
        if "key=" in open(job.log_path).read():
            break
        await asyncio.sleep(0.005)
    else:
        sys.exit("the job's first write never reached its log")
    log = job.keep()
    await env.cleanup()
    print(json.dumps({"log": log, "mark": job.mark}), flush=True)

asyncio.run(main())
"""


def _proc(pid: int, name: str) -> bytes:
    """A ``/proc`` file of ``pid`` (empty once it is gone: the job's ``sleep`` come and go)."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as file:
            return file.read()
    except FileNotFoundError:
        return b""


def relay_of(mark: str) -> int:
    """The PID of the one relay carrying ``mark``."""
    [relay] = [pid for pid in carrying({mark}) if b"_log_relay" in _proc(pid, "cmdline")]
    return relay


@pytest.fixture(params=["started", "moved"])
def kept(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """Run the owner to its exit (its job started as one, or moved by Ctrl+B); the kept
    job's log and mark. Ends what is left afterwards."""
    arguments = [str(tmp_path), SPLIT_PRINT, request.param, WAIT_FOR.format("moved")]
    owner = subprocess.run(
        [sys.executable, "-c", _OWNER, *arguments],
        input=SECRET,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    found: dict[str, str] = json.loads(owner.stdout)
    yield found
    asyncio.run(end_processes(carrying({found["mark"]}), 0.1))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(found["log"])


async def test_a_kept_job_s_log_stays_redacted_after_its_owner_exited(
    kept: dict[str, str], tmp_path: Path
) -> None:
    mark, log = kept["mark"], SampledLog(kept["log"])
    run_directory = Path(tempfile.gettempdir(), RUN_DIRECTORY_PREFIX + mark.rsplit(".", 1)[0])
    while run_directory.exists():  # the owner's run guard ended its run, sparing the job
        await asyncio.sleep(0.01)
    assert log.sample() == "key="
    relay = relay_of(mark)

    (tmp_path / "go").touch()
    await log.until(lambda text: "done" in text, "the job's output after its owner exited")
    while carrying({mark}):  # the job ended: the relay read the end of its pipe and exited
        await asyncio.sleep(0.01)

    assert log.sample() == "key=[redacted]\ndone\n"
    log.assert_never_held(SECRET, FIRST)
    assert relay not in carrying({mark})


async def test_the_relay_s_command_line_and_environment_hold_no_secret(
    kept: dict[str, str],
) -> None:
    relay = relay_of(kept["mark"])

    seen = _proc(relay, "cmdline") + _proc(relay, "environ")

    assert SECRET.encode() not in seen
    assert FIRST.encode() not in seen  # what the job's writer held back went by pipe too
    assert _proc(relay, "environ") == f"PIDURABLE_RUN={kept['mark']}\0".encode()


_NOT_RUN_BY_THE_RELAY = {
    "_asyncio": "asyncio (env's face, _local, _strays)",
    "_ssl": "ssl (asyncio)",
    "_posixsubprocess": "subprocess (_relay_start, the parent's side)",
    "_json": "json",
}
"""The C parts of what the relay must not load, each with what would load it."""


def _extension_files(names: Iterable[str]) -> dict[str, str]:
    """The file of each of ``names`` that is a shared object in this interpreter."""
    found: dict[str, str] = {}
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and spec.origin.endswith(".so"):
            found[name] = os.path.realpath(spec.origin)  # /proc maps show real paths
    return found


@pytest.fixture
def running_relay(tmp_path: Path) -> Iterator[tuple[int, Path, int]]:
    """A relay started by ``start_relay`` on one pipe: its PID, its log and the pipe's
    write end (closed, and the relay reaped, afterwards)."""
    read_end, write_end = os.pipe()
    log_path = tmp_path / "job.log"
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        pid = start_relay("test-0.1", [(read_end, b"")], log, [SECRET.encode()])
    finally:
        os.close(read_end)
        os.close(log)
    try:
        yield pid, log_path, write_end
    finally:
        os.close(write_end)  # the relay reads the end of its one pipe and exits
        os.waitpid(pid, 0)


def test_the_relay_process_loads_neither_asyncio_nor_ssl_nor_subprocess_nor_json(
    running_relay: tuple[int, Path, int],
) -> None:
    # REMINDER: what a process loaded is read from its /proc maps: the shared objects of
    # the C extensions those modules import. Its sys.modules cannot be read from outside
    # without a debug hook in the product, and a bound on its memory would depend on the
    # interpreter's build and version; a mapped _asyncio.so does not.
    pid, log, write_end = running_relay
    watched = _extension_files(list(_NOT_RUN_BY_THE_RELAY))
    if not watched:
        pytest.skip("this interpreter has asyncio, ssl, subprocess and json built in")
    os.write(write_end, f"key={SECRET}\n".encode())
    deadline = time.monotonic() + WAIT
    while log.read_bytes() != b"key=[redacted]\n":  # relayed: the relay imported all it runs
        assert time.monotonic() < deadline, f"the relay wrote no line to {log}"
        time.sleep(0.005)

    maps = _proc(pid, "maps").decode(errors="replace").splitlines()
    mapped = {fields[5] for line in maps if len(fields := line.split(maxsplit=5)) == 6}

    loaded = {name: _NOT_RUN_BY_THE_RELAY[name] for name, file in watched.items() if file in mapped}
    assert loaded == {}
