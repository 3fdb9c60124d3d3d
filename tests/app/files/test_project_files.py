"""``@`` completion across the working directory: ``ProjectFiles`` (issue 8, the editor).

A bare name finds files anywhere below the working directory, ranked name prefix,
then name, then path; the walk skips hidden and generated directories, runs at
most ``WALK_BUDGET_S`` per completion and resumes where it stopped, and walks
again once its listing is ``FRESH_S`` old. A manual clock drives the budget.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.app.files._project_files import FRESH_S, WALK_BUDGET_S, ProjectFiles


class SteppingClock:
    """A clock that advances by ``step`` at every reading."""

    def __init__(self, step: float = 0.0) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def make(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    make(
        tmp_path,
        "src/lang/parser.py",
        "src/lang/parser_test.py",
        "src/util/reparse.py",
        "docs/parser/index.md",
        "parse.toml",
        ".git/parser.py",
        "node_modules/parser/index.js",
        ".hidden/parser.py",
    )
    return tmp_path


def test_a_name_finds_files_anywhere_below_ranked_name_prefix_then_name_then_path(
    tree: Path,
) -> None:
    files = ProjectFiles(str(tree))

    assert files.matching("parse", 10) == [
        "parse.toml",
        "src/lang/parser.py",
        "src/lang/parser_test.py",
        "src/util/reparse.py",
        "docs/parser/index.md",
    ]
    assert files.matching("PARSER_T", 10) == ["src/lang/parser_test.py"]
    assert files.matching("parse", 2) == ["parse.toml", "src/lang/parser.py"]


def test_hidden_and_generated_directories_are_never_walked(tree: Path) -> None:
    found = ProjectFiles(str(tree)).matching("index", 10)

    assert found == ["docs/parser/index.md"]


def test_a_walk_longer_than_its_budget_resumes_at_the_next_completion(tree: Path) -> None:
    # Every clock reading costs a whole budget: one file per completion.
    files = ProjectFiles(str(tree), SteppingClock(step=WALK_BUDGET_S))

    seen = [len(files.matching("", 100)) for _ in range(6)]

    assert seen == [1, 2, 3, 4, 5, 5]


def test_a_listing_older_than_fresh_s_is_walked_again(tree: Path) -> None:
    clock = SteppingClock()
    files = ProjectFiles(str(tree), clock)
    assert files.matching("new_module", 10) == []
    make(tree, "src/new_module.py")

    assert files.matching("new_module", 10) == []  # the listing is still fresh
    clock.now += FRESH_S
    assert files.matching("new_module", 10) == ["src/new_module.py"]
