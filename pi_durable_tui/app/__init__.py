"""Layer 5: the coding agent product without a screen.

The screen (layer 6, ``pi_durable_tui.tui``) reads a ``ScreenModel`` and calls a
``Controller``; both are narrow protocols over plain, frozen values, so the screen
never touches a Harness or a Storage (DESIGN.md section 1). ``LiveScreenModel``
and ``AgentController`` implement them over an open ``AgentApp``.


Sessions and their directories, settings files, ``AGENTS.md`` context, the
system prompt sections, the subagent tool, the models of a run, print and JSON
modes, and (for the TUI) a plain view model and a controller over the harness.
"""

import importlib
from typing import TYPE_CHECKING

from pi_durable_tui.app._ports import Controller, ExportFormat, ScreenModel
from pi_durable_tui.app._view import (
    Block,
    ConversationInfo,
    Footer,
    ModelChoice,
    Notice,
    NoticeLevel,
    QueueItem,
    SessionInfo,
    TaskNode,
    ThinkingPart,
    ToolCard,
    ViewChange,
)

if TYPE_CHECKING:
    from pi_durable_tui.app._agent_app import AgentApp, AppOptions
    from pi_durable_tui.app._config import AppSettings, SettingsFiles, load_settings
    from pi_durable_tui.app._context_files import ContextFile, discover_context_files
    from pi_durable_tui.app._controller import AgentController
    from pi_durable_tui.app._demos import DEMOS, Demo
    from pi_durable_tui.app._export import export_main, export_transcript
    from pi_durable_tui.app._headless import HeadlessMode, run_headless
    from pi_durable_tui.app._location import (
        Location,
        LocationError,
        RemoteUnavailable,
        resolve_location,
    )
    from pi_durable_tui.app._model_setup import (
        ModelChoiceError,
        ModelSelection,
        build_models,
        choose_model,
        list_models_text,
    )
    from pi_durable_tui.app._opening import OpeningSession, SessionNotOpened
    from pi_durable_tui.app._prompt_sections import CODING_PROMPT
    from pi_durable_tui.app._recovery import recovery_report
    from pi_durable_tui.app._screen_model import LiveScreenModel
    from pi_durable_tui.app._screen_start import start_screen
    from pi_durable_tui.app._sessions import (
        NoSession,
        SessionUnavailable,
        StoredSession,
        list_sessions,
        new_session_path,
        newest_session,
        session_infos,
        sessions_dir,
    )
    from pi_durable_tui.app._settings_files import SettingsError, settings_theme
    from pi_durable_tui.app._startup_errors import describe_startup_error
    from pi_durable_tui.app._subagent import SUBAGENTS, SubagentArgs

_LAZY: dict[str, str] = {
    "Location": "_location",
    "LocationError": "_location",
    "RemoteUnavailable": "_location",
    "resolve_location": "_location",
    "AgentApp": "_agent_app",
    "AppOptions": "_agent_app",
    "AppSettings": "_config",
    "SettingsError": "_settings_files",
    "settings_theme": "_settings_files",
    "OpeningSession": "_opening",
    "SessionNotOpened": "_opening",
    "SettingsFiles": "_config",
    "load_settings": "_config",
    "ContextFile": "_context_files",
    "discover_context_files": "_context_files",
    "AgentController": "_controller",
    "DEMOS": "_demos",
    "Demo": "_demos",
    "export_main": "_export",
    "export_transcript": "_export",
    "HeadlessMode": "_headless",
    "run_headless": "_headless",
    "ModelChoiceError": "_model_setup",
    "ModelSelection": "_model_setup",
    "build_models": "_model_setup",
    "choose_model": "_model_setup",
    "list_models_text": "_model_setup",
    "CODING_PROMPT": "_prompt_sections",
    "recovery_report": "_recovery",
    "LiveScreenModel": "_screen_model",
    "start_screen": "_screen_start",
    "NoSession": "_sessions",
    "SessionUnavailable": "_sessions",
    "StoredSession": "_sessions",
    "list_sessions": "_sessions",
    "session_infos": "_sessions",
    "new_session_path": "_sessions",
    "newest_session": "_sessions",
    "sessions_dir": "_sessions",
    "describe_startup_error": "_startup_errors",
    "SUBAGENTS": "_subagent",
    "SubagentArgs": "_subagent",
}
"""Where each name not needed by the screen lives, imported on first use."""


def __getattr__(name: str) -> object:
    """Import a lazily exported name from its private module on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


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
    "Location",
    "LocationError",
    "ModelChoice",
    "ModelChoiceError",
    "ModelSelection",
    "NoSession",
    "Notice",
    "NoticeLevel",
    "OpeningSession",
    "QueueItem",
    "RemoteUnavailable",
    "ScreenModel",
    "SessionInfo",
    "SessionNotOpened",
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
    "resolve_location",
    "run_headless",
    "session_infos",
    "sessions_dir",
    "settings_theme",
    "start_screen",
]
