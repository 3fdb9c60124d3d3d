"""How most examples open an agent: a scripted faux model, the coding tools, a workspace.

It is the minimal setup of a coding agent on the harness; ``chat`` and
``compaction`` spell theirs out because their point is in it (a SQLite store, a
priced model, a small context window).
"""

from __future__ import annotations

from collections.abc import Sequence

from pi_durable_tui.ai import FauxProvider, FauxResponse, ModelRef, Models
from pi_durable_tui.ai.faux import ChooseBy
from pi_durable_tui.env import LocalEnv
from pi_durable_tui.harness import AgentChange, Conversation, Extension, Harness, create_registry
from pi_durable_tui.storage import MemoryStorage, Storage
from pi_durable_tui.tools import CodingTools


async def open_coding_agent(
    script: Sequence[FauxResponse],
    workdir: str,
    *extensions: Extension,
    choose_by: ChooseBy = "queue",
    storage: Storage | None = None,
) -> tuple[Harness, Conversation]:
    """Open a harness whose model replays ``script``, and its root conversation.

    Args:
        script: The faux model's responses.
        workdir: The root conversation's working directory.
        *extensions: Installed after the coding tools (``read``, ``write``, ``edit``, ``bash``).
        choose_by: ``queue`` (each response is used once) or ``position`` (the response at
            the request's turn number in its conversation, the same after a restart).
        storage: The store; a fresh ``MemoryStorage`` when omitted.

    Returns:
        The harness (nothing runs until something asks for progress) and conversation 1.
    """
    models = Models()
    models.register_faux(FauxProvider(script, choose_by=choose_by))
    harness = await Harness.open(
        storage if storage is not None else MemoryStorage(),
        models=models,
        registry=create_registry(CodingTools, *extensions),
        # Each conversation runs commands in its own working directory.
        env=lambda target: LocalEnv(target.cwd or workdir),
    )
    agent = AgentChange(model=ModelRef("faux", "faux-1"), cwd=workdir)
    return harness, await harness.root(agent=agent)
