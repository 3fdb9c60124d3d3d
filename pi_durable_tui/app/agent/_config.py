"""Settings files: ``~/.pidurable/settings.json`` overridden by ``.pidurable/settings.json``.

The user file sets defaults; the project file (in the working directory) overrides
them key by key (objects merge, other values replace: ``_settings_files`` reads and
merges them). The result is validated with pydantic: an error names the file and
the key (``settings.json: retry.max_retries: Input should be a valid integer``),
and the app reports it instead of starting
with a setting silently ignored. ``SettingsFiles.current()`` re-reads the files
when their modification times or sizes change, so edits apply at the next
decision (R34) without reading the disk at every one.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pi_durable_tui.ai import ThinkingLevel
from pi_durable_tui.ai.providers import ProviderDeclaration
from pi_durable_tui.app.agent._permissions import (
    PermissionChoices,
    PermissionRules,
    permission_settings,
    settings_rules,
)
from pi_durable_tui.app.files import (
    SETTINGS_NAME,
    SettingsError,
    merged_settings,
    read_settings_file,
    settings_sources,
)
from pi_durable_tui.harness import (
    CompactionSettings,
    PermissionMode,
    ProgressSettings,
    RetrySettings,
    RuleSpec,
    Settings,
)


class AppSettings(BaseModel):
    """Everything ``settings.json`` may hold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    """The default model for new sessions: ``provider/model-id[:thinking]``."""
    thinking_level: ThinkingLevel | None = None
    theme: str | None = None
    providers: list[ProviderDeclaration] = Field(default_factory=list)
    """Custom providers for local and self-hosted servers (see the README)."""
    env_allow: list[str] = Field(default_factory=list)
    """Secret-looking environment variables tool processes may still see."""
    allow_outside_cwd: bool = False
    """Let ``write`` and ``edit`` change files outside the working directory."""
    env: str | None = None
    """Where the tools run: ``ssh://user@host[:port]/path`` (user file only; ``_location``)."""
    follow_up_key: str | None = None
    """A key that queues a follow-up, in addition to Alt+Enter."""
    stream: dict[str, Any] = Field(default_factory=dict)
    retry: RetrySettings = Field(default_factory=RetrySettings)
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    progress: ProgressSettings = Field(default_factory=ProgressSettings)
    database: str | None = None
    """The PostgreSQL URL sessions live in (the user's file only: ``_settings_files``)."""
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    permission_mode: PermissionMode | None = None
    """The permission mode (default ``auto-edit``; ``--permission-mode`` wins)."""
    permissions: PermissionRules = Field(default_factory=PermissionRules)
    """``{"allow": [...], "deny": [...]}``: rules such as ``bash(npm test)``."""
    steering_mode: Literal["one-at-a-time", "all"] = "one-at-a-time"
    follow_up_mode: Literal["one-at-a-time", "all"] = "one-at-a-time"

    def harness_settings(self) -> Settings:
        """The harness's run policy part of these settings."""
        return Settings(
            stream=dict(self.stream),
            retry=self.retry,
            compaction=self.compaction,
            progress=self.progress,
            tool_execution=self.tool_execution,
            steering_mode=self.steering_mode,
            follow_up_mode=self.follow_up_mode,
        )


def _validate(data: dict[str, Any], sources: list[Path]) -> AppSettings:
    try:
        return AppSettings.model_validate(data)
    except ValidationError as error:
        item = error.errors()[0]
        key = ".".join(str(part) for part in item["loc"])
        where = _source_of(item["loc"], sources)
        raise SettingsError(f"{where}: {key}: {item['msg']}") from None


def _source_of(loc: tuple[Any, ...], sources: list[Path]) -> str:
    """Name the file that set the offending key (the project file wins)."""
    for path in reversed(sources):
        node: Any = read_settings_file(path)
        for part in loc:
            if (isinstance(node, dict) and part in node) or (
                isinstance(node, list) and isinstance(part, int) and part < len(node)
            ):
                node = node[part]
            else:
                break
        else:
            return str(path)
    return str(sources[-1]) if sources else SETTINGS_NAME


def load_settings(cwd: str | os.PathLike[str]) -> AppSettings:
    """Read, merge and validate the settings files of ``cwd``.

    Raises:
        SettingsError: A file is malformed (the message names the file and key).
    """
    merged = merged_settings(cwd)
    project = settings_sources(cwd)[1]
    if "env" in read_settings_file(project):
        raise SettingsError(
            f"{project}: env: only your own settings ({settings_sources(cwd)[0]}) may choose"
            " where the tools run; remove it here"
        )
    settings = _validate(merged, [p for p in settings_sources(cwd) if p.exists()])
    settings_rules(cwd)  # a malformed rule names its file and key now
    return settings


class SettingsFiles:
    """The settings of one working directory, re-read when a file changes.

    Args:
        cwd: The working directory (its ``.pidurable/settings.json`` overrides).
        permissions: What the command line chose about permissions.
    """

    def __init__(
        self, cwd: str | os.PathLike[str], permissions: PermissionChoices | None = None
    ) -> None:
        self._cwd = cwd
        self.permissions = permissions or PermissionChoices()
        self._stamp: tuple[tuple[int, int], ...] | None = None
        self._value: AppSettings | None = None
        self._rules: list[RuleSpec] = []
        self._harness: tuple[AppSettings, Settings] | None = None
        self.error: SettingsError | None = None
        """The newest problem met while re-reading (the last good value is kept)."""

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
                self._value = load_settings(self._cwd)
                self._rules = settings_rules(self._cwd)
                self.error = None
            except SettingsError as error:
                if self._value is None:
                    raise
                self.error = error
            self._stamp = stamp
        return self._value

    def choose_permissions(self, **changes: Any) -> None:
        """Change the command line's permission choices from now on.

        ``interactive=False`` (print mode) refuses at once a call that would wait;
        ``mode="auto"`` is what a demo's own scripted model runs in.
        """
        self.permissions = replace(self.permissions, **changes)
        self._harness = None

    def rules(self) -> list[RuleSpec]:
        """The settings files' permission rules now, each with its source."""
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
