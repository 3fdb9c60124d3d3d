"""Path text as the coding tools receive it from a model (reference section 3).

Models paste paths that look right but are not byte-equal to the file name:
Unicode spaces copied from rendered text, an ``@`` mention prefix, and, for
files named by macOS (screenshots), a narrow no-break space before ``AM.`` /
``PM.``, decomposed (NFD) accents and a typographic apostrophe. This module
owns the two string transformations that repair them; resolving against the
working directory and checking existence belong to the tool and its
environment.

- ``normalize_tool_path``: every tool applies it first (section 3, "Path
  handling").
- ``read_path_variants``: the candidates ``read`` tries, in order, when the
  exact path does not exist (the first that exists wins).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from pi_durable_tui.harness import ToolAccess

UNICODE_SPACES = "\u00a0" + "".join(chr(c) for c in range(0x2000, 0x200B)) + "\u202f\u205f\u3000"
"""The Unicode space characters that tools read as a plain space (U+00A0,
U+2000-U+200A, U+202F, U+205F, U+3000)."""

_TO_PLAIN_SPACE = str.maketrans(dict.fromkeys(UNICODE_SPACES, " "))
_NARROW_NO_BREAK_SPACE = "\u202f"
_AM_PM = re.compile(r" (AM|PM)\.", re.IGNORECASE)
_RIGHT_SINGLE_QUOTE = "\u2019"


def path_access(args: Any) -> str:
    """The main argument the permission engine matches for a path tool (issue 13)."""
    return normalize_tool_path(str(args.path))


PATH_ACCESS = ToolAccess("path", path_access)
"""How ``read``, ``write`` and ``edit`` declare their main argument to the permission engine."""


def normalize_tool_path(raw: str) -> str:
    """Repair a path as a model wrote it.

    Unicode space characters (see ``UNICODE_SPACES``) become plain spaces, then
    one leading ``@`` is dropped (models copy ``@file`` mentions verbatim).

    Args:
        raw: The path argument as the model sent it.

    Returns:
        The repaired path, still relative or absolute as given.
    """
    path = raw.translate(_TO_PLAIN_SPACE)
    return path[1:] if path.startswith("@") else path


def read_path_variants(path: str) -> list[str]:
    """List the other spellings ``read`` tries when ``path`` does not exist.

    In order: ``" AM."`` / ``" PM."`` (any case) with a narrow no-break space
    instead of the space (macOS screenshot names), the NFD form (macOS stores
    decomposed names), ``'`` replaced by ``\u2019``, and NFD with ``\u2019``.
    Variants equal to ``path`` or to an earlier variant are left out.

    Args:
        path: The normalized, resolved path that was not found.

    Returns:
        The distinct variants, possibly empty.
    """
    nfd = unicodedata.normalize("NFD", path)
    candidates = [
        _AM_PM.sub(lambda match: f"{_NARROW_NO_BREAK_SPACE}{match.group(1)}.", path),
        nfd,
        path.replace("'", _RIGHT_SINGLE_QUOTE),
        nfd.replace("'", _RIGHT_SINGLE_QUOTE),
    ]
    variants: list[str] = []
    for candidate in candidates:
        if candidate != path and candidate not in variants:
            variants.append(candidate)
    return variants
