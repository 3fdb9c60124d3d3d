"""The connection every view of one ``SshEnv`` shares, opened again after it dropped.

An ``SshEnv`` and the views ``at()`` makes of it (other working directories,
for subagents) use one ``SharedLink``: one SSH connection, one SFTP session,
one limit of running commands, one record of process groups for ``cleanup``.
When the connection has dropped (a network outage, a restarted ``sshd``), the
next operation opens a new one, once, however many operations ask at the same
moment; commands that were running when it dropped were ended by their guards
and fail with ``FileError("unknown")``. After ``close()`` nothing reconnects.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env.ssh._connection import Link, SshConnectError, open_link
from pi_durable_tui.env.ssh._sftp_files import SftpFiles
from pi_durable_tui.env.ssh._target import SshTarget

if TYPE_CHECKING:
    from pi_durable_tui.env.ssh._remote_command import RemoteCommand

MAX_COMMANDS = 8
"""Commands running at once on one connection (OpenSSH's default ``MaxSessions`` is 10)."""


class SharedLink:
    """One connection, its SFTP files and its commands, for every view of an ``SshEnv``.

    Args:
        link: The connection, already open.
        target: Where it goes (to open it again).
        known_hosts: The known-hosts file it was opened with (None: the default).
        client_keys: The key files it was opened with (None: the defaults).
    """

    def __init__(
        self,
        link: Link,
        target: SshTarget,
        known_hosts: str | None = None,
        client_keys: list[str] | None = None,
    ) -> None:
        self.link = link
        self.files = SftpFiles(link.sftp, link.temp_dir)
        self.channels = asyncio.Semaphore(MAX_COMMANDS)
        self.running: set[RemoteCommand] = set()
        self.groups: set[int] = set()
        self.marks: set[str] = set()
        """Marks of the commands whose strays ``cleanup`` still ends (issue 13)."""
        self.spills: set[str] = set()
        """Remote spill files ``cleanup`` removes."""
        self.closed = False
        self._target = target
        self._known_hosts = known_hosts
        self._client_keys = client_keys
        self._reopening: asyncio.Lock | None = None

    def connected(self) -> bool:
        """Whether the connection is open now."""
        return not self.closed and not self.link.connection.is_closed()

    async def ensure(self) -> None:
        """Open the connection again if it dropped.

        Raises:
            FileError: ``unknown``: the environment is closed, or the host cannot
                be reached again (the message says why).
        """
        if self.closed:
            raise FileError("unknown", f"The SSH environment {self._target.url()} is closed")
        if not self.link.connection.is_closed():
            return
        if self._reopening is None:
            self._reopening = asyncio.Lock()
        async with self._reopening:
            if not self.link.connection.is_closed() or self.closed:
                return
            try:
                link = await open_link(
                    self._target, known_hosts=self._known_hosts, client_keys=self._client_keys
                )
            except SshConnectError as error:
                raise FileError(
                    "unknown", f"The SSH connection dropped and could not be opened again: {error}"
                ) from None
            self.link = link
            self.files = SftpFiles(link.sftp, link.temp_dir)

    async def close(self) -> None:
        """Close the connection for good. Idempotent."""
        self.closed = True
        await self.link.close()
