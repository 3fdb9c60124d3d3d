"""pidurable: a terminal coding agent on a durable agent core.

Every step of a session (user message, streamed model text, tool call, tool
output, task progress) is committed to storage before anything is shown, so a
killed process resumes exactly where it stopped. The package is layered as
``../shared/DESIGN.md`` section 1 describes: ``storage`` (layer 1), ``kernel``,
``ai`` and ``env`` (layer 2), then the harness, tools, app and TUI above them.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
