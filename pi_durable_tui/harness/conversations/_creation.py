"""The creation hook: what every harness conversation gets in the commit that creates it (R25).

Every commit that creates or forks a conversation - through the harness's
conveniences or through a raw ``tx.create_conversation`` inside a tool - creates
``pi.live``, ``pi.inbox``, ``pi.usage`` and ``pi.provider`` (with a fresh UUIDv7),
and sets ``pi.agent``: a fork keeps its as-of copy; a new task-owned conversation
gets a full copy of its owner task's conversation's stored agent; a new ownerless
conversation gets ``{}``. Then the host's ``conversation_created`` option runs.

The conveniences (``create_conversation``, ``fork``, ``root``) initialize the
conversation inside their callback, so that their ``agent`` change and ``init``
run after it, in that order; the session hook then skips it.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable

from pi_durable_tui.harness.state import AGENT_DOC, INBOX_DOC, LIVE_DOC, PROVIDER_DOC, USAGE_DOC
from pi_durable_tui.kernel import Tx
from pi_durable_tui.storage.records import ConversationRecord

ConversationCreated = Callable[[Tx, ConversationRecord], "Awaitable[None] | None"]
"""The host's hook, run in every creating commit after the built-in documents (R25)."""


class CreationHook:
    """Initializes conversations in their creating commit (R25).

    Args:
        host_hook: The host's ``conversation_created`` option, if any.
    """

    def __init__(self, host_hook: ConversationCreated | None = None) -> None:
        self._host_hook = host_hook
        self._done: set[int] = set()
        # REMINDER: conversation IDs are never reused, so an ID left here by a
        # commit that failed can never match a later conversation.

    async def initialize(self, tx: Tx, record: ConversationRecord) -> None:
        """Create the built-in documents and run the host hook, once per conversation."""
        if record.id in self._done:
            return
        self._done.add(record.id)
        for definition in (LIVE_DOC, INBOX_DOC, USAGE_DOC, PROVIDER_DOC):
            await tx.doc(definition, record.id)
        if record.parent is None:
            agent = await tx.doc(AGENT_DOC, record.id)
            if record.owner is not None:
                source = await tx.doc(AGENT_DOC, record.owner.conversation_id)
                agent.clear()
                agent.update(copy.deepcopy(source))
        if self._host_hook is not None:
            result = self._host_hook(tx, record)
            if result is not None:
                await result

    async def on_commit_prepare(self, tx: Tx, record: ConversationRecord) -> None:
        """The session hook: initialize a conversation nobody initialized yet."""
        if record.id in self._done:
            self._done.discard(record.id)  # its commit is preparing: forget it
            return
        await self.initialize(tx, record)
        self._done.discard(record.id)
