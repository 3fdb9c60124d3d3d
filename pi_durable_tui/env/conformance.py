"""The environment conformance suite: one set of tests every ``ExecutionEnv`` passes (R122).

It checks the protocol of ``pi_durable_tui.env`` through the environment's own
methods only, so it runs on ``LocalEnv`` and on any environment written later
(a container, a remote host). It needs ``pytest`` and ``pytest-asyncio`` in
``asyncio_mode = "auto"`` and, inside the environment, a POSIX shell with
``sleep``, ``kill``, ``awk``, ``ln``, ``find``, ``chmod`` and ``env``.

Usage: subclass ``EnvConformance`` in a ``Test...`` class and say how to make an
environment working in a directory the suite gives you::

    from pathlib import Path

    from pi_durable_tui.env import ExecutionEnv
    from pi_durable_tui.env.conformance import EnvConformance
    from my_env import MyEnv


    class TestMyEnv(EnvConformance):
        async def make_env(self, directory: Path) -> ExecutionEnv:
            return MyEnv(cwd=str(directory))

Override ``process_alive(env, pid)`` when the environment can check a process
more directly than ``kill -0`` inside it. The suite calls ``cleanup()`` after
every test.

Groups (one module each under ``_conformance``): ``paths`` (resolution,
canonical paths, ids), ``reads`` (file facts, listings, text, bytes, binary
readers, line scans), ``writes`` (atomic replace, modes, append, truncate,
rename, directories, removal, temp files), ``confinement`` (writes
``beneath`` a root: links out refused, a racing link swap), ``aborts`` (every operation with a
set abort signal), ``processes`` (shell and argv, exit codes, tags, cwd,
variables, timeouts), ``stopping`` (timeout, abort, cancellation and cleanup
killing a grandchild), ``leftovers`` (``end_background`` ends ``cmd &``,
``nohup`` and ``setsid``; ``cleanup()`` deletes spill files), ``output``
(spill files, tail windows) and ``secrets``.
"""

from __future__ import annotations

from pi_durable_tui.env._conformance.aborts import AbortRules
from pi_durable_tui.env._conformance.base import Captured, EnvConformanceBase
from pi_durable_tui.env._conformance.confinement import ConfinementRules
from pi_durable_tui.env._conformance.leftovers import LeftoverRules
from pi_durable_tui.env._conformance.output import SpillRules, WindowRules
from pi_durable_tui.env._conformance.paths import PathRules
from pi_durable_tui.env._conformance.processes import ExecRules
from pi_durable_tui.env._conformance.reads import BinaryReaderRules, FileFactRules, ReadRules
from pi_durable_tui.env._conformance.secrets import SecretRules
from pi_durable_tui.env._conformance.stopping import StopRules
from pi_durable_tui.env._conformance.writes import DirectoryRules, WriteRules

__all__ = ["Captured", "EnvConformance"]


class EnvConformance(
    PathRules,
    FileFactRules,
    ReadRules,
    BinaryReaderRules,
    WriteRules,
    ConfinementRules,
    DirectoryRules,
    AbortRules,
    ExecRules,
    StopRules,
    LeftoverRules,
    SpillRules,
    WindowRules,
    SecretRules,
    EnvConformanceBase,
):
    """Every environment conformance test; subclass it as ``Test<Env>`` with ``make_env``.

    Not collected by itself: pytest collects only classes named ``Test*``.
    """
