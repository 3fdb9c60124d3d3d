"""Settings files: ``~/.pidurable/settings.json`` overridden by ``.pidurable/settings.json``.

The user file sets defaults; the project file (in the working directory) overrides
them key by key (objects merge, other values replace: ``_settings_files`` reads and
merges them). The result is validated with pydantic: an error names the file and
the key and what was expected (``settings.json: retry.max_retries: expected a whole
number, got string "3"``: strict, nothing is coerced; issue 12),
and the app reports it instead of starting
with a setting silently ignored. ``SettingsFiles.current()`` re-reads the files
when their modification times or sizes change, so edits apply at the next
decision (R34) without reading the disk at every one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pi_durable_tui.ai import ThinkingLevel
from pi_durable_tui.ai.providers import ProviderDeclaration
from pi_durable_tui.app.files import (
    SETTINGS_NAME,
    SettingsError,
    merged_settings,
    read_settings_file,
    settings_sources,
)
from pi_durable_tui.harness import CompactionSettings, ProgressSettings, RetrySettings, Settings
from pi_durable_tui.storage.json_ops import describe_json, printable


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
    # REMINDER: strict, so that "false" is not a boolean and "3" not a number
    # (issue 12); JSON has the types, a settings file must use them.
    try:
        return AppSettings.model_validate(data, strict=True)
    except ValidationError as error:
        item = error.errors()[0]
        where = _source_of(item["loc"], sources)
        raise SettingsError(f"{where}: {json_path(item['loc'])}: {_problem(item)}") from None


_EXPECTED = {
    "bool_type": "true or false",
    "int_type": "a whole number",
    "float_type": "a number",
    "string_type": "a string",
    "list_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}
"""What each pydantic type error expected, in JSON's words."""


def _problem(item: Any) -> str:
    kind = item["type"]
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {describe_json(item['input'])}"
    if kind == "extra_forbidden":
        return "not a setting (check its spelling, and the README's list of settings)"
    if kind == "missing":
        return "required, and missing"
    return f"{item['msg']}, got {describe_json(item['input'])}"


def json_path(loc: tuple[Any, ...]) -> str:
    """``("providers", 0, "api")`` -> ``providers[0].api``, control characters escaped."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            name = json.dumps(str(part), ensure_ascii=False)[1:-1]
            path += f".{printable(name)}" if path else printable(name)
    return path or "top level"


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
    return _validate(merged, [p for p in settings_sources(cwd) if p.exists()])


class SettingsFiles:
    """The settings of one working directory, re-read when a file changes.

    Args:
        cwd: The working directory (its ``.pidurable/settings.json`` overrides).
    """

    def __init__(self, cwd: str | os.PathLike[str]) -> None:
        self._cwd = cwd
        self._stamp: tuple[tuple[int, int], ...] | None = None
        self._value: AppSettings | None = None
        self._listeners: list[Callable[[SettingsError], None]] = []
        self.error: SettingsError | None = None
        """The newest problem met while re-reading (the last good value is kept)."""

    def on_error(self, listener: Callable[[SettingsError], None]) -> Callable[[], None]:
        """Call ``listener`` once for each new problem met while re-reading.

        The screen shows it as a notice, print mode as a line on stderr; the
        last good settings stay in force meanwhile. Returns the unsubscribe.
        """
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

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
                self.error = None
            except SettingsError as error:
                if self._value is None:
                    raise
                fresh = self.error is None or str(self.error) != str(error)
                self.error = error
                if fresh:
                    for listener in list(self._listeners):
                        listener(error)
            self._stamp = stamp
        return self._value

    def harness(self) -> Settings:
        """The harness's settings now (the harness calls this at every decision)."""
        return self.current().harness_settings()
