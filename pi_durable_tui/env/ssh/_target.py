"""Where an SSH environment works: ``ssh://user@host[:port]/path`` (issue 17).

``parse_ssh_url`` turns the URL given to ``--env`` (or the ``"env"`` setting)
into an ``SshTarget`` or raises ``ValueError`` with one line that says what is
wrong and what a good URL looks like. The path is the remote working
directory: absolute, or ``/~`` and ``/~/...`` for the remote home directory
(resolved when the environment connects). Percent-escapes are decoded, so a
directory with a space is ``/srv/my%20app``. No password is ever taken from the
URL: authentication is by key (``~/.ssh`` or the SSH agent).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

DEFAULT_PORT = 22
EXAMPLE = "ssh://user@host[:port]/absolute/path"


@dataclass(frozen=True, slots=True)
class SshTarget:
    """A remote working directory.

    Attributes:
        user: The login name on the remote host.
        host: The host name or address (no brackets around IPv6).
        port: The SSH port.
        path: The working directory: absolute, or ``~``-prefixed for the remote home.
    """

    user: str
    host: str
    port: int = DEFAULT_PORT
    path: str = "~"

    @property
    def authority(self) -> str:
        """``user@host:port``, the identity of the remote file system."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}:{self.port}"

    def url(self) -> str:
        """The ``ssh://`` URL of this target."""
        path = "/" + self.path if self.path.startswith("~") else self.path
        return f"ssh://{self.authority}{path}"


def _shown(url: str) -> str:
    """``url`` as an error may print it: a password in it becomes ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if password is None:
        return url
    user_info, _, host = parts.netloc.rpartition("@")
    netloc = user_info.split(":", 1)[0] + ":***@" + host
    return parts._replace(netloc=netloc).geturl()


def _bad(url: str, reason: str) -> ValueError:
    return ValueError(f"Invalid SSH environment URL {_shown(url)!r}: {reason}; expected {EXAMPLE}")


def parse_ssh_url(url: str) -> SshTarget:
    """Parse ``ssh://user@host[:port]/path``.

    Args:
        url: The URL as the user wrote it.

    Returns:
        The target; ``path`` is normalized (``/~/x`` becomes ``~/x``).

    Raises:
        ValueError: One line naming what is wrong.
    """
    if any(ord(char) < 32 or char == "\x7f" for char in url):
        raise _bad(url, "it contains a control character")
    parts = urlsplit(url)
    if parts.scheme != "ssh":
        raise _bad(url, "it must start with ssh://")
    if parts.query or parts.fragment:
        raise _bad(url, "it may not have a ?query or #fragment")
    if parts.password is not None:
        raise _bad(url, "passwords are not taken from URLs (use a key or the SSH agent)")
    if not parts.username:
        raise _bad(url, "it names no user (user@host)")
    if not parts.hostname:
        raise _bad(url, "it names no host")
    try:
        port = parts.port
    except ValueError:
        raise _bad(url, "the port must be a number from 1 to 65535") from None
    if port == 0:
        raise _bad(url, "the port must be a number from 1 to 65535")
    raw_path = unquote(parts.path)
    if not raw_path:
        raise _bad(url, "it names no working directory (add /path after the host)")
    if "\0" in raw_path:
        raise _bad(url, "the path contains a NUL byte")
    if raw_path == "/~" or raw_path.startswith("/~/"):
        path = "~" + posixpath.normpath(raw_path[2:] or "/").rstrip("/")
        path = "~" if path == "~." else path
    else:
        path = posixpath.normpath(raw_path)
    return SshTarget(
        user=unquote(parts.username),
        host=parts.hostname,
        port=port or DEFAULT_PORT,
        path=path,
    )
