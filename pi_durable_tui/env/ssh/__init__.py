"""The SSH execution environment: the agent's tools on another host (issue 17).

``SshEnv.connect("ssh://user@host[:port]/path")`` opens one SSH connection
(host key checked against ``~/.ssh/known_hosts``, keys from ``~/.ssh`` or the
agent, nothing forwarded) and returns an ``ExecutionEnv`` whose files are the
remote host's, through SFTP, and whose commands run there under a guard that
kills their process group when they are stopped or when this process dies.
``parse_ssh_url`` and ``SshTarget`` read the URL; ``SshConnectError`` is a
failed connection, with one line saying what to do.

This package imports asyncssh; nothing else in ``pi_durable_tui.env`` imports it,
so a local session never pays for it.
"""

from __future__ import annotations

from pi_durable_tui.env.ssh._connection import SshConnectError
from pi_durable_tui.env.ssh._env import MAX_COMMANDS, SshEnv
from pi_durable_tui.env.ssh._target import SshTarget, parse_ssh_url

__all__ = ["MAX_COMMANDS", "SshConnectError", "SshEnv", "SshTarget", "parse_ssh_url"]
