"""Which conversation the screen shows, kept in the session (``pi.screen``).

``pidurable --continue`` (and ``--resume``, ``--session``, ``/resume``) reopens a
session showing the conversation the user was last working in: a fork made with
``/fork``, a subagent's conversation picked in ``/agents``, or the main one. The
choice is a session document, ``pi.screen`` = ``{"conversation": <id>}``,
committed before the screen switches (everything shown was committed first), so
a ``kill -9`` right after a switch reopens on what was on the screen.

Only the session's own screen writes it: an attached terminal follows the
conversations it picks for itself and never changes what the host's screen
reopens on. A stored choice that names no conversation of the store (a store
edited by hand, a document from a newer version) falls back to the root.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pi_durable_tui.app.agent import AgentApp
from pi_durable_tui.app.screen._screen_model import LiveScreenModel
from pi_durable_tui.kernel import Tx, define_doc

SCREEN_DOC = define_doc("pi.screen", initial=dict, scope="session", checkpoint_when=lambda *_: True)
"""``pi.screen`` (session scope): ``{"conversation": id}``, the conversation shown last."""


async def shown_conversation(app: AgentApp) -> int:
    """The conversation to show on reopening: the one shown last, else the root."""
    chosen = await _recorded(app)
    if not isinstance(chosen, int) or isinstance(chosen, bool) or chosen == app.root.id:
        return app.root.id
    found = await app.harness.session.storage.conversation(chosen)
    return chosen if found is not None else app.root.id


async def show_conversation(app: AgentApp, model: LiveScreenModel, conversation_id: int) -> None:
    """Commit ``conversation_id`` as the shown conversation, then show it.

    Raises:
        ValueError: The conversation does not exist (nothing is committed).
    """
    if await app.harness.session.storage.conversation(conversation_id) is None:
        raise ValueError(f"Conversation {conversation_id} does not exist")

    if await _recorded(app) != conversation_id:  # switching back and forth commits each time
        await app.harness.session.commit(_record(conversation_id))
    await model.attach(conversation_id)


async def _recorded(app: AgentApp) -> Any:
    return (await app.harness.session.snapshot(SCREEN_DOC) or {}).get("conversation")


def _record(conversation_id: int) -> Callable[[Tx], Awaitable[None]]:
    async def record(tx: Tx) -> None:
        shown = await tx.doc(SCREEN_DOC)
        shown["conversation"] = conversation_id

    return record
