"""Database URLs as messages and logs show them: never with their password.

A ``postgresql://user:secret@host/db`` URL carries its password in the user
part, and libpq also takes one in the query (``?password=secret``). ``redact``
replaces both with ``***`` and keeps everything else, so a message still says
which server and database it means. Every message this package makes names the
database through it; the product does the same for everything it prints.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

HIDDEN = "***"
_SCHEMES = ("postgres", "postgresql")
_QUERY_SECRET = re.compile(r"(?i)(password=)[^&]*")


def redact(url: str) -> str:
    """Return ``url`` with any password replaced by ``***``.

    A string that does not parse as a URL is reduced to its scheme (or to
    ``***``), since nothing in it can be shown safely.
    """
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a malformed port
    except ValueError:
        return HIDDEN
    if parts.scheme not in _SCHEMES:
        return HIDDEN
    netloc = parts.netloc
    if "@" in netloc:
        user_part, _, host_part = netloc.rpartition("@")
        user, colon, _password = user_part.partition(":")
        netloc = f"{user}:{HIDDEN}@{host_part}" if colon else f"{user}@{host_part}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(key.lower() == "password" for key, _ in pairs):
            query = urlencode(
                [(k, HIDDEN if k.lower() == "password" else v) for k, v in pairs], safe="*"
            )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def is_database_url(text: str) -> bool:
    """Whether ``text`` is a URL this backend connects to (``postgres://`` or ``postgresql://``)."""
    return urlsplit(text).scheme in _SCHEMES if "://" in text else False


def scrub(text: str, url: str) -> str:
    """Return ``text`` with ``url`` and its password, wherever they appear, hidden.

    For an error a driver raised, whose message may quote the URL or its parts.
    """
    shown = text.replace(url, redact(url))
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    for secret in {password, unquote(password or "")} - {None, ""}:
        assert secret is not None
        shown = shown.replace(secret, HIDDEN)
    return _QUERY_SECRET.sub(rf"\g<1>{HIDDEN}", shown)
