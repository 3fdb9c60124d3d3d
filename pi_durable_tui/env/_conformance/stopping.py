"""Conformance tests of stopping commands: timeout, abort, cancellation, cleanup (R120).

Each test starts a shell that puts a ``sleep`` in the background, prints its PID
and waits, so the ``sleep`` is a grandchild of the call; stopping must kill the
whole process group, grandchild included, and reap it.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from pi_durable_tui.env._conformance.base import Captured, EnvConformanceBase
from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._protocol import ExecutionEnv

GRANDCHILD = "sleep 30 & echo $!; wait"


class StopRules(EnvConformanceBase):
    """Timeouts, aborts and cancellation kill the command's whole process group (R120)."""

    async def test_r120_a_timeout_kills_the_whole_group_and_says_so(
        self, env: ExecutionEnv
    ) -> None:
        captured = Captured()
        started = time.monotonic()
        with pytest.raises(FileError) as caught:
            await env.exec(GRANDCHILD, timeout=0.2, on_output=captured)
        assert time.monotonic() - started < 10
        assert caught.value.code == "timeout"
        assert str(caught.value) == "Command timed out after 0.2 seconds"
        await self.assert_dead(env, int(captured.first_line()))

    async def test_r120_an_abort_kills_the_whole_group_and_differs_from_a_timeout(
        self, env: ExecutionEnv
    ) -> None:
        captured = Captured()
        abort = asyncio.Event()
        running = asyncio.ensure_future(
            env.exec(GRANDCHILD, timeout=60, on_output=captured, abort=abort)
        )
        pid = int(await captured.wait_for_line())
        abort.set()
        with pytest.raises(FileError) as caught:
            await running
        assert (caught.value.code, str(caught.value)) == ("aborted", "Command aborted")
        await self.assert_dead(env, pid)

    async def test_r120_cancelling_the_caller_kills_the_group_then_propagates(
        self, env: ExecutionEnv
    ) -> None:
        captured = Captured()
        running = asyncio.ensure_future(env.exec(GRANDCHILD, on_output=captured))
        pid = int(await captured.wait_for_line())
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        await self.assert_dead(env, pid)

    async def test_r120_output_written_before_a_kill_is_still_delivered(
        self, env: ExecutionEnv
    ) -> None:
        captured = Captured()
        with pytest.raises(FileError):
            await env.exec("echo before; sleep 30", timeout=0.2, on_output=captured)
        assert captured.text() == "before\n"

    async def test_r120_a_background_process_does_not_hold_the_call(
        self, env: ExecutionEnv
    ) -> None:
        captured = Captured()
        result = await env.exec("sleep 30 & echo $!", on_output=captured)
        assert result.exit_code == 0
        pid = int(captured.first_line())
        assert await self.process_alive(env, pid)
        await env.cleanup()
        await self.assert_dead(env, pid)

    async def test_r120_cleanup_kills_commands_still_running(self, env: ExecutionEnv) -> None:
        captured = Captured()
        running = asyncio.ensure_future(env.exec(GRANDCHILD, on_output=captured))
        pid = int(await captured.wait_for_line())
        await env.cleanup()
        result = await asyncio.wait_for(running, 10)
        assert result.exit_code != 0
        await self.assert_dead(env, pid)

    async def test_r120_a_failing_output_callback_stops_the_command_and_propagates(
        self, env: ExecutionEnv
    ) -> None:
        pids: list[int] = []

        def explode(chunk: bytes, stream: object, skipped: object) -> None:
            pids.append(int(chunk.split(b"\n", 1)[0]))
            raise RuntimeError("consumer failed")

        with pytest.raises(RuntimeError, match="consumer failed"):
            await env.exec(GRANDCHILD, on_output=explode)
        await self.assert_dead(env, pids[0])
