"""Where the web page listens: ``--web HOST:PORT`` and the loopback rule (issue 15).

The page controls a live session (it submits prompts and answers approvals),
so it listens on loopback unless the user says otherwise twice: an explicit
non-loopback host AND ``--allow-remote``. ``0.0.0.0`` alone is a typo away
from exposing the session to a network, so it is refused with one line saying
what to add.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

LOOPBACK_NAMES = ("localhost",)


@dataclass(frozen=True, slots=True)
class WebAddress:
    """A host and port to listen on (port 0: the system picks a free one)."""

    host: str
    port: int

    @property
    def loopback(self) -> bool:
        """Whether only this machine can reach it."""
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    """``127.0.0.0/8``, ``::1`` or ``localhost``."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_web_address(text: str, *, allow_remote: bool = False) -> WebAddress:
    """Parse ``HOST:PORT`` (``[::1]:PORT`` for IPv6).

    Raises:
        ValueError: One line saying what was wrong and what to do.
    """
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"--web {text}: give HOST:PORT, e.g. --web 127.0.0.1:8080 (PORT 0 picks)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        raise ValueError(f"--web {text}: give the host, e.g. --web 127.0.0.1:{port_text}")
    address = WebAddress(host, int(port_text))
    if not address.loopback and not allow_remote:
        raise ValueError(
            f"--web {text}: {host} is not a loopback address and the page controls the "
            "session; listen on 127.0.0.1, or add --allow-remote to mean it"
        )
    return address
