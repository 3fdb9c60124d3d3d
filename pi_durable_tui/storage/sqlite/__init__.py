"""``SqliteStorage``: the durable backend on one SQLite file (R129).

The public face of a small package: ``_storage`` (the Storage class, commits on
aiosqlite's thread), ``_schema`` (pragmas, migrations, metadata), ``_tables``
(batch writes, keyed lookups, document content), ``_scans`` (ordered and
fork-aware scans) and ``_checkpoints`` (WAL checkpoints off the commit path).
"""

from pi_durable_tui.storage.sqlite._schema import UnsupportedSchema
from pi_durable_tui.storage.sqlite._storage import SqliteStorage

__all__ = ["SqliteStorage", "UnsupportedSchema"]
