"""``JsonlStorage``: a session as append-only JSON-lines files (R130-R132).

The public face of a small package. ``_storage`` is the Storage class; the file
protocol lives in ``_files``, ``_plan`` and ``_publish`` (what one commit
writes, in which order), recovery in ``_recovery`` and ``_replay``, the
in-memory index in ``_index``, ``_columns``, ``_tables``, ``_documents`` and
``_queries``, reads from disk in ``_reader`` and ``_sidecars``, and the index
checkpoint that keeps reopen proportional to what is live in ``_checkpoint``.
"""

from pi_durable_tui.storage.jsonl._checkpoint import CheckpointPolicy
from pi_durable_tui.storage.jsonl._recovery import RecoveryStats
from pi_durable_tui.storage.jsonl._storage import JsonlStorage

__all__ = ["CheckpointPolicy", "JsonlStorage", "RecoveryStats"]
