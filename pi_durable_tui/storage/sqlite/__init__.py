"""``SqliteStorage``: the durable backend on one SQLite file (R129).

The public face of a small package: ``_storage`` (the Storage class, commits on
aiosqlite's thread), ``_schema`` (pragmas, migrations, metadata), ``_tables``
(batch writes, keyed lookups, document content) and ``_scans`` (ordered and
fork-aware scans).
"""

from pi_durable_tui.storage.sqlite._schema import UnsupportedSchema
from pi_durable_tui.storage.sqlite._storage import SqliteStorage

__all__ = ["SqliteStorage", "UnsupportedSchema"]
