"""Conformance tests of what a command leaves behind: nothing, with ``end_background`` (issue 13).

A command that puts processes in the background (``cmd &``), detaches them
(``nohup``) or moves them out of its process group and session (``setsid``)
must not leave them running once ``exec(..., end_background=True)`` has
returned or raised; without it they run until ``cleanup()`` (R120), which ends
the ``setsid`` ones too. ``cleanup()`` also deletes the spill files of the
environment's commands (a result that named one said it was kept until then).
"""

from __future__ import annotations

import asyncio

import pytest

from pi_durable_tui.env._conformance.base import Captured, EnvConformanceBase
from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._protocol import ExecutionEnv
from pi_durable_tui.env._types import SpillPolicy

LEAVES = (
    "sleep 300 & echo $!; setsid sleep 300 & echo $!; nohup sleep 300 >/dev/null 2>&1 & echo $!"
)
"""Three background processes, one each way, each PID on a line."""


def pids(captured: Captured) -> list[int]:
    """The PIDs ``LEAVES`` printed."""
    return [int(line) for line in captured.text().split()]


class LeftoverRules(EnvConformanceBase):
    """A command with ``end_background`` leaves no process; ``cleanup`` deletes spill files."""

    async def assert_all_dead(self, env: ExecutionEnv, found: list[int]) -> None:
        """Assert that every PID in ``found`` (three of them) is gone."""
        assert len(found) == 3
        for pid in found:
            await self.assert_dead(env, pid)

    async def test_issue13_end_background_ends_every_process_the_command_started(
        self, env: ExecutionEnv
    ) -> None:
        captured = Captured()
        result = await env.exec(LEAVES, on_output=captured, end_background=True)
        assert result.exit_code == 0
        await self.assert_all_dead(env, pids(captured))

    async def test_issue13_end_background_ends_them_after_a_timeout_too(
        self, env: ExecutionEnv
    ) -> None:
        captured = Captured()
        with pytest.raises(FileError) as caught:
            await env.exec(
                LEAVES + "; sleep 30", timeout=1, on_output=captured, end_background=True
            )
        assert caught.value.code == "timeout"
        await self.assert_all_dead(env, pids(captured))

    async def test_issue13_end_background_ends_them_after_an_abort_too(
        self, env: ExecutionEnv
    ) -> None:
        captured = Captured()
        abort = asyncio.Event()
        command = LEAVES + "; echo ready; sleep 30"
        running = asyncio.ensure_future(
            env.exec(command, on_output=captured, abort=abort, end_background=True)
        )

        async def ready() -> None:
            while "ready" not in captured.text():
                await asyncio.sleep(0.01)

        await asyncio.wait_for(ready(), 10)
        abort.set()
        with pytest.raises(FileError):
            await running
        await self.assert_all_dead(env, [int(n) for n in captured.text().split()[:3]])

    async def test_issue13_without_end_background_cleanup_ends_what_left_the_group(
        self, env: ExecutionEnv
    ) -> None:
        captured = Captured()
        await env.exec(LEAVES, on_output=captured)
        found = pids(captured)
        for pid in found:
            assert await self.process_alive(env, pid)
        await env.cleanup()
        await self.assert_all_dead(env, found)

    async def test_issue13_cleanup_deletes_the_spill_files_of_its_commands(
        self, env: ExecutionEnv
    ) -> None:
        result = await env.exec("seq 1 3000", spill=SpillPolicy(100, 10))
        assert result.spill_path is not None
        assert await env.exists(result.spill_path)
        await env.cleanup()
        assert not await env.exists(result.spill_path)
