"""Which project settings files the user trusted: by content hash, under ``$PIDURABLE_HOME``.

The model can write a project's ``.pidurable/settings.json`` (it is inside the
workspace), so the keys that widen the agent's powers (``WIDENING_KEYS``) take
effect from that file only once the user has confirmed its exact content in the
app (DESIGN.md section 7; issue 13). A confirmation is remembered in
``$PIDURABLE_HOME/trusted-projects.json`` as the sha256 of the file's bytes,
keyed by the project's real path, the way direnv and Codex remember trusted
directories: any change of the file, one byte or a whitespace, needs a new
confirmation. The user's own settings file is never gated.

``trusted-projects.json``::

    {"version": 1, "projects": {"/home/me/app": {"sha256": "9f86...", "trusted_at": "..."}}}

A trust file that cannot be read or parsed trusts nothing (fail closed), and is
replaced by the next confirmation. It is written atomically (a temporary file in
the same directory, then a rename), readable by the user only.

REMINDER: ``WIDENING_KEYS`` is the one list of what widens powers; a new setting
that lets the agent do more (permission rules, MCP servers, extensions) is added
there and nowhere else.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_durable_tui.app.files._home import home

WIDENING_KEYS: tuple[str, ...] = (
    "allow_outside_cwd",
    "env_allow",
    "permissions.allow",
    "permission_mode",
    "providers",
    "mcpServers",
    "extensions",
)
"""Settings (dotted paths) that widen powers: from a project file, only once confirmed.

``providers`` is here because a declaration names a server and the variable
holding the key sent to it: an unconfirmed one could send the user's API key to
a server of the repository's choosing.
"""
TRUST_NAME = "trusted-projects.json"
"""The trust file's name in ``$PIDURABLE_HOME``."""


@dataclass(frozen=True, slots=True)
class TrustRequest:
    """A project settings file whose widening keys wait for the user's confirmation.

    Attributes:
        project: The project's real path (the trust file's key).
        path: The settings file.
        digest: The sha256 of the bytes the request is about.
        widening: Each widening key the file sets (dotted path) and its value.
        also: The project's other files the digest covers (its ``.mcp.json``).
    """

    project: str
    path: Path
    digest: str
    widening: Mapping[str, Any]
    also: tuple[Path, ...] = ()

    @property
    def where(self) -> str:
        """The files the request is about, as the user reads them."""
        return " and ".join(str(path) for path in (self.path, *self.also))

    def question(self) -> str:
        """``This project's settings allow ...: trust them?`` as the screen asks it."""
        return f"This project's settings ({self.where}) allow {self.summary()}: trust them?"

    def heading(self) -> str:
        """``This project's settings (PATH) allow:``, the line above the keys and values."""
        return f"This project's settings ({self.where}) allow:"

    def summary(self) -> str:
        """The widening keys and their values, ``allow_outside_cwd = true, ...``."""
        return ", ".join(f"{key} = {value}" for key, value in self.shown_values())

    def shown_values(self) -> tuple[tuple[str, str], ...]:
        """Each widening key and its value as JSON, every non-ASCII character escaped.

        The values come from a file the model may have written: escaped, they can
        write no control sequence to the terminal.
        """
        return tuple(
            (key, json.dumps(value, ensure_ascii=True)) for key, value in self.widening.items()
        )


def settings_digest(raw: bytes) -> str:
    """The sha256 of a settings file's bytes (hex), what a confirmation remembers."""
    return hashlib.sha256(raw).hexdigest()


def widening_values(data: Mapping[str, Any]) -> dict[str, Any]:
    """The widening keys ``data`` sets (dotted paths, in ``WIDENING_KEYS`` order) and values."""
    found: dict[str, Any] = {}
    for key in WIDENING_KEYS:
        node: Any = data
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                break
            node = node[part]
        else:
            found[key] = node
    return found


def without_widening(data: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``data`` without its widening keys (what applies without trust)."""
    copy = _copy_objects(data)
    for key in WIDENING_KEYS:
        *parents, last = key.split(".")
        node: Any = copy
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return copy


def with_values(data: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``data`` with each dotted path of ``values`` set."""
    copy = _copy_objects(data)
    for key, value in values.items():
        *parents, last = key.split(".")
        node = copy
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[last] = value
    return copy


def trusted_digest(project: str) -> str | None:
    """The digest of the settings content the user trusted for ``project``, if any."""
    entry = _read_trust().get(project)
    digest = entry.get("sha256") if isinstance(entry, dict) else None
    return digest if isinstance(digest, str) else None


def remember_trust(project: str, digest: str) -> None:
    """Remember that the user trusted the settings content ``digest`` of ``project``.

    Raises:
        OSError: The trust file cannot be written (a read-only home, a full disk).
    """
    projects = _read_trust()
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    projects[project] = {"sha256": digest, "trusted_at": now}
    directory = home()
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"version": 1, "projects": projects}, indent=2, ensure_ascii=False)
    handle, temporary = tempfile.mkstemp(prefix=f".{TRUST_NAME}.", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, directory / TRUST_NAME)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _read_trust() -> dict[str, Any]:
    try:
        data = json.loads((home() / TRUST_NAME).read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    return dict(projects) if isinstance(projects, dict) else {}


def _copy_objects(data: Mapping[str, Any]) -> dict[str, Any]:
    """Copy the nested objects (the dicts) of ``data``; other values are shared."""
    return {
        key: _copy_objects(value) if isinstance(value, dict) else value
        for key, value in data.items()
    }
