"""``/session`` and ``/name``: what the open session is, and its name.

``/session`` lists, like ``/permissions``, one line per fact: the session's
name, ID, store, when it was created, the working directory, the model and
thinking level, the permission mode, the entries of the shown conversation,
the spend, the context use, the subagent conversations and the live background
tasks. Every figure is the controller's (``Controller.session_details``): read
from committed state, on this process's store or by the host of an attached
screen. ``/name NAME`` commits a name (the controller makes it one safe line
and caps it) and says what was kept; ``/name`` alone says the current one.

The rows are built here from values the app made terminal-safe, and go through
this package's ``Content`` again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol, TypeVar

from pi_durable_tui.app import Controller, NoticeLevel, SessionDetails
from pi_durable_tui.tui._picker import PickerItem
from pi_durable_tui.tui._terminal_text import Content

T = TypeVar("T")

SESSION_TITLE = "This session (/name NAME names it)"


class SessionCommandHost(Protocol):
    """What ``/session`` and ``/name`` need from the app (a part of ``CommandHost``)."""

    @property
    def controller(self) -> Controller:
        """The controller the figures and the name come from."""
        ...

    def notice(self, level: NoticeLevel, text: str) -> int:
        """Show a one-line notice; returns its id."""
        ...

    async def pick(self, title: str, items: Sequence[PickerItem[T]]) -> T | None:
        """Show a list and return the chosen value, or ``None`` when closed."""
        ...


def _count(value: int) -> str:
    return f"{value:,}"


def _created(ms: int | None) -> str:
    if ms is None:
        return "not recorded (a store named by its path)"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))
    return f"{stamp} ({ago(ms)})"


def ago(ms: int) -> str:
    """How long ago ``ms`` (epoch milliseconds) was: ``3m ago``, ``just now``."""
    seconds = max(0, int(time.time() - ms / 1000))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return "just now"


def _context(details: SessionDetails) -> str:
    window = details.context_window
    if details.context_tokens is None:
        known = f" (window {_count(window)})" if window > 0 else ""
        return f"unknown until the next answer{known}"
    if window <= 0:
        return f"{_count(details.context_tokens)} tokens"
    percent = 100.0 * details.context_tokens / window
    return f"{_count(details.context_tokens)} of {_count(window)} tokens ({percent:.1f}%)"


def session_lines(details: SessionDetails) -> list[tuple[str, str]]:
    """The ``(label, value)`` rows ``/session`` shows, in order."""
    entries = _count(details.entries) + ("+" if details.entries_capped else "")
    thinking = f" · thinking {details.thinking_level}" if details.model else ""
    return [
        ("name", details.name or "(none: /name NAME gives one)"),
        ("session ID", details.session_id or "(none: a store named by its path)"),
        ("store", details.store),
        ("created", _created(details.created_ms)),
        ("working directory", details.cwd),
        ("model", (details.model or "(none configured)") + thinking),
        ("permission mode", details.permission_mode or "(not known yet)"),
        ("entries in this conversation", entries),
        ("tokens", f"↑{_count(details.tokens_in)} in · ↓{_count(details.tokens_out)} out"),
        (
            "cache",
            f"{_count(details.cache_read)} read · {_count(details.cache_write)} written",
        ),
        ("cost", f"${details.cost:.4f}"),
        ("context", _context(details)),
        ("subagent conversations", _count(details.subagents)),
        ("live background tasks", _count(details.background_tasks)),
    ]


async def show_session(host: SessionCommandHost, arg: str) -> None:
    """``/session``: list the session's facts (Enter or Esc closes the list)."""
    details = await host.controller.session_details()
    items = [
        PickerItem(Content.assemble((f"{label}: ", "bold"), value), str(index), search=value)
        for index, (label, value) in enumerate(session_lines(details))
    ]
    await host.pick(SESSION_TITLE, items)


async def name_session(host: SessionCommandHost, arg: str) -> None:
    """``/name NAME`` names the session; ``/name`` alone says its name."""
    if arg:
        name = await host.controller.name_session(arg)
        host.notice("info", f"Session named: {name}")
        return
    name = await host.controller.session_name()
    if name:
        host.notice("info", f"This session is named: {name}")
    else:
        host.notice("info", "This session has no name: /name NAME gives it one.")
