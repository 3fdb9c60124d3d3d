"""Gitignore-style patterns matched against one path at a time, as ripgrep matches them.

``pathspec`` translates gitignore syntax into regular expressions (``*.py``
anywhere, ``src/**/*.ts`` from the base, ``build/`` directories only, ``!x`` to
re-include). Its own matching also says a pattern matches everything *under* a
directory it names (``build`` matches ``build/x``), which is right for a list of
files but not for a walk that checks each entry as it meets it: ripgrep checks
only the entry itself, so a search rooted inside an ignored directory still
finds its files. ``Patterns.verdict`` therefore counts a match only when it
ends at the end of the path, or when the pattern itself ends in ``**``.
"""

from __future__ import annotations

from collections.abc import Iterable

from pathspec import GitIgnoreSpec
from pathspec.pattern import RegexPattern

# REMINDER: pathspec (1.x) marks the "directory prefix" alternative of its regexes
# with this group; tests/tools/search/test_globs.py pins the behaviour.
_DIRECTORY_GROUP = "ps_d"


class Patterns:
    """An ordered list of gitignore-style patterns; the last one that matches decides."""

    def __init__(self, lines: Iterable[str]) -> None:
        spec = GitIgnoreSpec.from_lines(list(lines))
        self._patterns: list[RegexPattern] = [
            pattern
            for pattern in spec.patterns
            if isinstance(pattern, RegexPattern)
            and pattern.include is not None
            and pattern.regex is not None
        ]

    def __bool__(self) -> bool:
        return bool(self._patterns)

    @property
    def has_positive(self) -> bool:
        """Whether any pattern selects (rather than re-includes with ``!``)."""
        return any(pattern.include for pattern in self._patterns)

    def verdict(self, path: str, *, is_dir: bool) -> bool | None:
        """Say what the last pattern matching ``path`` does with it.

        ``True`` when it selects ``path``, ``False`` for a ``!`` pattern, ``None``
        when no pattern matches.

        Args:
            path: ``/``-separated, relative to the patterns' base.
            is_dir: Whether it names a directory (``build/`` patterns match only those).
        """
        candidate = path + "/" if is_dir else path
        for pattern in reversed(self._patterns):
            if _matches_entry(pattern, candidate):
                return bool(pattern.include)
        return None


def _matches_entry(pattern: RegexPattern, path: str) -> bool:
    assert pattern.regex is not None
    found = pattern.regex.match(path)
    if found is None:
        return False
    if found.end() == len(path):
        return True
    # Stopped early: either through the directory alternative (the pattern names a
    # parent of ``path``, which is not a match of ``path`` itself) or because the
    # pattern ends in ``**`` (it matches everything below, ``path`` included).
    groups = found.groupdict()
    return groups.get(_DIRECTORY_GROUP) is None
