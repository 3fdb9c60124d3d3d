"""Files on disk: sessions, settings files, project files and context files (DESIGN.md 5).

A part of the app, not a public face: the public names (``list_sessions``,
``newest_session``, ``NoSession``, ``settings_theme``, ``discover_context_files``
...) are imported from ``pi_durable_tui.app``. The other parts use the rest
(``home``, the settings sources, ``ProjectFiles``).

Its private modules, lowest first (each imports only the ones before it):

- ``_home``: the app's home directory;
- ``_settings_files``: where the settings files are and what they say, before
  any validation (the user-only ``database`` setting too);
- ``_trust``: the keys that widen powers, and which project settings contents
  the user trusted (by sha256, in ``trusted-projects.json``; issue 13);
- ``_sessions``: where sessions live (files, or a PostgreSQL database), and
  finding them;
- ``_context_files``: ``AGENTS.md`` / ``CLAUDE.md`` from the filesystem root down
  to the working directory;
- ``_project_files``: the working directory's files for ``@`` completion;
- ``_front_matter``: Markdown files with YAML front matter, and where skills and
  custom commands live;
- ``_skills``: the skills listed in the system prompt (issue 16);
- ``_commands``: custom slash commands and their expansion (issue 16).

REMINDER: the screen reads sessions and the theme before its first paint, through
this part's face: its modules import the standard library and ``app._view``
only, never a layer below the app (``tests/tui/test_opening.py`` checks it);
``_sessions`` imports the storage layer inside the functions that open a store
or list a database's sessions.
"""

from pi_durable_tui.app.files._commands import (
    CommandScan,
    CustomCommand,
    Expansion,
    UnknownCommand,
    discover_commands,
    expand_command,
    expand_command_line,
)
from pi_durable_tui.app.files._context_files import MAX_BYTES as MAX_CONTEXT_BYTES
from pi_durable_tui.app.files._context_files import (
    ContextFile,
    context_candidates,
    context_text,
    discover_context_files,
    global_context_file,
)
from pi_durable_tui.app.files._front_matter import FrontMatterError
from pi_durable_tui.app.files._home import home
from pi_durable_tui.app.files._project_files import SKIPPED_DIRS, ProjectFiles
from pi_durable_tui.app.files._sessions import (
    DATABASE_ENV,
    NoSession,
    SessionPathError,
    SessionUnavailable,
    StoredSession,
    database_url,
    describe_store,
    discard_new_session,
    list_sessions,
    new_session_path,
    newest_session,
    open_store,
    read_name,
    remember_env,
    remember_faux_script,
    remember_title,
    remembered_env,
    remembered_faux_script,
    resolve_session,
    session_created_ms,
    session_dir_id,
    session_infos,
    sessions_dir,
    write_name,
    write_title,
)
from pi_durable_tui.app.files._settings_files import (
    DATABASE_KEY,
    EXTENSIONS_DIR,
    MCP_JSON_NAME,
    SETTINGS_NAME,
    SettingsError,
    merge_settings,
    merged_settings,
    parse_settings,
    project_mcp_json,
    read_settings_bytes,
    read_settings_file,
    settings_sources,
    settings_theme,
)
from pi_durable_tui.app.files._skills import Skill, SkillScan, discover_skills, skills_prompt
from pi_durable_tui.app.files._trust import (
    TRUST_NAME,
    WIDENING_KEYS,
    TrustRequest,
    remember_trust,
    settings_digest,
    trusted_digest,
    widening_values,
    with_values,
    without_widening,
)

__all__ = [
    "DATABASE_ENV",
    "DATABASE_KEY",
    "EXTENSIONS_DIR",
    "MAX_CONTEXT_BYTES",
    "MCP_JSON_NAME",
    "SETTINGS_NAME",
    "SKIPPED_DIRS",
    "TRUST_NAME",
    "WIDENING_KEYS",
    "CommandScan",
    "ContextFile",
    "CustomCommand",
    "Expansion",
    "FrontMatterError",
    "NoSession",
    "ProjectFiles",
    "SessionPathError",
    "SessionUnavailable",
    "SettingsError",
    "Skill",
    "SkillScan",
    "StoredSession",
    "TrustRequest",
    "UnknownCommand",
    "context_candidates",
    "context_text",
    "database_url",
    "describe_store",
    "discard_new_session",
    "discover_commands",
    "discover_context_files",
    "discover_skills",
    "expand_command",
    "expand_command_line",
    "global_context_file",
    "home",
    "list_sessions",
    "merge_settings",
    "merged_settings",
    "new_session_path",
    "newest_session",
    "open_store",
    "parse_settings",
    "project_mcp_json",
    "read_name",
    "read_settings_bytes",
    "read_settings_file",
    "remember_env",
    "remember_faux_script",
    "remember_title",
    "remember_trust",
    "remembered_env",
    "remembered_faux_script",
    "resolve_session",
    "session_created_ms",
    "session_dir_id",
    "session_infos",
    "sessions_dir",
    "settings_digest",
    "settings_sources",
    "settings_theme",
    "skills_prompt",
    "trusted_digest",
    "widening_values",
    "with_values",
    "without_widening",
    "write_name",
    "write_title",
]
