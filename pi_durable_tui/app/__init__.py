"""Layer 5: the coding agent product without a screen.

The screen (layer 6, ``pi_durable_tui.tui``) reads a ``ScreenModel`` and calls a
``Controller``; both are narrow protocols over plain, frozen values, so the screen
never touches a Harness or a Storage (DESIGN.md section 1). ``LiveScreenModel``
and ``AgentController`` implement them over an open ``AgentApp``.


Sessions and their directories, settings files, ``AGENTS.md`` context, the
system prompt sections, the subagent tool, the models of a run, print and JSON
modes, and (for the TUI) a plain view model and a controller over the harness.
"""

from pi_durable_tui.app._agent_app import AgentApp, AppOptions
from pi_durable_tui.app._config import AppSettings, SettingsError, SettingsFiles, load_settings
from pi_durable_tui.app._context_files import ContextFile, discover_context_files
from pi_durable_tui.app._controller import AgentController
from pi_durable_tui.app._demos import DEMOS, Demo
from pi_durable_tui.app._export import export_main, export_transcript
from pi_durable_tui.app._headless import HeadlessMode, run_headless
from pi_durable_tui.app._model_setup import (
    ModelChoiceError,
    ModelSelection,
    build_models,
    choose_model,
    list_models_text,
)
from pi_durable_tui.app._ports import Controller, ExportFormat, ScreenModel
from pi_durable_tui.app._prompt_sections import CODING_PROMPT
from pi_durable_tui.app._recovery import recovery_report
from pi_durable_tui.app._screen_model import LiveScreenModel
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
from pi_durable_tui.app._view import (
    Block,
    ConversationInfo,
    Footer,
    ModelChoice,
    Notice,
    QueueItem,
    SessionInfo,
    TaskNode,
    ThinkingPart,
    ToolCard,
    ViewChange,
)

__all__ = [
    "CODING_PROMPT",
    "DEMOS",
    "SUBAGENTS",
    "AgentApp",
    "AgentController",
    "AppOptions",
    "AppSettings",
    "Block",
    "ContextFile",
    "Controller",
    "ConversationInfo",
    "Demo",
    "ExportFormat",
    "Footer",
    "HeadlessMode",
    "LiveScreenModel",
    "ModelChoice",
    "ModelChoiceError",
    "ModelSelection",
    "NoSession",
    "Notice",
    "QueueItem",
    "ScreenModel",
    "SessionInfo",
    "SessionUnavailable",
    "SettingsError",
    "SettingsFiles",
    "StoredSession",
    "SubagentArgs",
    "TaskNode",
    "ThinkingPart",
    "ToolCard",
    "ViewChange",
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
    "recovery_report",
    "run_headless",
    "sessions_dir",
]
