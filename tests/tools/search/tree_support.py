"""Writing a tree of files for the search tests: ``make_tree(root, {path: content})``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def make_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Write each file (text or bytes) under ``root``, creating its directories."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
