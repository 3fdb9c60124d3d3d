"""The app's home directory: ``$PIDURABLE_HOME``, or ``~/.pidurable`` (DESIGN.md section 5).

It holds the user's settings, themes and the session directories; nothing here
creates it.
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """The app's home directory (``$PIDURABLE_HOME`` or ``~/.pidurable``), not created."""
    return Path(os.environ.get("PIDURABLE_HOME") or "~/.pidurable").expanduser()
