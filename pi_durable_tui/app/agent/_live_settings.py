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

import os
from collections.abc import Callable, Mapping
from typing import Any

from pi_durable_tui.app.agent._config import (
    AppSettings,
    ProjectSettings,
    effective_settings,
    read_project_settings,
)
from pi_durable_tui.app.files import (
    SettingsError,
    TrustRequest,
    remember_trust,
    settings_sources,
    trusted_digest,
)
from pi_durable_tui.harness import Settings


class SettingsFiles:
    """The settings of one working directory, re-read when a file changes.

    Args:
        cwd: The working directory (its ``.pidurable/settings.json`` overrides).
    """

    def __init__(self, cwd: str | os.PathLike[str]) -> None:
        self._cwd = cwd
        self._stamp: tuple[tuple[int, int], ...] | None = None
        self._value: AppSettings | None = None
        self._error_listeners: list[Callable[[SettingsError], None]] = []
        self._trust_listeners: list[Callable[[TrustRequest], None]] = []
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

    def _stamps(self) -> tuple[tuple[int, int], ...]:
        """Each file's modification time and size (a missing file: ``(-1, -1)``)."""
        stamps: list[tuple[int, int]] = []
        for path in settings_sources(self._cwd):
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
            try:
                project = read_project_settings(self._cwd)
                confirmed, request = self._gate(project)
                self._value = effective_settings(self._cwd, project, confirmed)
            except SettingsError as error:
                if self._value is None:
                    raise
                self._failed(error)
            else:
                self.error = None
                self._confirmed = dict(confirmed)
                self._ask(request)
            self._stamp = stamp
        return self._value

    def harness(self) -> Settings:
        """The harness's settings now (the harness calls this at every decision)."""
        return self.current().harness_settings()

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
