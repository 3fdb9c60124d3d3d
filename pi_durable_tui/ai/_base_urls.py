"""Base URLs of model servers: whether one is well formed, and whether it is local.

Owns ``checked_base_url`` and ``BaseUrlError`` (``--base-url`` and
``OPENAI_BASE_URL`` must be http(s) URLs with a host, refused with an example
otherwise) and ``is_local_url`` (a server the user runs, whose tokens are not
charged a vendor's catalog prices). Implements DESIGN.md section 5 (local
OpenAI-compatible servers).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


class BaseUrlError(ValueError):
    """A base URL (``--base-url``, ``OPENAI_BASE_URL``) that is not an http(s) URL."""


def checked_base_url(base_url: str, option: str = "--base-url") -> str:
    """Return a base URL without its trailing ``/``, or fail saying how to write it.

    Args:
        base_url: The URL as the user gave it.
        option: Where it came from, for the message (``--base-url``,
            ``OPENAI_BASE_URL``).

    Returns:
        The URL without trailing slashes.

    Raises:
        BaseUrlError: When it is not an http(s) URL with a host.
    """
    if not base_url.startswith(("http://", "https://")) or not urlsplit(base_url).hostname:
        raise BaseUrlError(
            f"{option} {base_url!r} is not an http(s) URL; write it like http://localhost:8080/v1"
        )
    return base_url.rstrip("/")


def is_local_url(url: str) -> bool:
    """Tell whether a base URL names a server on this machine or its local network.

    Local means a loopback, private or link-local address, ``localhost`` (and
    ``*.localhost``), a ``*.local`` or ``*.internal`` name, or a single-label
    host name (``http://gpu-box:8080``): servers the user runs, not a vendor.

    Args:
        url: An http(s) URL.

    Returns:
        True for a local server.
    """
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return (
            host == "localhost"
            or host.endswith((".localhost", ".local", ".internal"))
            or "." not in host
        )
    return address.is_loopback or address.is_private or address.is_link_local
