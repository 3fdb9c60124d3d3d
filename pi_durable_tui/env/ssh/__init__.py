"""The SSH execution environment: the agent's tools on another host (issue 17).

``SshEnv.connect("ssh://user@host[:port]/path")`` opens one SSH connection
(host key checked against ``~/.ssh/known_hosts``, keys from ``~/.ssh`` or the
agent, nothing forwarded) and returns an ``ExecutionEnv`` whose files are the
remote host's, through SFTP, and whose commands run there under a guard that
kills their process group when they are stopped or when this process dies.
``parse_ssh_url`` and ``SshTarget`` read the URL; ``SshConnectError`` is a
failed connection, with one line saying what to do.

Only ``SshEnv``, ``SshConnectError`` and ``MAX_COMMANDS`` import asyncssh, on
first use: checking a URL on the command line costs no import of it, and
nothing else in ``pi_durable_tui.env`` imports this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from pi_durable_tui.env.ssh._target import SshTarget, parse_ssh_url

if TYPE_CHECKING:
    from pi_durable_tui.env.ssh._connection import SshConnectError
    from pi_durable_tui.env.ssh._env import SshEnv
    from pi_durable_tui.env.ssh._shared_link import MAX_COMMANDS

_LAZY = {"SshConnectError": "_connection", "SshEnv": "_env", "MAX_COMMANDS": "_shared_link"}


def __getattr__(name: str) -> object:
    """Import a name that needs asyncssh from its private module on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = ["MAX_COMMANDS", "SshConnectError", "SshEnv", "SshTarget", "parse_ssh_url"]
