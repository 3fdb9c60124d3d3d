"""Settings files: ``~/.pidurable/settings.json`` overridden by ``.pidurable/settings.json``.

The user file sets defaults; the project file (in the working directory) overrides
them key by key (objects merge, other values replace: ``_settings_files`` reads and
merges them). The result is validated with pydantic: an error names the file and
the key and what was expected (``settings.json: retry.max_retries: expected a whole
number, got string "3"``: strict, nothing is coerced; issue 12),
and the app reports it instead of starting with a setting silently ignored.

Keys that widen powers (``WIDENING_KEYS``) apply from the user's file as they
are, and from the project's file only as far as the user confirmed that file's
content (``effective_settings``; ``_live_settings`` asks and remembers;
DESIGN.md section 7, issue 13).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pi_durable_tui.ai import ThinkingLevel
from pi_durable_tui.ai.providers import ProviderDeclaration
from pi_durable_tui.app.agent._permissions import PermissionRules
from pi_durable_tui.app.files import (
    DATABASE_KEY,
    EXTENSIONS_DIR,
    MCP_JSON_NAME,
    SETTINGS_NAME,
    SettingsError,
    TrustRequest,
    merge_settings,
    parse_settings,
    project_mcp_json,
    read_settings_bytes,
    read_settings_file,
    settings_digest,
    settings_sources,
    trusted_digest,
    widening_values,
    with_values,
    without_widening,
)
from pi_durable_tui.harness import (
    CompactionSettings,
    PermissionMode,
    ProgressSettings,
    RetrySettings,
    Settings,
    parse_mcp_servers,
)
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
    permission_mode: PermissionMode | None = None
    """The permission mode (default ``auto-edit``; ``--permission-mode`` wins)."""
    permissions: PermissionRules = Field(default_factory=PermissionRules)
    """``{"allow": [...], "deny": [...]}``: rules such as ``bash(npm test)`` (issue 13)."""
    steering_mode: Literal["one-at-a-time", "all"] = "one-at-a-time"
    follow_up_mode: Literal["one-at-a-time", "all"] = "one-at-a-time"
    mcpServers: dict[str, Any] = Field(default_factory=dict)
    """MCP servers (issue 16): ``{"name": {"command", "args", "env"}}`` or ``{"url", ...}``."""
    mcp_start: Literal["lazy", "session"] = "lazy"
    """When MCP servers start: at the first call of one of their tools, or with the session."""
    tool_search_share: float = Field(default=0.1, ge=0, le=1)
    """Past this share of the context window, MCP tool schemas give way to ``tool_search``."""

    @field_validator("mcpServers")
    @classmethod
    def _servers_are_declared_well(cls, value: dict[str, Any]) -> dict[str, Any]:
        parse_mcp_servers(value)  # REMINDER: raises the one-line problem at load, not at first use
        return value

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
            tool_search_share=self.tool_search_share,
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


@dataclass(frozen=True, slots=True)
class ProjectSettings:
    """What a project's settings file holds, and what of it widens powers.

    Attributes:
        project: The project's real path (the trust file's key).
        path: The file.
        data: The object it holds (``{}`` when there is no file).
        digest: The sha256 of its bytes (``None`` when there is no file).
        widening: The widening keys it sets (``WIDENING_KEYS``) and their values.
    """

    project: str
    path: Path
    data: dict[str, Any]
    digest: str | None
    widening: dict[str, Any]
    mcp_json: Path | None = None
    """The project's ``.mcp.json`` when it exists (the digest covers it too; issue 16)."""
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    """The servers its ``.mcp.json`` declares."""
    extension_files: tuple[Path, ...] = ()
    """Its ``.pidurable/extensions/*.py`` (the digest covers them too; issue 16)."""

    @property
    def merged(self) -> dict[str, Any]:
        """The settings file's object with the ``.mcp.json`` servers under ``mcpServers``.

        A server the settings file declares wins over one of the same name there.
        """
        if not self.mcp_servers:
            return self.data
        own = self.data.get("mcpServers")
        return {
            **self.data,
            "mcpServers": {**self.mcp_servers, **(own if isinstance(own, dict) else {})},
        }

    def request(self) -> TrustRequest:
        """The confirmation its widening keys need."""
        assert self.digest is not None
        also = (*((self.mcp_json,) if self.mcp_json is not None else ()), *self.extension_files)
        return TrustRequest(self.project, self.path, self.digest, self.widening, also)


