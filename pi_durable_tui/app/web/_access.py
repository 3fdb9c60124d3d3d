"""Who may use the web page: the access token, the Host and the Origin (issue 15).

Three checks, each against a different attack:

- the token (``secrets.token_urlsafe``, compared with ``hmac.compare_digest``):
  only whoever was shown the URL gets in. The page's own request carries it as
  ``?token=``; the answer sets it as a cookie (``HttpOnly``, ``SameSite=Strict``)
  named after the port, because cookies are not isolated by port and two
  served sessions on one machine must not overwrite each other's. Assets and
  the WebSocket then carry the cookie; a client that is no browser may put
  ``?token=`` on the WebSocket URL. Anything else is 401.
- the Host header, when listening on loopback: ``127.0.0.1``, ``localhost`` or
  ``[::1]`` with our port, else 403. A page of another site whose name was
  re-pointed at 127.0.0.1 (DNS rebinding) sends its own name.
- the Origin of a WebSocket upgrade (browsers always send it): it must be this
  page's own origin, else 403. A WebSocket is not bound by the same-origin
  policy, so without this any site the user visits could drive the session
  with the user's cookie (cross-site WebSocket hijacking).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping

from pi_durable_tui.app.web._address import WebAddress

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def new_token() -> str:
    """A fresh access token (32 random bytes, URL-safe)."""
    return secrets.token_urlsafe(32)


class Access:
    """The checks of one served page.

    Args:
        token: The access token.
        address: Where it listens (its port the one actually bound).
    """

    def __init__(self, token: str, address: WebAddress) -> None:
        self.token = token
        self.address = address
        self.cookie = f"pidurable_{address.port}"

    def token_ok(self, query: Mapping[str, str], cookies: Mapping[str, str]) -> bool:
        """Whether the request carries the token (query first, then the cookie)."""
        given = query.get("token") or cookies.get(self.cookie) or ""
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())

    def host_ok(self, host: str | None) -> bool:
        """Whether the Host header names this server (checked on loopback only)."""
        if not self.address.loopback:
            return True
        return host in {f"{name}:{self.address.port}" for name in LOOPBACK_HOSTS}

    def origin_ok(self, origin: str | None, host: str | None) -> bool:
        """Whether a WebSocket upgrade comes from this page (no Origin: not a browser)."""
        return origin is None or (host is not None and origin == f"http://{host}")
