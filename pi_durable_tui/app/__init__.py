"""Layer 5: the coding agent product without a screen.

Sessions and their directories, settings files, ``AGENTS.md`` context, the
system prompt sections, the subagent tool, the models of a run, print and JSON
modes, and (for the TUI) a plain view model and a controller over the harness.
"""

from pi_durable_tui.app._agent_app import AgentApp, AppOptions
from pi_durable_tui.app._config import AppSettings, SettingsError, SettingsFiles, load_settings
from pi_durable_tui.app._context_files import ContextFile, discover_context_files
from pi_durable_tui.app._export import export_main, export_transcript
from pi_durable_tui.app._headless import HeadlessMode, run_headless
from pi_durable_tui.app._model_setup import (
    ModelChoiceError,
    ModelSelection,
    build_models,
    choose_model,
    list_models_text,
)
from pi_durable_tui.app._prompt_sections import CODING_PROMPT
from pi_durable_tui.app._sessions import (
    NoSession,
    SessionUnavailable,
    StoredSession,
    list_sessions,
    new_session_path,
    newest_session,
    sessions_dir,
)
from pi_durable_tui.app._startup_errors import describe_startup_error
from pi_durable_tui.app._subagent import SUBAGENTS, SubagentArgs

__all__ = [
    "CODING_PROMPT",
    "SUBAGENTS",
    "AgentApp",
    "AppOptions",
    "AppSettings",
    "ContextFile",
    "HeadlessMode",
    "ModelChoiceError",
    "ModelSelection",
    "NoSession",
    "SessionUnavailable",
    "SettingsError",
    "SettingsFiles",
    "StoredSession",
    "SubagentArgs",
    "build_models",
    "choose_model",
    "describe_startup_error",
    "discover_context_files",
    "export_main",
    "export_transcript",
    "list_models_text",
    "list_sessions",
    "load_settings",
    "new_session_path",
    "newest_session",
    "run_headless",
    "sessions_dir",
]
