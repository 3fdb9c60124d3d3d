"""Compaction: the task ``pi.compaction`` and the pure decisions behind it (R108-R114).

A part of the harness, not a public face: nothing here is public. The built-in
registry takes ``COMPACTION_TASK``; the generation uses the estimates and the cut
(``estimate_tokens``, ``tokens_upper_bound``, ``select_cut``) to decide when a
context must be compacted before a request.

Its private modules, lowest first:

- ``_compaction_range``: context size, where to cut, what to summarize
  (R108-R112);
- ``_compaction``: the task that summarizes the older part of a context
  (R108-R114).

Outside itself this part imports the runtime (``harness._runtime``), the parts
``extensions``, ``state``, ``context`` and ``conversations`` (a compaction's
result is admitted like a submission), and ``_settings`` for retry delays.
"""

from pi_durable_tui.harness.compaction._compaction import COMPACTION_TASK
from pi_durable_tui.harness.compaction._compaction_range import (
    estimate_tokens,
    select_cut,
    tokens_upper_bound,
)

__all__ = ["COMPACTION_TASK", "estimate_tokens", "select_cut", "tokens_upper_bound"]
