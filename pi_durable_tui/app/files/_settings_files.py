"""Where the settings files are and what they say, before any validation.

``~/.pidurable/settings.json`` (``$PIDURABLE_HOME``) sets defaults and
``<cwd>/.pidurable/settings.json`` overrides them key by key (objects merge,
other values replace). This module reads and merges the JSON only, with the
standard library: ``_config`` validates the result, and ``settings_theme`` lets
``pidurable`` pick its theme before the first paint, without importing pydantic or
the harness.

Reading refuses, with one line naming the file and what to do, what ``json``
would otherwise turn into a traceback: bytes that are not UTF-8 (the byte
offset), a file larger than ``MAX_BYTES`` (read no further), JSON nested
deeper than ``MAX_DEPTH`` (a 100,000-deep array would hit
Python's recursion limit), and NaN/Infinity, which are not JSON (issue 12).

``"database"`` (a PostgreSQL URL that sessions live in, ``_sessions``) is read
from the user's file only (``user_database_url``): a project's file naming one
is refused, since a repository could otherwise send every session, secrets
and all, to a server of its author's choosing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pi_durable_tui.app.files._home import home

PROJECT_DIR = ".pidurable"
"""The project's directory of pidurable files, in the working directory."""
SETTINGS_NAME = "settings.json"
"""The name of both settings files."""
EXTENSIONS_DIR = "extensions"
"""Extension files' directory, in ``$PIDURABLE_HOME`` and a project's ``.pidurable`` (issue 16)."""
MCP_JSON_NAME = ".mcp.json"
"""A project's MCP servers in Claude Code's shape, ``{"mcpServers": {...}}`` (issue 16)."""
DATABASE_KEY = "database"
"""The user-only setting naming the PostgreSQL database of the sessions."""
MAX_BYTES = 1024 * 1024
"""The largest settings file read (a real one is a few hundred bytes)."""
MAX_DEPTH = 32
"""How deeply a settings file's JSON may nest (the deepest real setting nests 5)."""


class SettingsError(ValueError):
    """A settings file is malformed; the message names the file and the key."""


def settings_sources(cwd: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The user file, then the project file of ``cwd`` (which overrides it)."""
    return home() / SETTINGS_NAME, Path(cwd) / PROJECT_DIR / SETTINGS_NAME


def project_mcp_json(cwd: str | os.PathLike[str]) -> Path:
    """The project's ``.mcp.json`` of ``cwd`` (gated by trust like the project's settings)."""
    return Path(cwd) / MCP_JSON_NAME


def read_settings_file(path: Path) -> dict[str, Any]:
    """The object a settings file holds; ``{}`` when it does not exist.

    Raises:
        SettingsError: It cannot be read, is not UTF-8 JSON, nests deeper than
            ``MAX_DEPTH``, or is not an object.
    """
    raw = read_settings_bytes(path)
    return {} if raw is None else parse_settings(raw, path)


def read_settings_bytes(path: Path) -> bytes | None:
    """The bytes of a settings file; ``None`` when it does not exist.

    Raises:
        SettingsError: It cannot be read, or is larger than ``MAX_BYTES``.
    """
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):  # no such file (a parent is a file)
        return None
    except OSError as error:
        raise SettingsError(f"{path}: cannot be read: {error.strerror}") from None
    if len(raw) > MAX_BYTES:
        raise SettingsError(
            f"{path}: is larger than {MAX_BYTES // 1024} KiB; settings are a few keys: "
            "fix or remove it"
        )
    return raw


def parse_settings(raw: bytes, path: Path) -> dict[str, Any]:
    """The object the bytes of the settings file ``path`` hold.

    Raises:
        SettingsError: Not UTF-8 JSON, nested deeper than ``MAX_DEPTH``, or not an object.
    """
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SettingsError(
            f"{path}: is not UTF-8 text (byte {error.start} is not valid): "
            "a settings file is JSON; fix or remove it"
        ) from None
    try:
        data = json.loads(text, parse_constant=_not_json)
    except json.JSONDecodeError as error:
        raise SettingsError(
            f"{path}: is not valid JSON: line {error.lineno} column {error.colno}: {error.msg}"
        ) from None
    except _NotJson as error:
        raise SettingsError(f"{path}: {error} is not a JSON value") from None
    except RecursionError:
        deep = True  # deeper than Python's recursion limit
    else:
        deep = _too_deep(data)
    if deep:
        raise SettingsError(
            f"{path}: the JSON nests more than {MAX_DEPTH} levels deep; "
            "settings are a few nested objects: fix or remove the file"
        )
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: the top level must be an object")
    return data


class _NotJson(ValueError):
    """NaN or Infinity: ``json`` accepts them, JSON does not have them."""


def _not_json(constant: str) -> Any:
    raise _NotJson(constant)


def _too_deep(data: Any) -> bool:
    """Whether ``data`` nests more than ``MAX_DEPTH`` levels (without recursing)."""
    level: list[Any] = [data] if isinstance(data, dict | list) else []
    if not level:
        return False
    for _ in range(MAX_DEPTH):
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True


def merged_settings(cwd: str | os.PathLike[str]) -> dict[str, Any]:
    """Both files of ``cwd`` merged, unvalidated.

    Raises:
        SettingsError: A file cannot be read or is not a JSON object.
    """
    user, project = settings_sources(cwd)
    merged = read_settings_file(user)
    overrides = read_settings_file(project)
    if DATABASE_KEY in overrides:
        raise SettingsError(
            f"{project}: {DATABASE_KEY}: only your own settings ({user}) or "
            "PIDURABLE_DATABASE_URL may say where sessions are stored; remove it from the "
            "project's file"
        )
    return merge_settings(merged, overrides)


def user_database_url() -> str | None:
    """The ``"database"`` of the user's settings file, or ``None``.

    Raises:
        SettingsError: The file is malformed, or the value is not a string.
    """
    path = home() / SETTINGS_NAME
    value = read_settings_file(path).get(DATABASE_KEY)
    if value is not None and not isinstance(value, str):
        raise SettingsError(f"{path}: {DATABASE_KEY}: must be a postgresql:// URL string")
    return value or None


def settings_theme(cwd: str | os.PathLike[str]) -> str | None:
    """The theme the settings files name, or ``None`` (for the first paint).

    A malformed file gives ``None`` here: the session's opening validates the
    files and reports the problem.
    """
    try:
        theme = merged_settings(cwd).get("theme")
    except SettingsError:
        return None
    return theme if isinstance(theme, str) else None


def merge_settings(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``: objects merge key by key, other values replace."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_settings(merged[key], value)
        else:
            merged[key] = value
    return merged
