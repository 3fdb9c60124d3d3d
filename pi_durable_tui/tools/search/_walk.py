"""The pure-Python search engine: walk and read through the ``ExecutionEnv``.

Used where ``rg`` is not installed (on this machine or the SSH host), and as the
reference the ``rg`` engine is held to. The walk lists one directory at a time
(``list_dir``, sorted by name), reads each directory's ``.gitignore`` as it
enters it, and never follows a symlink. Files are matched line by line with
Python's ``re``.

Binary files: like ``rg``, a file is treated as binary from its first NUL byte.
A NUL in the first 64 KiB skips the file; a later one ends the search of the
file at the line holding it (``rg`` stops at the 64 KiB buffer holding it, so
the two can differ only on such files).
"""

from __future__ import annotations

import asyncio
import posixpath
import re
from collections.abc import AsyncIterator

from pi_durable_tui.env import ExecutionEnv, FileError
from pi_durable_tui.tools.search._engine import (
    FileCollector,
    GrepLine,
    GrepQuery,
    LineCollector,
    SearchError,
)
from pi_durable_tui.tools.search._globs import Patterns
from pi_durable_tui.tools.search._ignore import (
    GIT_DIR,
    IGNORE_FILE,
    IgnoreRules,
    read_ignore_layer,
    rules_above,
)

BINARY_PROBE_BYTES = 65536
"""A NUL byte this early makes the whole file binary (``rg``'s first buffer)."""


def compile_pattern(pattern: str, *, ignore_case: bool) -> re.Pattern[str]:
    """Compile a grep pattern, or raise ``SearchError`` saying what is wrong with it."""
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as error:
        raise SearchError(f"Invalid regular expression {pattern!r}: {error}") from None


class WalkEngine:
    """``SearchEngine`` in Python over any environment."""

    name = "walk"

    async def files(
        self,
        env: ExecutionEnv,
        root: str,
        collector: FileCollector,
        abort: asyncio.Event | None = None,
    ) -> None:
        """Feed every searchable file under ``root`` to ``collector``."""
        rules = await rules_above(env, root, abort)
        async for relative in walk_files(env, root, rules, None, abort):
            collector.add(relative)

    async def grep(
        self,
        env: ExecutionEnv,
        query: GrepQuery,
        collector: LineCollector,
        abort: asyncio.Event | None = None,
    ) -> None:
        """Feed the lines of ``query`` to ``collector`` (see ``SearchEngine.grep``)."""
        regex = compile_pattern(query.pattern, ignore_case=query.ignore_case)
        info = await env.file_info(query.root, abort=abort)
        if info.kind != "directory":
            name = posixpath.basename(query.root)
            await _grep_file(env, query.root, name, regex, query.context, collector, abort)
            return
        rules = await rules_above(env, query.root, abort)
        override = Patterns([query.glob]) if query.glob else None
        async for relative in walk_files(env, query.root, rules, override, abort):
            path = env.join_path(query.root, relative)
            await _grep_file(env, path, relative, regex, query.context, collector, abort)


async def walk_files(
    env: ExecutionEnv,
    root: str,
    rules: IgnoreRules,
    override: Patterns | None,
    abort: asyncio.Event | None,
) -> AsyncIterator[str]:
    """Yield the searchable files under ``root``, relative to it, depth-first by name.

    Args:
        env: The environment to walk.
        root: An absolute directory.
        rules: The ignore rules from above ``root``.
        override: A grep ``glob``: what it selects is searched even when ignored,
            what its ``!`` form selects is skipped, and with a selecting glob a
            file it does not select is skipped (``rg --glob``).
        abort: Stops the walk when set.
    """
    async for relative in _visit(env, root, "", rules, override, abort):
        yield relative


async def _visit(
    env: ExecutionEnv,
    directory: str,
    prefix: str,
    rules: IgnoreRules,
    override: Patterns | None,
    abort: asyncio.Event | None,
) -> AsyncIterator[str]:
    try:
        entries = await env.list_dir(directory, abort=abort)
    except FileError as error:
        if error.code == "aborted" or not prefix:
            raise
        return  # an unreadable directory below the root is skipped, as rg does
    if any(entry.name == IGNORE_FILE and entry.kind == "file" for entry in entries):
        rules = rules.with_layer(await read_ignore_layer(env, directory, abort))
    for entry in entries:
        if entry.name == GIT_DIR or entry.kind not in ("file", "directory"):
            continue
        relative = f"{prefix}{entry.name}"
        path = env.join_path(directory, entry.name)
        is_dir = entry.kind == "directory"
        if not _selected(relative, path, is_dir, rules, override):
            continue
        if is_dir:
            async for found in _visit(env, path, relative + "/", rules, override, abort):
                yield found
        else:
            yield relative


def _selected(
    relative: str, path: str, is_dir: bool, rules: IgnoreRules, override: Patterns | None
) -> bool:
    if override is not None:
        verdict = override.verdict(relative, is_dir=is_dir)
        if verdict is not None:
            return verdict
        if not is_dir and override.has_positive:
            return False
    return not rules.ignores(path, is_dir=is_dir)


async def _grep_file(
    env: ExecutionEnv,
    path: str,
    shown: str,
    regex: re.Pattern[str],
    context: int,
    collector: LineCollector,
    abort: asyncio.Event | None,
) -> None:
    try:
        data = await env.read_binary_file(path, abort=abort)
    except FileError as error:
        if error.code == "aborted":
            raise
        return  # unreadable files are skipped, as rg --no-messages does
    nul = data.find(b"\0")
    if 0 <= nul < BINARY_PROBE_BYTES:
        return
    if nul >= 0:
        data = data[: data.rfind(b"\n", 0, nul) + 1]
    pieces = data.split(b"\n")
    if pieces and not pieces[-1]:
        pieces.pop()  # a final newline ends the last line, it does not start one
    lines = [piece.decode("utf-8", "replace") for piece in pieces]
    hits = [index for index, line in enumerate(lines) if regex.search(line)]
    shown_upto = -1
    for position, hit in enumerate(hits):
        for index in range(max(hit - context, shown_upto + 1), hit):
            collector.add(GrepLine(shown, index + 1, lines[index], False))
        collector.add(GrepLine(shown, hit + 1, lines[hit], True))
        following = hits[position + 1] if position + 1 < len(hits) else len(lines)
        last = min(hit + context, following - 1, len(lines) - 1)
        for index in range(hit + 1, last + 1):
            collector.add(GrepLine(shown, index + 1, lines[index], False))
        shown_upto = max(hit, last)
