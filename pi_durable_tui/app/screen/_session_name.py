"""A session's name (``/name``), kept in the session (``pi.session``).

The name is a session document, ``pi.session`` = ``{"name": <text>}``,
committed before anything shows it, so a ``kill -9`` right after ``/name``
reopens with the name. The ``--resume`` picker lists sessions without opening
their stores (another process may hold one), so the name is also mirrored
beside the store (``files.write_name``): written after the commit, and written
again from the store each time it is opened (``mirror_name``), so a crash
between the commit and the mirror heals at the next open.

The name is user text bound for the terminal: ``clean_name`` makes it one line
without control sequences, at most ``NAME_LIMIT`` characters.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from pi_durable_tui.app._ports import ActionRefused
from pi_durable_tui.app._terminal_text import terminal_safe
from pi_durable_tui.app.agent import AgentApp
from pi_durable_tui.app.files import read_name, write_name
from pi_durable_tui.kernel import Tx, define_doc

SESSION_DOC = define_doc(
    "pi.session", initial=dict, scope="session", checkpoint_when=lambda *_: True
)
"""``pi.session`` (session scope): ``{"name": text}``, what ``/name`` called the session."""

NAME_LIMIT = 80
"""Characters a name keeps (the picker shows one line per session)."""


def clean_name(text: str) -> str:
    """``text`` as a name: no control sequences, one line of single spaces, capped.

    Raises:
        ActionRefused: Nothing printable is left (the message says what to type).
    """
    name = " ".join(terminal_safe(text).split())[:NAME_LIMIT].rstrip()
    if not name:
        raise ActionRefused("Usage: /name NAME, where NAME is a few words (no argument shows it)")
    return name


async def session_name(app: AgentApp) -> str:
    """The session's committed name, or empty when it has none."""
    name = (await app.harness.session.snapshot(SESSION_DOC) or {}).get("name")
    return name if isinstance(name, str) else ""


async def name_session(app: AgentApp, text: str) -> str:
    """Commit ``text`` (cleaned) as the session's name, then mirror it; returns the name.

    Raises:
        ActionRefused: ``text`` holds nothing printable.
    """
    name = clean_name(text)
    # REMINDER: the store first, the mirror second: a crash between them leaves a
    # committed name that the next open mirrors, never a mirror of an uncommitted one.
    await app.harness.session.commit(_record(name))
    await _mirror(app, name)
    return name


async def mirror_name(app: AgentApp) -> None:
    """Rewrite the name's mirror from the store when they differ (a crash between them)."""
    name = await session_name(app)
    if name:
        await _mirror(app, name)


async def _mirror(app: AgentApp, name: str) -> None:
    # A thread: the file system may be slow (a network home), the screen's loop must not wait.
    if await asyncio.to_thread(read_name, app.store) != name:
        await asyncio.to_thread(write_name, app.store, name)


def _record(name: str) -> Callable[[Tx], Awaitable[None]]:
    async def record(tx: Tx) -> None:
        doc = await tx.doc(SESSION_DOC)
        doc["name"] = name

    return record
