"""Layer 5: the coding agent product without a screen.

The screen (layer 6, ``pi_durable_tui.tui``) reads a ``ScreenModel`` and calls a
``Controller``; both are narrow protocols over plain, frozen values, so the screen
never touches a Harness or a Storage (DESIGN.md section 1). ``LiveScreenModel``
and ``AgentController`` implement them over an open ``AgentApp``.


Sessions and their directories, settings files, ``AGENTS.md`` context, the
system prompt sections, the subagent tool, the models of a run, print and JSON
modes, and (for the TUI) a plain view model and a controller over the harness.

This module is its one public face. Behind it, in the direction imports run
(each imports only what is listed before it):

1. ``_terminal_text``: ``terminal_safe``, no control sequence reaches the
   terminal; ``_view``: the plain, frozen values the screen renders, each made
   terminal-safe when built; ``_wire``: the messages between a session's host
   and its clients (issue 15); ``_socket``: the socket beside a store, its
   mode and its peers' credentials; ``_editor_command``: the user's editor
   for the draft (Ctrl+G) and its environment without secrets;
2. ``_ports``: the ``ScreenModel`` and ``Controller`` protocols; ``files/``:
   sessions, settings files, project files and context files on disk;
3. ``_opening``: what the screen shows until the session is open;
   ``_location``: where the tools work (``--env ssh://...``, the user's ``env``
   setting; it imports ``env.ssh`` only for a URL);
4. ``agent/``: settings, models, the prompt, subagents, demos, ``AgentApp``,
   the headless modes and export; ``client/``: ``HostLink``, a client's
   connection to the host of a session open elsewhere (it needs no layer
   below the app but the JSON operations);
5. ``_startup_errors``: one line for a problem that stops the start, or for a
   store that fails under a run;
6. ``screen/``: the live view model and the controller over an open ``AgentApp``
   (it says a store failure in ``_startup_errors``' words, issue 12);
7. ``host/``: ``SessionHost``, the process holding the store serves its
   session to other clients (issue 15), and ``start_hosted_screen``;
8. ``remote/``: ``attach_screen``, the same view model over a session hosted
   elsewhere, and its controller; ``web/``: the web page and its WebSocket, and
   ``pidurable serve`` (``--web``);
9. ``acp/``: ``pidurable acp``, an editor's agent over the Agent Client
   Protocol on the same view model and controller;
10. this face.

``tests/test_architecture.py`` holds the same levels (``PARTS``) and checks them.

REMINDER: the first paint must not wait for the layers below the app. This face
imports ``_terminal_text``, ``_view`` and ``_ports`` only; every other name is imported on first use
(``_LAZY``), from the module or part that holds it. What the screen needs before
its first paint (``_opening``, ``files/``) imports no layer below the app.
"""

import importlib
from typing import TYPE_CHECKING

from pi_durable_tui.app._ports import (
    ActionRefused,
    Controller,
    ExportFormat,
    HostAction,
    ScreenModel,
)
from pi_durable_tui.app._terminal_text import terminal_safe
from pi_durable_tui.app._view import (
    ApprovalQuestion,
    Block,
    CommandInfo,
    ConversationInfo,
    Footer,
    ModelChoice,
    Notice,
    NoticeLevel,
    QueueItem,
    SessionDetails,
    SessionInfo,
    SkillInfo,
    TaskNode,
    ThinkingPart,
    ToolCard,
    TrustQuestion,
    ViewChange,
    last_answer,
)

if TYPE_CHECKING:
    from pi_durable_tui.app._editor_command import (
        EditorCommand,
        EditorUnavailable,
        editor_command,
    )
    from pi_durable_tui.app._location import (
        Location,
        LocationError,
        RemoteUnavailable,
        resolve_location,
    )
    from pi_durable_tui.app._opening import OpeningSession, SessionNotOpened
    from pi_durable_tui.app._startup_errors import describe_run_failure, describe_startup_error
    from pi_durable_tui.app.acp import acp_main
    from pi_durable_tui.app.agent import (
        CODING_PROMPT,
        DEMOS,
        SUBAGENTS,
        AgentApp,
        AppOptions,
        AppSettings,
        Demo,
        HeadlessMode,
        ModelChoiceError,
        ModelSelection,
        PermissionChoices,
        RedactedWriter,
        SettingsFiles,
        SubagentArgs,
        build_models,
        choose_model,
        export_main,
        export_transcript,
        list_models_text,
        load_settings,
        output_redactor,
    )
    from pi_durable_tui.app.client import HostGone, HostLink, HostRefused
    from pi_durable_tui.app.files import (
        ContextFile,
        NoSession,
        SessionPathError,
        SessionUnavailable,
        SettingsError,
        StoredSession,
        discover_context_files,
        list_sessions,
        new_session_path,
        newest_session,
        session_infos,
        sessions_dir,
        settings_theme,
    )
    from pi_durable_tui.app.host import Lingering, SessionHost, run_headless, start_hosted_screen
    from pi_durable_tui.app.remote import (
        RemoteController,
        RemoteFeed,
        attach_if_hosted,
        attach_screen,
    )
    from pi_durable_tui.app.screen import (
        AgentController,
        LiveScreenModel,
        recovery_report,
        start_screen,
    )
    from pi_durable_tui.app.web import serve_main

