"""The name of the environment variable that carries a command's mark (issue 13).

Every command, and every process of pidurable's own that must end with one (an
MCP server, a kept job's log relay), carries ``PIDURABLE_RUN=<run>.<call>``
(``_strays``). The name lives in a module of its own, which imports nothing, so
the code that starts a kept job's relay (``_relay_start``) names the mark
without loading what ``_strays`` needs to find and end processes (asyncio).
"""

MARK_NAME = "PIDURABLE_RUN"
"""The environment variable carrying a command's mark."""
