"""What a search engine is: the queries, the results, and the limit both engines obey.

An engine (``SearchEngine``) lists the files a search may look at and greps
them, under the rules of ``_ignore``. Two implement it: ``RipgrepEngine`` runs
``rg`` through the environment, ``WalkEngine`` walks and reads through it in
Python. Their results are equal by contract (``tests/tools/search``): both feed
their lines to one ``LineCollector`` and their file names to one
``FileCollector``, which decide where a limit stops the output, so the two can
differ only in speed.

Order: files come depth-first, the entries of each directory sorted by name
(``rg --sort path``); grep lines come in file order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from pi_durable_tui.env import ExecutionEnv


class SearchError(ValueError):
    """A query that cannot run (a bad regex): its message is for the model."""


@dataclass(frozen=True, slots=True)
class GrepQuery:
    """One grep.

    Attributes:
        pattern: A regular expression, matched against each line.
        root: The absolute file or directory to search.
        glob: Only files whose path relative to ``root`` matches this gitignore-
            style glob (``*.py`` anywhere, ``src/**/*.ts`` from the root; a
            leading ``!`` excludes instead). A file the glob selects is searched
            even when a ``.gitignore`` ignores it, as ``rg --glob`` does.
        ignore_case: Match without regard to case.
        context: Lines shown before and after each match.
        limit: The most matching lines returned.
    """

    pattern: str
    root: str
    glob: str | None = None
    ignore_case: bool = False
    context: int = 0
    limit: int = 100


@dataclass(frozen=True, slots=True)
class GrepLine:
    """One line of grep output: a match or a context line, in a file."""

    path: str
    number: int
    text: str
    match: bool


@dataclass(frozen=True, slots=True)
class GrepResult:
    """The lines of a grep, and whether matches beyond the limit exist."""

    lines: tuple[GrepLine, ...]
    matches: int
    more: bool


@dataclass(frozen=True, slots=True)
class FileList:
    """Files (paths relative to the root, ``/``-separated) and whether more matched."""

    paths: tuple[str, ...]
    more: bool


class StopSearch(Exception):
    """Raised inside an engine once its collector has all it will keep."""


async def run_until_stopped(search: Awaitable[None]) -> None:
    """Await an engine call, which ends early by its collector's ``StopSearch``."""
    with contextlib.suppress(StopSearch):
        await search


@dataclass
class LineCollector:
    """Gathers grep lines up to a match limit; both engines feed it in file order.

    ``add`` raises ``StopSearch`` at the first match past the limit. Context lines
    after the last kept match are kept only within ``context`` lines of it (an
    engine may have sent the next match's leading context first).
    """

    limit: int
    context: int
    lines: list[GrepLine] = field(default_factory=list)
    matches: int = 0
    more: bool = False

    def add(self, line: GrepLine) -> None:
        """Take one line; raise ``StopSearch`` when the limit is passed."""
        if line.match:
            if self.matches >= self.limit:
                self.more = True
                raise StopSearch
            self.matches += 1
        self.lines.append(line)

    def result(self) -> GrepResult:
        """The collected lines, trailing context trimmed when the limit stopped them."""
        lines = self.lines
        if self.more:
            last = max((i for i, line in enumerate(lines) if line.match), default=-1)
            if last >= 0:
                anchor = lines[last]
                tail = [
                    line
                    for line in lines[last + 1 :]
                    if line.path == anchor.path and line.number <= anchor.number + self.context
                ]
                lines = [*lines[: last + 1], *tail]
            else:
                lines = []
        return GrepResult(tuple(lines), self.matches, self.more)


@dataclass
class FileCollector:
    """Gathers the files a predicate keeps, up to a limit."""

    keep: Callable[[str], bool]
    limit: int
    paths: list[str] = field(default_factory=list)
    more: bool = False

    def add(self, path: str) -> None:
        """Take one file; raise ``StopSearch`` at the first kept file past the limit."""
        if not self.keep(path):
            return
        if len(self.paths) >= self.limit:
            self.more = True
            raise StopSearch
        self.paths.append(path)

    def result(self) -> FileList:
        """The kept files."""
        return FileList(tuple(self.paths), self.more)


class SearchEngine(Protocol):
    """Lists and greps the files of a search root under the ignore rules."""

    @property
    def name(self) -> str:
        """``rg`` or ``walk``, for details and benchmarks."""
        ...

    async def files(
        self,
        env: ExecutionEnv,
        root: str,
        collector: FileCollector,
        abort: asyncio.Event | None = None,
    ) -> None:
        """Feed every searchable file under ``root`` (a directory) to ``collector``."""
        ...

    async def grep(
        self,
        env: ExecutionEnv,
        query: GrepQuery,
        collector: LineCollector,
        abort: asyncio.Event | None = None,
    ) -> None:
        """Feed the matching and context lines of ``query`` to ``collector``.

        Raises:
            SearchError: The pattern is not a valid regular expression.
        """
        ...
