"""Layer 5: the coding agent product without a screen: view model, controller, sessions.

The screen (layer 6, ``pi_durable_tui.tui``) reads a ``ScreenModel`` and calls a
``Controller``; both are narrow protocols over plain, frozen values, so the screen
never touches a Harness or a Storage (DESIGN.md section 1).
"""

from pi_durable_tui.app._ports import Controller, ExportFormat, ScreenModel
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
    "Block",
    "Controller",
    "ConversationInfo",
    "ExportFormat",
    "Footer",
    "ModelChoice",
    "Notice",
    "QueueItem",
    "ScreenModel",
    "SessionInfo",
    "TaskNode",
    "ThinkingPart",
    "ToolCard",
    "ViewChange",
]
