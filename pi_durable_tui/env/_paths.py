"""Lexical path resolution shared by every local operation (R119).

``~`` and ``~/...`` mean the home directory, a ``file://`` URL (host empty or
``localhost``) means its percent-decoded path, and anything relative is joined
to the working directory; the result is normalized (``..`` and ``.`` removed)
without touching the file system, so it is the same whether the file exists.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

from pi_durable_tui.env._errors import FileError


def resolve_path(path: str, *, cwd: str, home: str) -> str:
    """Resolve ``path`` to a normalized absolute path.

    Args:
        path: What the caller gave: absolute, relative, ``~``-prefixed or a URL.
        cwd: The absolute directory relative paths resolve against.
        home: The absolute home directory ``~`` stands for.

    Returns:
        The absolute, normalized path.

    Raises:
        FileError: ``invalid`` for a path holding a NUL byte or a ``file://`` URL
            naming another host.
    """
    if "\0" in path:
        raise FileError("invalid", f"Path contains a NUL byte: {path!r}", path)
    if path.startswith("file:"):
        parts = urlsplit(path)
        if parts.netloc not in ("", "localhost"):
            raise FileError("invalid", f"Cannot open a file:// URL on another host: {path}", path)
        path = unquote(parts.path)
    if path == "~":
        path = home
    elif path.startswith("~/"):
        path = home + path[1:]
    return os.path.normpath(os.path.join(cwd, path))


def join_paths(*parts: str) -> str:
    """Join ``parts`` and normalize the result; nothing is resolved against a directory."""
    if not parts:
        return "."
    return os.path.normpath(os.path.join(*parts))
