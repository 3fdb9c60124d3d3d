"""Runs the environment conformance suite on ``SshEnv`` against a real ``sshd`` (R122, issue 17).

Each test connects a new environment (one SSH connection) whose remote working
directory is the fresh directory the suite hands out: the server runs on this
machine, so that directory is a fresh remote directory too. Liveness checks go
through the environment itself (the suite's ``kill -0`` default).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pi_durable_tui.env import ExecutionEnv
from pi_durable_tui.env.conformance import EnvConformance
from pi_durable_tui.env.ssh import SshEnv
from tests.env.sshd_server import Sshd


class TestSshEnv(EnvConformance):
    server: Sshd

    @pytest.fixture(autouse=True)
    def _server(self, ssh_client: Sshd) -> None:
        self.server = ssh_client

    async def make_env(self, directory: Path) -> ExecutionEnv:
        env = await SshEnv.connect(self.server.url(str(directory)))
        self.opened = env
        return env

    @pytest.fixture(autouse=True)
    async def _close(self) -> AsyncIterator[None]:
        yield
        opened = getattr(self, "opened", None)
        if opened is not None:
            await opened.close()