def read_project_settings(
    cwd: str | os.PathLike[str], *, written: bytes | None = None
) -> ProjectSettings:
    """Read the project's settings file of ``cwd`` (one read: the digest is of what is used).

    Args:
        cwd: The project's directory.
        written: The settings file's bytes pidurable just wrote (used instead of
            reading the file again).

    Raises:
        SettingsError: The file is malformed, or sets a key only the user's file may set.
    """
    user, path = settings_sources(cwd)
    project = os.path.realpath(cwd)
    # REMINDER: ``written`` is what pidurable itself just wrote: its digest must be
    # of those bytes, never of a re-read the model may have raced (TOCTOU).
    raw = written if written is not None else read_settings_bytes(path)
    mcp_path = project_mcp_json(cwd)
    mcp_raw = read_settings_bytes(mcp_path)
    code = _extension_files(path.parent / EXTENSIONS_DIR)
    if raw is None and mcp_raw is None and not code:
        return ProjectSettings(project, path, {}, None, {})
    data = {} if raw is None else parse_settings(raw, path)
    for key, what in _USER_ONLY.items():
        if key in data:
            raise SettingsError(
                f"{path}: {key}: only your own settings ({user}) may {what}; remove it here"
            )
    if mcp_raw is None and not code:
        return ProjectSettings(
            project, path, data, settings_digest(raw or b""), widening_values(data)
        )
    # REMINDER: one digest over every project file that widens powers, so trusting
    # one content never trusts a later change of another; with the settings file
    # alone it is that file's own digest, so earlier confirmations stay valid.
    extra = [(MCP_JSON_NAME, mcp_raw)] if mcp_raw is not None else []
    extra += [(f"{EXTENSIONS_DIR}/{p.name}", body) for p, body in code]
    digest = settings_digest(
        (raw or b"") + b"".join(b"\0" + n.encode() + b"\0" + body for n, body in extra)
    )
    servers = (
        {} if mcp_raw is None else _mcp_json_servers(parse_settings(mcp_raw, mcp_path), mcp_path)
    )
    read = ProjectSettings(
        project,
        path,
        data,
        digest,
        {},
        mcp_path if mcp_raw is not None else None,
        servers,
        tuple(p for p, _ in code),
    )
    widening = widening_values(read.merged)
    if code:
        widening[EXTENSION_FILES] = [p.name for p, _ in code]
    return replace(read, widening=widening)


EXTENSION_FILES = "extension files"
"""The widening entry of a project's ``.pidurable/extensions/*.py`` (not a setting)."""


def _extension_files(directory: Path) -> list[tuple[Path, bytes]]:
    """The project's extension files and their bytes (what the digest covers)."""
    try:
        paths = sorted(p for p in directory.glob("*.py") if p.is_file())
        return [(p, p.read_bytes()) for p in paths]
    except OSError as error:
        raise SettingsError(f"{directory}: cannot be read: {error.strerror}") from None


def _mcp_json_servers(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The servers of a ``.mcp.json`` (Claude Code's shape), checked as settings are."""
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        raise SettingsError(f'{path}: expected {{"mcpServers": {{"name": {{...}}}}}}')
    try:
        parse_mcp_servers(servers)
    except ValueError as error:
        raise SettingsError(f"{path}: {error}") from None
    return servers


_USER_ONLY = {
    "env": "choose where the tools run",
    DATABASE_KEY: "say where sessions are stored (or PIDURABLE_DATABASE_URL)",
}
"""Keys a project's file may not set at all (``_location``, ``_sessions``)."""


def effective_settings(
    cwd: str | os.PathLike[str], project: ProjectSettings, confirmed: Mapping[str, Any]
) -> AppSettings:
    """The settings in force, from the user's file and the project's.

    The project's file overrides the user's without its widening keys; then the
    project's widening values the user ``confirmed`` apply.

    The whole project file is validated too, so a malformed widening key is
    reported even while it waits for a confirmation.

    Raises:
        SettingsError: A file is malformed (the message names the file and key).
    """
    user_path = settings_sources(cwd)[0]
    user = read_settings_file(user_path)
    sources = [p for p in (user_path, project.path) if p.exists()]
    _validate(merge_settings(user, project.merged), sources)
    settings = {key: value for key, value in confirmed.items() if key != EXTENSION_FILES}
    overrides = with_values(without_widening(project.merged), settings)
    return _validate(merge_settings(user, overrides), sources)


def load_settings(cwd: str | os.PathLike[str]) -> AppSettings:
    """Read, merge and validate the settings files of ``cwd``, as a new session would.

    The project file's widening keys apply only when the user trusted its
    content (``trusted-projects.json``, ``app.files._trust``).

    Raises:
        SettingsError: A file is malformed (the message names the file and key).
    """
    project = read_project_settings(cwd)
    trusted = project.digest is not None and trusted_digest(project.project) == project.digest
    return effective_settings(cwd, project, project.widening if trusted else {})
