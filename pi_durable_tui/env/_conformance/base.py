"""The suite's scaffolding: the environment factory, output capture, liveness checks.

``EnvConformanceBase`` owns the ``env`` fixture (an environment whose ``cwd``
is a fresh empty directory, cleaned up after the test) and the helpers every
group uses. Tests reach files and processes only through the environment, so
the suite runs unchanged on an environment whose files are not local; the one
assumption is a POSIX shell with the usual tools (``sh``, ``sleep``, ``kill``,
``awk``, ``ln``, ``find``, ``chmod``, ``env``) inside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pi_durable_tui.env._protocol import ExecutionEnv
from pi_durable_tui.env._types import OutputStream, SkippedOutput


@dataclass
class Captured:
    """Everything ``on_output`` received during one ``exec``."""

    chunks: list[tuple[OutputStream, bytes, SkippedOutput | None]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def __call__(self, chunk: bytes, stream: OutputStream, skipped: SkippedOutput | None) -> None:
        self.chunks.append((stream, chunk, skipped))
        self.arrived.set()

    def text(self, stream: OutputStream | None = None) -> str:
        """The delivered bytes of ``stream`` (or of both), decoded."""
        return b"".join(c for s, c, _ in self.chunks if stream in (None, s)).decode()

    def first_line(self) -> str:
        """The first line of output (a PID, in the tests that kill)."""
        return self.text().split("\n", 1)[0].strip()

    async def wait_for_line(self) -> str:
        """Wait until a whole first line arrived and return it."""
        while "\n" not in self.text():
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 10)
        return self.first_line()


class EnvConformanceBase:
    """Fixtures and helpers shared by every group of environment conformance tests.

    Subclasses define ``make_env`` and may override ``process_alive``.
    """

    async def make_env(self, directory: Path) -> ExecutionEnv:
        """A new environment whose ``cwd`` is ``directory`` (empty, owned by the test).

        Args:
            directory: A fresh local directory; an environment with remote files
                maps it to a fresh directory of its own.
        """
        raise NotImplementedError("an environment conformance class must define make_env")

    async def process_alive(self, env: ExecutionEnv, pid: int) -> bool:
        """Whether process ``pid`` (inside the environment) still exists.

        The default asks the environment itself with ``kill -0``; a local
        environment may check with ``os.kill(pid, 0)`` instead.
        """
        result = await env.exec(["sh", "-c", f"kill -0 {pid} 2>/dev/null"])
        return result.exit_code == 0

    @pytest.fixture
    async def env(self, tmp_path: Path) -> AsyncIterator[ExecutionEnv]:
        """A fresh environment in an empty working directory, cleaned up after the test."""
        directory = tmp_path / "work"
        directory.mkdir()
        environment = await self.make_env(directory)
        yield environment
        await environment.cleanup()

    async def run(
        self,
        env: ExecutionEnv,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        variables: Mapping[str, str] | None = None,
        inherit_env: bool = True,
    ) -> tuple[int, str, str]:
        """Run a command to its end; return its exit code, stdout and stderr."""
        captured = Captured()
        result = await env.exec(
            command, cwd=cwd, env=variables, inherit_env=inherit_env, on_output=captured
        )
        return result.exit_code, captured.text("stdout"), captured.text("stderr")

    async def assert_dead(self, env: ExecutionEnv, pid: int) -> None:
        """Assert that ``pid`` is gone, allowing a moment for its reaping."""
        for _ in range(200):
            if not await self.process_alive(env, pid):
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"process {pid} is still alive")
