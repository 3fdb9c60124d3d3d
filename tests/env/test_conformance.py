"""Runs the environment conformance suite on ``LocalEnv`` (R122).

The local class checks liveness with ``os.kill(pid, 0)`` directly, which also
proves the grandchildren are reaped: a zombie would still answer.
"""

from __future__ import annotations

import os
from pathlib import Path

from pi_durable_tui.env import ExecutionEnv, LocalEnv
from pi_durable_tui.env.conformance import EnvConformance


class TestLocalEnv(EnvConformance):
    async def make_env(self, directory: Path) -> ExecutionEnv:
        return LocalEnv(str(directory))

    async def process_alive(self, env: ExecutionEnv, pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
