"""Starting a kept job's relay: the parent's side of ``_log_relay`` (issue 13).

A job's output comes through pipes this process reads (``_job_log``). A job
the user keeps runs on after this process exits, so someone must keep reading
those pipes (a job whose pipe nobody reads blocks, or dies of ``SIGPIPE``) and
keep the log free of secrets. ``start_relay`` hands the read ends to a small
process of pidurable's own (``_log_relay``), started at keep time:

- ``python -I -S -c <boot> <package root> <fd>...``: isolated (no
  ``PYTHON*`` variable, no site) and importing the relay's module from the
  package that started it, so it redacts with the same ``ByteStreamRedaction``
  (not ``python -m``: that would find whatever ``pi_durable_tui`` the
  environment's path holds, and ``-I`` ignores ``PYTHONPATH``). The boot names
  the package's directories itself (``_BOOT``): nothing is imported from the
  interpreter's path but the standard library, and the package's
  ``__init__`` files do not run, so the relay loads only what it runs (the
  relay's module, ``_redaction`` and ``_secrets``; no asyncio, subprocess or
  json: about 10 MB resident instead of 23.5 MB, per kept job);
- its environment is nothing but the job's mark (``MARK_NAME``), so the run
  guard spares it with the job (``keep``), ``KeptJob.running`` counts it and
  ``stop`` ends it with the job;
- the secret values, and the bytes the job's writer held back (the possible
  start of a secret, ``ByteStreamRedaction.held``), arrive on its stdin, a pipe
  written once and closed (``_log_relay.relay_input``): never in its argv or
  environment, which ``/proc/<pid>/cmdline`` and ``environ`` show to every
  process of the user;
- its stdout is the log (the writer's own descriptor, opened for appending),
  its working directory ``/`` (it holds no workspace busy), its session its own
  (no hangup of the terminal reaches it).

This module is the parent's alone (it imports ``subprocess``); the relay
process never imports it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

from pi_durable_tui.env._log_relay import main, relay_input, write_all
from pi_durable_tui.env._mark import MARK_NAME

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PACKAGES = ("pi_durable_tui", "pi_durable_tui.env")
"""The packages above the relay's module, which ``_BOOT`` registers bare."""

# REMINDER: the boot registers the packages above the relay's module as bare modules
# whose ``__path__`` is their directory under the root that started it, before the
# import. Importing the relay's module then finds it, and every module it imports,
# in those directories alone (a submodule is looked up on its parent's ``__path__``,
# never on ``sys.path``), and never runs ``pi_durable_tui/__init__.py`` or
# ``env/__init__.py``: ``env``'s face imports the whole environment (asyncio, ssl,
# subprocess, ...), which would cost every kept job 13 MB more. A module the relay
# imports must therefore stand on ``env``'s private modules, never on its face
# (``tests/env/test_log_relay.py`` checks what the relay process has loaded).
_BOOT = (
    "import sys\n"
    f"for name in {_PACKAGES!r}:\n"
    "    package = sys.modules[name] = type(sys)(name)\n"
    "    package.__path__ = [sys.argv[1] + '/' + name.replace('.', '/')]\n"
    f"from {main.__module__} import main\n"
    "main(sys.argv[2:])"
)


def start_relay(
    mark: str, pipes: Sequence[tuple[int, bytes]], log: int, secrets: Sequence[bytes]
) -> int:
    """Start the relay of a kept job; return its PID.

    Args:
        mark: The job's mark (the relay carries it).
        pipes: Each read end of the job's output and the bytes held back for it.
        log: The log's descriptor (open for appending): the relay's stdout.
        secrets: The values the log must never hold.

    Raises:
        OSError: The relay could not be started (the job is then not kept).
    """
    config = relay_input(secrets, [held for _, held in pipes])
    read_end, write_end = os.pipe()
    fds = [fd for fd, _ in pipes]
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _BOOT, _ROOT, *map(str, fds)],
            stdin=read_end,
            stdout=log,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env={MARK_NAME: mark},
            start_new_session=True,
            pass_fds=fds,
            close_fds=True,
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    # REMINDER: the relay outlives us on purpose; marking the Popen finished keeps its
    # __del__ from warning or waiting (``JobLog.keep`` makes it a ``ProcessGroup``, reaped here).
    process.returncode = 0
    try:
        write_all(write_end, config)
    finally:
        os.close(write_end)
    return process.pid
