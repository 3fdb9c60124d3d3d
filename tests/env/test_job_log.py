"""A background job's log is redacted as it is written: started, moved and kept (issue 13).

Each job prints a secret in two writes with a pause between them: the first
half (after ``key=``), then, once the test lets it go on, the second half. The
log is sampled all the while: no sample ever holds the value or its first
half, and the log ends with ``[redacted]`` where the value was.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from pi_durable_tui.env import LocalEnv, RunningJob, processes_of_run
from pi_durable_tui.env._redaction import ByteStreamRedaction, SecretRedactor
from pi_durable_tui.env.conformance import Captured
from tests.deadlines import WAIT

SECRET = "tok-0123456789-very-secret"
FIRST, SECOND = SECRET[:13], SECRET[13:]
WAIT_FOR = "n=0; while [ ! -e {0} ] && [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done"
SPLIT_PRINT = (
    f"printf 'key={FIRST}'; touch half; {WAIT_FOR.format('go')}; printf '{SECOND}\\n'; echo done"
)
"""Prints ``key=<secret>`` in two writes, touching ``half`` between them and waiting for ``go``."""


class SampledLog:
    """Every state of a log file seen while polling it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.samples: list[str] = []

    def sample(self) -> str:
        """Read the log now (empty while it does not exist) and remember what it held."""
        try:
            text = Path(self.path).read_text(errors="replace")
        except FileNotFoundError:
            text = ""
        self.samples.append(text)
        return text

    async def until(self, condition: Callable[[str], bool], what: str) -> str:
        """Sample (every few milliseconds) until ``condition`` holds for the log."""
        deadline = asyncio.get_running_loop().time() + WAIT
        while not condition(text := self.sample()):
            assert asyncio.get_running_loop().time() < deadline, f"no {what} in {self.path}"
            await asyncio.sleep(0.002)
        return text

    def assert_never_held(self, *values: str) -> None:
        """No sample ever held any of ``values``."""
        for text in self.samples:
            for value in values:
                assert value not in text, (value, text)


def has_relay(mark: str) -> bool:
    """Whether a kept job's log relay carries ``mark``.

    REMINDER: a process just started shows an empty ``/proc`` environment for a
    moment (its exec is not complete when ``Popen`` returns), so callers wait.
    """
    return any("_log_relay" in info.command for info in processes_of_run(mark))


async def let_the_second_half_through(workdir: Path, log: SampledLog) -> str:
    """Wait until the first half was written and read, let the job go on, return the log."""
    await log.until(lambda _text: (workdir / "half").exists(), "first half")
    held = await log.until(lambda text: "key=" in text, "'key=' (the first write read)")
    for _ in range(20):  # the first half stays out, however often one looks
        log.sample()
        await asyncio.sleep(0.005)
    (workdir / "go").touch()
    await log.until(lambda text: "done" in text, "end of the job's output")
    return held


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[LocalEnv]:
    environ = {"BENCH_SERVICE_TOKEN": SECRET, "PATH": "/usr/bin:/bin"}
    environment = LocalEnv(str(tmp_path), kill_grace=0.1, environ=environ)
    yield environment
    await environment.cleanup()


async def test_a_started_job_s_log_never_holds_a_secret_it_prints_in_two_writes(
    env: LocalEnv, tmp_path: Path
) -> None:
    job = await env.start_job(SPLIT_PRINT)
    log = SampledLog(job.log_path)

    assert await let_the_second_half_through(tmp_path, log) == "key="
    assert await asyncio.wait_for(job.wait(), WAIT) == 0

    assert log.sample() == "key=[redacted]\ndone\n"
    log.assert_never_held(SECRET, FIRST)


async def test_a_moved_job_s_log_never_holds_a_secret_it_prints_after_the_move(
    env: LocalEnv, tmp_path: Path
) -> None:
    command = f"echo before; {WAIT_FOR.format('moved')}; {SPLIT_PRINT}"
    move, captured = asyncio.Event(), Captured()
    call = asyncio.ensure_future(env.exec(command, on_output=captured, move=move))
    while "before" not in captured.text():
        await asyncio.sleep(0.005)
    move.set()
    job = (await asyncio.wait_for(call, WAIT)).moved
    assert isinstance(job, RunningJob)
    log = SampledLog(job.log_path)
    (tmp_path / "moved").touch()

    await let_the_second_half_through(tmp_path, log)
    assert await asyncio.wait_for(job.wait(), WAIT) == 0

    assert log.sample() == "key=[redacted]\ndone\n"
    assert captured.text() == "before\n"  # the call's output ends at the move
    log.assert_never_held(SECRET, FIRST)


async def test_a_job_s_last_line_is_in_its_log_at_once_while_it_still_runs(
    env: LocalEnv, tmp_path: Path
) -> None:
    job = await env.start_job(f"echo listening on :3000; {WAIT_FOR.format('go')}")
    log = SampledLog(job.log_path)

    await log.until(lambda text: text == "listening on :3000\n", "the line")
    assert job.running()
    (tmp_path / "go").touch()
    await asyncio.wait_for(job.wait(), WAIT)


async def test_a_declared_secret_variable_is_hidden_from_a_job_and_from_its_log(
    tmp_path: Path,
) -> None:
    environ = {"LLAMA_KEY": SECRET, "PATH": "/usr/bin:/bin"}  # a plain name: declared a key
    env = LocalEnv(str(tmp_path), environ=environ, secret_names=["LLAMA_KEY"])
    (tmp_path / "key.txt").write_text(f"key={SECRET}\n")  # a file the job prints
    try:
        job = await env.start_job('echo "seen=[$LLAMA_KEY]"; cat key.txt')
        await asyncio.wait_for(job.wait(), WAIT)

        assert Path(job.log_path).read_text() == "seen=[]\nkey=[redacted]\n"
    finally:
        await env.cleanup()


async def test_stopping_a_kept_job_ends_its_relay_with_it(env: LocalEnv, tmp_path: Path) -> None:
    job = await env.start_job(f"echo started; {WAIT_FOR.format('go')}")
    log = SampledLog(job.log_path)
    await log.until(lambda text: "started" in text, "first line")
    kept_log = job.keep()
    try:
        await log.until(lambda _text: has_relay(job.mark), "relay")
    finally:
        await asyncio.wait_for(job.stop(), WAIT)
        Path(kept_log).unlink()
    assert processes_of_run(job.mark) == []


def test_a_byte_stream_holds_back_only_an_end_that_could_start_a_secret() -> None:
    redactor = SecretRedactor([SECRET])

    assert redactor.chunk(b"ready\n") == (b"ready\n", b"")
    assert redactor.chunk(f"key={FIRST}".encode()) == (b"key=", FIRST.encode())
    assert redactor.chunk(b"tok-x") == (b"tok-x", b"")


def test_a_stream_s_held_bytes_carry_over_to_a_new_holder() -> None:
    first = ByteStreamRedaction([SECRET.encode()])
    assert first.redact(f"key={FIRST}".encode()) == b"key="

    second = ByteStreamRedaction([SECRET.encode()], held=first.held)

    assert second.redact(f"{SECOND}\n".encode(), final=True) == b"[redacted]\n"
