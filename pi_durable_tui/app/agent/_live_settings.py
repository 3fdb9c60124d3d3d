"""``SettingsFiles``: the settings of an open session, re-read when a file changes (R34).

``current()`` re-reads the files when their modification times or sizes change,
so edits apply at the next decision without reading the disk at every one. A
malformed edit keeps the last good settings and is reported once
(``on_error``; issue 12).

The trust gate (DESIGN.md section 7, issue 13): the project file's widening keys
(``WIDENING_KEYS``) apply only as far as the user confirmed that file's content.
At each re-read:

- content the user trusted before (its sha256 in ``trusted-projects.json``) or
  in this session: its widening values apply;
- content without widening keys: nothing to confirm (removing a key narrows);
- other content (a change by any means: the model's ``write`` or ``bash``, the
  user's editor, a ``git checkout``): its other keys apply at once, its
  widening keys wait. Until the user confirms it, the widening values of the
  last confirmed content apply (none if there was none), and a ``TrustRequest``
  is pending; listeners (``on_trust_request``) hear of each new one once. The
  screen asks the user; print mode warns once on stderr and never trusts.

``trust(request)`` applies exactly the values the request showed (the file may
have changed again since: that change is a new request), and remembers the
digest; ``decline(request)`` keeps the old values and asks no more this session.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pi_durable_tui.app.agent._config import (
    EXTENSION_FILES,
    AppSettings,
    ProjectSettings,
    effective_settings,
    read_project_settings,
)
from pi_durable_tui.app.agent._permissions import (
    PermissionChoices,
    permission_settings,
    settings_rules,
)
from pi_durable_tui.app.files import (
    SettingsError,
    TrustRequest,
    project_mcp_json,
    read_settings_file,
    remember_trust,
    settings_sources,
    trusted_digest,
)
from pi_durable_tui.harness import RuleSpec, Settings


class SettingsFiles:
    """The settings of one working directory, re-read when a file changes.

    Args:
        cwd: The working directory (its ``.pidurable/settings.json`` overrides).
        permissions: What the command line chose about permissions (issue 13).
    """

    def __init__(
        self, cwd: str | os.PathLike[str], permissions: PermissionChoices | None = None
    ) -> None:
        self._cwd = cwd
        self.permissions = permissions or PermissionChoices()
        self._rules: list[RuleSpec] = []
        self._harness: tuple[AppSettings, Settings] | None = None
        self._stamp: tuple[tuple[int, int], ...] | None = None
        self._value: AppSettings | None = None
        self._error_listeners: list[Callable[[SettingsError], None]] = []
        self._trust_listeners: list[Callable[[TrustRequest], None]] = []
        self._change_listeners: list[Callable[[], None]] = []
        self._confirmed: dict[str, Any] = {}
        """The project's widening values in force: those of the last confirmed content."""
        self._trusted: set[str] = set()
        self._declined: set[str] = set()
        self._pending: TrustRequest | None = None
        self.error: SettingsError | None = None
        """The newest problem met while re-reading (the last good value is kept)."""

    def on_error(self, listener: Callable[[SettingsError], None]) -> Callable[[], None]:
        """Call ``listener`` once for each new problem met while re-reading.

        The screen shows it as a notice, print mode as a line on stderr; the
        last good settings stay in force meanwhile. Returns the unsubscribe.
        """
        self._error_listeners.append(listener)
        return lambda: self._error_listeners.remove(listener)

    def on_trust_request(self, listener: Callable[[TrustRequest], None]) -> Callable[[], None]:
        """Call ``listener`` once for each new project content that waits for confirmation.

        Returns the unsubscribe.
        """
        self._trust_listeners.append(listener)
        return lambda: self._trust_listeners.remove(listener)

    def on_change(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` after each re-read that took a new value in; returns unsubscribe.

        A session's host tells its clients the permission mode in force this way
        (issue 15): an edited ``permission_mode`` reaches every attached footer.
        """
        self._change_listeners.append(listener)
        return lambda: self._change_listeners.remove(listener)

    def trusted_extension_files(self) -> bool:
        """Whether the project's extension files, as they are now, are trusted (issue 16)."""
        self.current()
        return EXTENSION_FILES in self._confirmed

    @property
    def waiting(self) -> TrustRequest | None:
        """The request of the last read, without reading again (``pending`` re-reads)."""
        return self._pending

    def pending(self) -> TrustRequest | None:
        """The project content whose widening keys wait for the user (re-reading first)."""
        self.current()
        return self._pending

    def trust(self, request: TrustRequest) -> None:
        """The user trusted ``request``: its values apply, its digest is remembered.

        Raises:
            OSError: The trust could not be remembered (it still applies in this session).
        """
        self._trusted.add(request.digest)
        self._confirmed = dict(request.widening)
        if self._pending is not None and self._pending.digest == request.digest:
            self._pending = None
        self._stamp = None  # re-read: the file may have changed since the request
        try:
            remember_trust(request.project, request.digest)
        finally:
            self.current()

    def decline(self, request: TrustRequest) -> None:
        """The user did not trust ``request``: the old values stay; it is not asked again."""
        self._declined.add(request.digest)
        if self._pending is not None and self._pending.digest == request.digest:
            self._pending = None

    def add_project_rule(self, rule: str) -> None:
        """Add ``rule`` to the project's ``permissions.allow`` (the user's ``p``, issue 13).

        pidurable writes the file, never the model. The new content is trusted
        only when what it replaced was (trusted, or without widening keys): a
        rule the user allowed must not launder keys the model wrote beside it,
        which then still wait for the user's confirmation.

        Raises:
            SettingsError: The project's file is malformed (it is left as it is).
            OSError: The file cannot be written.
        """
        before = read_project_settings(self._cwd)
        trusted_before = (
            not before.widening
            or before.digest in self._trusted
            or (before.digest is not None and trusted_digest(before.project) == before.digest)
        )
        data = dict(before.data)
        permissions = dict(data.get("permissions") or {})
        allow = list(permissions.get("allow") or [])
        if rule in allow:
            return
        permissions["allow"] = [*allow, rule]
        data["permissions"] = permissions
        raw = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()
        before.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = before.path.with_name(f".{before.path.name}.{os.getpid()}.tmp")
        try:
            temporary.write_bytes(raw)
            os.replace(temporary, before.path)
        finally:
            temporary.unlink(missing_ok=True)
        after = read_project_settings(self._cwd, written=raw).digest
        if trusted_before and after is not None:
            digest = after
            self._trusted.add(digest)
            with contextlib.suppress(OSError):  # trusted for this session at least
                remember_trust(before.project, digest)
        self._stamp = None
        self.current()

    def _stamps(self) -> tuple[tuple[int, int], ...]:
        """Each file's modification time and size (a missing file: ``(-1, -1)``)."""
        stamps: list[tuple[int, int]] = []
        for path in (*settings_sources(self._cwd), project_mcp_json(self._cwd)):
            try:
                stat = path.stat()
            except OSError:
                stamps.append((-1, -1))
            else:
                stamps.append((stat.st_mtime_ns, stat.st_size))
        return tuple(stamps)

    def current(self) -> AppSettings:
        """The settings now; a malformed edit keeps the last good value (see ``error``).

        Raises:
            SettingsError: At the first read, when a file is malformed.
        """
        stamp = self._stamps()
        if self._value is None or stamp != self._stamp:
            changed = False
            try:
                project = read_project_settings(self._cwd)
                confirmed, request = self._gate(project)
                value = effective_settings(self._cwd, project, confirmed)
                self._rules = settings_rules(self._rule_sections(project, confirmed))
                self._value = value
            except SettingsError as error:
                if self._value is None:
                    raise
                self._failed(error)
            else:
                self.error = None
                self._confirmed = dict(confirmed)
                self._ask(request)
                changed = True
            self._stamp = stamp
            if changed:
                for listener in list(self._change_listeners):
                    listener()
        return self._value

    def _rule_sections(
        self, project: ProjectSettings, confirmed: Mapping[str, Any]
    ) -> list[tuple[Path, str, Mapping[str, Any]]]:
        """The permission rules in force by file: the project's ``allow`` only if trusted."""
        user = settings_sources(self._cwd)[0]
        mine = read_settings_file(user).get("permissions")
        theirs = project.data.get("permissions")
        return [
            (user, "user settings", mine if isinstance(mine, dict) else {}),
            (
                project.path,
                "project settings",
                {
                    "deny": theirs.get("deny") if isinstance(theirs, dict) else None,
                    "allow": confirmed.get("permissions.allow"),
                },
            ),
        ]

    def choose_permissions(self, **changes: Any) -> None:
        """Change the command line's permission choices from now on.

        ``interactive=False`` (print mode) refuses at once a call that would wait;
        ``mode="auto"`` is what a demo's own scripted model runs in.
        """
        self.permissions = replace(self.permissions, **changes)
        self._harness = None

    def rules(self) -> list[RuleSpec]:
        """The settings files' permission rules in force now, each with its source."""
        self.current()
        return list(self._rules)

    def harness(self) -> Settings:
        """The harness's settings now (the harness calls this at every decision)."""
        current = self.current()
        if self._harness is None or self._harness[0] is not current:
            permissions = permission_settings(
                self.permissions, current.permission_mode, self._rules
            )
            settings = current.harness_settings().model_copy(update={"permissions": permissions})
            self._harness = (current, settings)
        return self._harness[1]

    def _gate(self, project: ProjectSettings) -> tuple[Mapping[str, Any], TrustRequest | None]:
        """The project's widening values in force, and the request its content needs."""
        if not project.widening or project.digest is None:
            return {}, None
        digest = project.digest
        if digest in self._trusted or (
            digest not in self._declined and trusted_digest(project.project) == digest
        ):
            self._trusted.add(digest)
            return project.widening, None
        return self._confirmed, project.request()

    def _ask(self, request: TrustRequest | None) -> None:
        fresh = request is not None and (
            self._pending is None or self._pending.digest != request.digest
        )
        self._pending = None if request is None or request.digest in self._declined else request
        if fresh and self._pending is not None:
            for listener in list(self._trust_listeners):
                listener(self._pending)

    def _failed(self, error: SettingsError) -> None:
        fresh = self.error is None or str(self.error) != str(error)
        self.error = error
        if fresh:
            for listener in list(self._error_listeners):
                listener(error)
