"""``PostgresStorage``: the durable backend in a PostgreSQL database (R129; DESIGN.md section 8).

The public face of a small package: ``_storage`` (the Storage class, its
connection and the order of its calls), ``_schema`` (tables, migrations, the
store row, what reopen reads), ``_lock`` (the advisory single-writer lock and
its holder), ``_view`` (the cached committed view a commit is checked against),
``_commit`` (the one-statement write), ``_reads`` (lookups and scans),
``_columns`` (how strings and integers bind), ``_integrity`` (the consistency
check) and ``_url`` (URLs without their password).
"""

from pi_durable_tui.storage.postgres._schema import StoreSummary
from pi_durable_tui.storage.postgres._storage import PostgresStorage
from pi_durable_tui.storage.postgres._url import is_database_url, redact

__all__ = ["PostgresStorage", "StoreSummary", "is_database_url", "redact"]
