"""``create_registry``: a registry holding the three built-in tasks (R21, R32)."""

from __future__ import annotations

from pi_durable_tui.harness.compaction import COMPACTION_TASK
from pi_durable_tui.harness.extensions import Extension, Registry
from pi_durable_tui.harness.generation import GENERATION_TASK
from pi_durable_tui.harness.tool import TOOL_TASK


def create_registry(*extensions: Extension) -> Registry:
    """Create a registry with ``pi.generation``, ``pi.tool`` and ``pi.compaction``.

    Args:
        *extensions: Extensions to install, in order.

    Returns:
        The registry.
    """
    registry = Registry((GENERATION_TASK, TOOL_TASK, COMPACTION_TASK))
    if extensions:
        registry.install(*extensions)
    return registry
