"""Gitignore-style patterns checked one entry at a time, as ripgrep checks them."""

from __future__ import annotations

import pytest

from pi_durable_tui.tools.search import Patterns


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "verdict"),
    [
        ("*.py", "a.py", False, True),
        ("*.py", "deep/down/a.py", False, True),
        ("src/*.py", "src/a.py", False, True),
        ("src/*.py", "other/src/a.py", False, None),
        ("/top.py", "sub/top.py", False, None),
        ("build/", "build", True, True),
        ("build/", "build", False, None),
        # A pattern naming a directory does not match the files under it by itself:
        # the walk never enters the directory, and a root inside it is searched.
        ("build", "build/x.js", False, None),
        ("build/", "build/x.js", False, None),
        # ... unless it ends in ``**``, which names everything below.
        ("build/**", "build/x.js", False, True),
        ("!keep.log", "keep.log", False, False),
    ],
)
def test_a_pattern_matches_an_entry_only_by_the_entry_itself(
    pattern: str, path: str, is_dir: bool, verdict: bool | None
) -> None:
    assert Patterns([pattern]).verdict(path, is_dir=is_dir) is verdict


def test_the_last_matching_pattern_decides() -> None:
    patterns = Patterns(["*.log", "!keep.log", "# a comment", ""])

    assert patterns.verdict("a.log", is_dir=False) is True
    assert patterns.verdict("keep.log", is_dir=False) is False
    assert patterns.has_positive
    assert not Patterns(["# only a comment", ""])