_LAZY: dict[str, str] = {
    "EditorCommand": "_editor_command",
    "EditorUnavailable": "_editor_command",
    "editor_command": "_editor_command",
    "Location": "_location",
    "LocationError": "_location",
    "RemoteUnavailable": "_location",
    "resolve_location": "_location",
    "AgentApp": "agent",
    "AppOptions": "agent",
    "AppSettings": "agent",
    "SettingsError": "files",
    "settings_theme": "files",
    "OpeningSession": "_opening",
    "SessionNotOpened": "_opening",
    "SettingsFiles": "agent",
    "load_settings": "agent",
    "ContextFile": "files",
    "discover_context_files": "files",
    "AgentController": "screen",
    "DEMOS": "agent",
    "Demo": "agent",
    "export_main": "agent",
    "export_transcript": "agent",
    "HeadlessMode": "agent",
    "run_headless": "host",
    "RedactedWriter": "agent",
    "output_redactor": "agent",
    "ModelChoiceError": "agent",
    "ModelSelection": "agent",
    "PermissionChoices": "agent",
    "build_models": "agent",
    "choose_model": "agent",
    "list_models_text": "agent",
    "CODING_PROMPT": "agent",
    "recovery_report": "screen",
    "LiveScreenModel": "screen",
    "start_screen": "screen",
    "NoSession": "files",
    "SessionPathError": "files",
    "SessionUnavailable": "files",
    "StoredSession": "files",
    "list_sessions": "files",
    "session_infos": "files",
    "new_session_path": "files",
    "newest_session": "files",
    "sessions_dir": "files",
    "describe_run_failure": "_startup_errors",
    "describe_startup_error": "_startup_errors",
    "SUBAGENTS": "agent",
    "SubagentArgs": "agent",
    "HostGone": "client",
    "HostLink": "client",
    "HostRefused": "client",
    "SessionHost": "host",
    "Lingering": "host",
    "serve_main": "web",
    "acp_main": "acp",
    "RemoteController": "remote",
    "RemoteFeed": "remote",
    "attach_screen": "remote",
    "attach_if_hosted": "remote",
    "start_hosted_screen": "host",
}
"""Where each name not needed by the screen lives, imported on first use."""


def __getattr__(name: str) -> object:
    """Import a lazily exported name from the module or part holding it, on first use."""
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
    "ActionRefused",
    "AgentApp",
    "AgentController",
    "AppOptions",
    "AppSettings",
    "ApprovalQuestion",
    "Block",
    "CommandInfo",
    "ContextFile",
    "Controller",
    "ConversationInfo",
    "Demo",
    "EditorCommand",
    "EditorUnavailable",
    "ExportFormat",
    "Footer",
    "HeadlessMode",
    "HostAction",
    "HostGone",
    "HostLink",
    "HostRefused",
    "Lingering",
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
    "PermissionChoices",
    "QueueItem",
    "RedactedWriter",
    "RemoteController",
    "RemoteFeed",
    "RemoteUnavailable",
    "ScreenModel",
    "SessionDetails",
    "SessionHost",
    "SessionInfo",
    "SessionNotOpened",
    "SessionPathError",
    "SessionUnavailable",
    "SettingsError",
    "SettingsFiles",
    "SkillInfo",
    "StoredSession",
    "SubagentArgs",
    "TaskNode",
    "ThinkingPart",
    "ToolCard",
    "TrustQuestion",
    "ViewChange",
    "acp_main",
    "attach_if_hosted",
    "attach_screen",
    "build_models",
    "choose_model",
    "describe_run_failure",
    "describe_startup_error",
    "discover_context_files",
    "editor_command",
    "export_main",
    "export_transcript",
    "last_answer",
    "list_models_text",
    "list_sessions",
    "load_settings",
    "new_session_path",
    "newest_session",
    "output_redactor",
    "recovery_report",
    "resolve_location",
    "run_headless",
    "serve_main",
    "session_infos",
    "sessions_dir",
    "settings_theme",
    "start_hosted_screen",
    "start_screen",
    "terminal_safe",
]
