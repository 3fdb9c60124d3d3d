"""Where a session's tools work: this machine's directory, or a remote one over SSH (issue 17).

``--env ssh://user@host[:port]/path`` on the command line, else ``"env"`` in
the user's settings file (``$PIDURABLE_HOME/settings.json``; a project's own
settings may not choose it, or a cloned repository could send the agent's
hands elsewhere), makes the tools run on that host (``pi_durable_tui.env.ssh``).
``resolve_location`` checks the URL (a bad one is one ``LocationError`` line,
exit status 2) and returns a ``Location``:

- ``key``: what sessions are filed under (``sessions_dir``): the local working
  directory, or the normalized URL, so ``pidurable -c --env URL`` finds the
  sessions of that remote directory from any local directory;
- ``show(path)``: a working directory as the footer and prompt name it:
  ``user@host:/path`` for a remote one.

``open_remote_env`` connects; its failures (an unknown host key, a refused
login, a remote directory that does not exist) are ``RemoteUnavailable`` with
one line saying what to do. Without a URL nothing below the app is imported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pi_durable_tui.app.files import SETTINGS_NAME, SettingsError, home, read_settings_file

if TYPE_CHECKING:
    from pi_durable_tui.env.ssh import SshEnv, SshTarget

ENV_KEY = "env"
"""The user setting naming the SSH environment."""


class LocationError(ValueError):
    """``--env`` or the ``env`` setting is not a usable URL; one line saying why."""


class RemoteUnavailable(Exception):
    """The SSH environment could not be opened; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class Location:
    """Where the tools of a session work.

    Attributes:
        key: What sessions are filed under: the local directory or the URL.
        target: The SSH target, or None for this machine.
    """

    key: str
    target: SshTarget | None = None

    @property
    def remote(self) -> bool:
        """Whether the tools run on another host."""
        return self.target is not None

    def show(self, path: str) -> str:
        """``path`` as the user reads it: ``user@host:/path`` when remote."""
        if self.target is None:
            return path
        return f"{self.target.user}@{self.target.host}:{path}"


def env_setting() -> str | None:
    """The ``env`` URL of the user's settings file, if it names one.

    Raises:
        SettingsError: The file is malformed or ``env`` is not a string.
    """
    path = home() / SETTINGS_NAME
    value = read_settings_file(path).get(ENV_KEY)
    if value is None:
        return None
    if not isinstance(value, str):
        raise SettingsError(f"{path}: {ENV_KEY}: must be an ssh:// URL string")
    return value


def resolve_location(cwd: str, env_option: str | None) -> Location:
    """The location ``--env`` (else the user's ``env`` setting) names, or ``cwd``'s.

    Args:
        cwd: The local working directory.
        env_option: ``--env`` as given, or None.

    Raises:
        LocationError: A bad URL (naming where it came from).
        SettingsError: The user's settings file is malformed.
    """
    url, source = env_option, "--env"
    if url is None:
        url, source = env_setting(), f"{home() / SETTINGS_NAME}: {ENV_KEY}"
    if url is None or url == "local":
        return Location(os.path.realpath(cwd))
    # Imported only for a URL: a local start's first paint imports no layer below the app.
    from pi_durable_tui.env.ssh import parse_ssh_url

    try:
        target = parse_ssh_url(url)
    except ValueError as error:
        raise LocationError(f"{source}: {error}") from None
    return Location(target.url(), target)


async def open_remote_env(location: Location, allow_env: tuple[str, ...]) -> SshEnv:
    """Connect the SSH environment of a remote location; its directory must exist.

    Raises:
        RemoteUnavailable: One line saying what failed and what to do.
    """
    from pi_durable_tui.env import FileError
    from pi_durable_tui.env.ssh import SshConnectError, SshEnv

    assert location.target is not None
    try:
        env = await SshEnv.connect(location.target, allow_env=allow_env)
    except SshConnectError as error:
        raise RemoteUnavailable(str(error)) from None
    try:
        kind = (await env.file_info(env.cwd)).kind
        if kind == "symlink":
            kind = (await env.file_info(await env.canonical_path(env.cwd))).kind
    except FileError as error:
        await env.close()
        if error.code == "not_found":
            raise RemoteUnavailable(
                f"the remote working directory {location.show(env.cwd)} does not exist;"
                " create it or fix the path in the ssh:// URL"
            ) from None
        raise RemoteUnavailable(f"{location.show(env.cwd)}: {error}") from None
    if kind != "directory":
        await env.close()
        raise RemoteUnavailable(f"{location.show(env.cwd)} is not a directory")
    return env
