"""One contract for both search engines, run against ``rg`` and the Python walk on LocalEnv.

The engines must return the same files and lines in the same order (depth-first
by name), under the same ignore rules (``.gitignore`` nested, negated and from
ancestors up to the repository root; ``.git`` skipped; dotfiles searched;
symlinks not followed), the same ``glob`` semantics, limits and context.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pi_durable_tui.env import LocalEnv
from pi_durable_tui.tools.search import (
    FileCollector,
    GrepQuery,
    GrepResult,
    LineCollector,
    RipgrepEngine,
    SearchEngine,
    SearchError,
    WalkEngine,
    run_until_stopped,
)
from tests.tools.search.tree_support import make_tree

HAS_RG = shutil.which("rg") is not None


@pytest.fixture(
    params=[
        pytest.param("rg", marks=pytest.mark.skipif(not HAS_RG, reason="rg is not installed")),
        "walk",
    ]
)
def engine(request: pytest.FixtureRequest) -> SearchEngine:
    return RipgrepEngine() if request.param == "rg" else WalkEngine()


async def list_files(
    engine: SearchEngine,
    root: Path,
    keep: Callable[[str], bool] = lambda _: True,
    limit: int = 1000,
) -> list[str]:
    collector = FileCollector(keep, limit)
    await run_until_stopped(engine.files(LocalEnv(str(root)), str(root), collector))
    return list(collector.result().paths)


async def grep(engine: SearchEngine, root: Path, pattern: str, **options: object) -> GrepResult:
    query = GrepQuery(pattern=pattern, root=str(root), **options)  # type: ignore[arg-type]
    collector = LineCollector(query.limit, query.context)
    await run_until_stopped(engine.grep(LocalEnv(str(root)), query, collector))
    return collector.result()


def shown(result: GrepResult) -> list[str]:
    return [
        f"{x.path}{':' if x.match else '-'}{x.number}{':' if x.match else '-'}{x.text}"
        for x in result.lines
    ]


async def test_files_come_depth_first_sorted_by_name_with_dotfiles_and_without_git(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(
        tmp_path,
        {
            "b.txt": "",
            "a/z.txt": "",
            "a.txt": "",
            ".github/ci.yml": "",
            ".env": "",
            ".git/config": "",
            "sub/.git": "gitdir: elsewhere",
            "sub/x.py": "",
        },
    )

    assert await list_files(engine, tmp_path) == [
        ".env",
        ".github/ci.yml",
        "a/z.txt",
        "a.txt",
        "b.txt",
        "sub/x.py",
    ]


async def test_gitignore_rules_apply_nested_negated_and_to_directories(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(
        tmp_path,
        {
            ".gitignore": "*.log\n!keep.log\nbuild/\n/top-only.txt\n",
            "a.log": "",
            "keep.log": "",
            "build/out.js": "",
            "src/build": "a file, not a dir",
            "top-only.txt": "",
            "src/top-only.txt": "",
            "src/.gitignore": "generated.py\n!a.log\n",
            "src/generated.py": "",
            "src/a.log": "",
            "src/main.py": "",
        },
    )

    assert await list_files(engine, tmp_path) == [
        ".gitignore",
        "keep.log",
        "src/.gitignore",
        "src/a.log",
        "src/build",
        "src/main.py",
        "src/top-only.txt",
    ]


async def test_ancestor_gitignores_apply_up_to_the_repository_root(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(
        tmp_path,
        {
            ".gitignore": "secret.txt\n",
            "plain/sub/secret.txt": "",
            "plain/sub/ok.txt": "",
            "repo/.git/HEAD": "",
            "repo/.gitignore": "*.tmp\n",
            "repo/inner/secret.txt": "",
            "repo/inner/x.tmp": "",
        },
    )

    assert await list_files(engine, tmp_path / "plain" / "sub") == ["ok.txt"]
    assert await list_files(engine, tmp_path / "repo" / "inner") == ["secret.txt"]


async def test_an_ignored_directory_given_as_the_root_is_searched(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(tmp_path, {".gitignore": "vendor/\n*.log\n", "vendor/lib.py": "", "vendor/x.log": ""})

    assert await list_files(engine, tmp_path) == [".gitignore"]
    assert await list_files(engine, tmp_path / "vendor") == ["lib.py"]


async def test_symlinks_are_not_followed(engine: SearchEngine, tmp_path: Path) -> None:
    make_tree(tmp_path, {"real/f.txt": "hi\n"})
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "file-link.txt").symlink_to(tmp_path / "real" / "f.txt")

    assert await list_files(engine, tmp_path) == ["real/f.txt"]
    assert shown(await grep(engine, tmp_path, "hi")) == ["real/f.txt:1:hi"]


async def test_file_listing_stops_at_the_limit_and_says_more_matched(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(tmp_path, {f"f{i:02}.py": "" for i in range(30)} | {"note.md": ""})
    collector = FileCollector(lambda path: path.endswith(".py"), 5)

    await run_until_stopped(engine.files(LocalEnv(str(tmp_path)), str(tmp_path), collector))

    assert collector.result().paths == ("f00.py", "f01.py", "f02.py", "f03.py", "f04.py")
    assert collector.result().more


async def test_grep_finds_matching_lines_in_file_order(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(
        tmp_path,
        {
            "b.py": "def b():\n    return 1\n",
            "a.py": "x = 1\ndef a():\n",
            "ignored.py": "def nope():\n",
            ".gitignore": "ignored.py\n",
            "crlf.txt": "def crlf():\r\nend\r\n",
        },
    )

    result = await grep(engine, tmp_path, r"^def \w+\(")

    assert shown(result) == ["a.py:2:def a():", "b.py:1:def b():", "crlf.txt:1:def crlf():\r"]
    assert (result.matches, result.more) == (3, False)


async def test_grep_ignores_case_on_request(engine: SearchEngine, tmp_path: Path) -> None:
    make_tree(tmp_path, {"f.txt": "Hello\nhello\nHELLO\nbye\n"})

    assert len((await grep(engine, tmp_path, "hello")).lines) == 1
    assert len((await grep(engine, tmp_path, "hello", ignore_case=True)).lines) == 3


async def test_grep_shows_context_lines_merged_around_matches(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(
        tmp_path,
        {
            "f.txt": "".join(f"line {i}\n" for i in range(1, 13))
            .replace("line 3\n", "hit 3\n")
            .replace("line 5\n", "hit 5\n")
            .replace("line 11\n", "hit 11\n")
        },
    )

    result = await grep(engine, tmp_path, "hit", context=1)

    assert shown(result) == [
        "f.txt-2-line 2",
        "f.txt:3:hit 3",
        "f.txt-4-line 4",
        "f.txt:5:hit 5",
        "f.txt-6-line 6",
        "f.txt-10-line 10",
        "f.txt:11:hit 11",
        "f.txt-12-line 12",
    ]


async def test_grep_stops_at_the_limit_keeping_the_last_matchs_context(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(
        tmp_path,
        {
            "a.txt": "hit\nx\ny\nz\nw\nhit\n",
            "b.txt": "hit\n",
        },
    )

    result = await grep(engine, tmp_path, "hit", context=1, limit=1)

    assert shown(result) == ["a.txt:1:hit", "a.txt-2-x"]
    assert (result.matches, result.more) == (1, True)
    exact = await grep(engine, tmp_path, "hit", limit=3)
    assert (exact.matches, exact.more) == (3, False)


async def test_grep_glob_selects_files_by_name_or_path(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(
        tmp_path,
        {
            "a.py": "hit\n",
            "a.txt": "hit\n",
            "src/b.py": "hit\n",
            "src/deep/c.py": "hit\n",
            ".gitignore": "*.log\ngen/\n",
            "x.log": "hit\n",
            "gen/d.py": "hit\n",
        },
    )

    def paths(result: GrepResult) -> list[str]:
        return [line.path for line in result.lines]

    assert paths(await grep(engine, tmp_path, "hit", glob="*.py")) == [
        "a.py",
        "src/b.py",
        "src/deep/c.py",
    ]
    assert paths(await grep(engine, tmp_path, "hit", glob="src/*.py")) == ["src/b.py"]
    assert paths(await grep(engine, tmp_path, "hit", glob="!*.py")) == ["a.txt"]
    # A glob naming an ignored file selects it, as rg --glob does; an ignored
    # directory is still not entered.
    assert paths(await grep(engine, tmp_path, "hit", glob="*.log")) == ["x.log"]


async def test_grep_skips_binary_files_and_searches_a_file_root(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(
        tmp_path, {"data.bin": b"hit\0\x01\x02", "text.txt": "hit\n", "bad.txt": b"hit \xff\n"}
    )

    assert shown(await grep(engine, tmp_path, "hit")) == ["bad.txt:1:hit \ufffd", "text.txt:1:hit"]
    assert shown(await grep(engine, tmp_path / "text.txt", "hit")) == ["text.txt:1:hit"]


async def test_an_invalid_pattern_fails_with_the_same_message_on_both_engines(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(tmp_path, {"f.txt": "x\n"})

    with pytest.raises(SearchError) as raised:
        await grep(engine, tmp_path, "(unclosed")

    assert str(raised.value) == (
        "Invalid regular expression '(unclosed': missing ), unterminated subpattern at position 0"
    )


async def test_a_pattern_only_python_accepts_still_works(
    engine: SearchEngine, tmp_path: Path
) -> None:
    make_tree(tmp_path, {"f.txt": "foobar\nfoobaz\n"})

    assert shown(await grep(engine, tmp_path, "foo(?=baz)")) == ["f.txt:2:foobaz"]
