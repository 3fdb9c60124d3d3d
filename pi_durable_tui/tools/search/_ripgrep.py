"""The ``rg`` search engine: ripgrep run through the ``ExecutionEnv``.

``rg`` runs where the files are (this machine, or the SSH host), with flags that
make its ignore rules the ones ``_ignore`` describes and its order the walk's:
``--hidden --no-require-git --no-ignore-dot --no-ignore-global
--no-ignore-exclude --glob !.git --sort path --no-config``. Grep reads ``--json``
events; the collector stops ``rg`` (its process group is killed) as soon as the
limit is passed, so a pattern matching everything costs what is shown.

A pattern ``rg`` rejects (its regex dialect is Rust's) is handed to the walk
engine, which uses Python's ``re``: a pattern either dialect accepts works, and
an invalid one fails with the same message on both engines.

``RipgrepEngine.available`` asks the environment whether ``rg`` runs there;
``AutoEngine`` asks once per environment and picks ``rg`` or the walk.
"""

from __future__ import annotations

import asyncio
import base64
import json
import posixpath
from collections.abc import Callable

from pi_durable_tui.env import ExecutionEnv, FileError, OutputStream, SkippedOutput
from pi_durable_tui.tools.search._engine import (
    FileCollector,
    GrepLine,
    GrepQuery,
    LineCollector,
    SearchEngine,
    StopSearch,
)
from pi_durable_tui.tools.search._walk import WalkEngine

RG_FLAGS = (
    "--no-config",
    "--hidden",
    "--no-require-git",
    "--no-ignore-dot",
    "--no-ignore-global",
    "--no-ignore-exclude",
    "--no-messages",
    "--sort",
    "path",
)
"""The flags that give ``rg`` the ignore rules and order of ``_ignore`` and the walk."""

_NOT_GIT = ("--glob", "!.git")
_REGEX_ERROR_MARKERS = ("regex parse error", "error parsing regex", "regex could not")


class RipgrepEngine:
    """``SearchEngine`` that runs ``rg``."""

    name = "rg"

    @staticmethod
    async def available(env: ExecutionEnv, abort: asyncio.Event | None = None) -> bool:
        """Whether ``rg --version`` runs in ``env``."""
        try:
            result = await env.exec(["rg", "--version"], cwd=env.cwd, abort=abort)
        except FileError as error:
            if error.code == "aborted":
                raise
            return False
        return result.exit_code == 0

    async def files(
        self,
        env: ExecutionEnv,
        root: str,
        collector: FileCollector,
        abort: asyncio.Event | None = None,
    ) -> None:
        """Feed ``rg --files`` under ``root`` to ``collector``."""
        lines = _LineSplitter(
            lambda line: collector.add(_relative(line.decode("utf-8", "replace")))
        )
        await _run(env, ["rg", "--files", *RG_FLAGS, *_NOT_GIT, "--", "."], root, lines, abort)

    async def grep(
        self,
        env: ExecutionEnv,
        query: GrepQuery,
        collector: LineCollector,
        abort: asyncio.Event | None = None,
    ) -> None:
        """Feed the ``--json`` match and context events of ``rg`` to ``collector``."""
        argv = ["rg", "--json", *RG_FLAGS]
        if query.ignore_case:
            argv.append("--ignore-case")
        if query.context:
            argv += ["--context", str(query.context)]
        if query.glob:
            argv += ["--glob", query.glob]
        info = await env.file_info(query.root, abort=abort)
        if info.kind == "directory":
            cwd, target = query.root, "."
        else:
            cwd, target = posixpath.dirname(query.root), posixpath.basename(query.root)
        argv += [*_NOT_GIT, "--regexp", query.pattern, "--", target]
        events = _LineSplitter(lambda line: _grep_event(line, collector))
        stderr = await _run(env, argv, cwd, events, abort)
        if stderr is not None and any(marker in stderr for marker in _REGEX_ERROR_MARKERS):
            await WalkEngine().grep(env, query, collector, abort)
        elif stderr is not None:
            raise RuntimeError(f"rg failed: {stderr.strip().splitlines()[0]}")


class AutoEngine:
    """``rg`` where the environment has it, the walk elsewhere (asked once per env)."""

    def __init__(self) -> None:
        self._chosen: dict[str, SearchEngine] = {}

    @property
    def name(self) -> str:
        """``auto``."""
        return "auto"

    async def choose(self, env: ExecutionEnv, abort: asyncio.Event | None = None) -> SearchEngine:
        """The engine for ``env``."""
        engine = self._chosen.get(env.id)
        if engine is None:
            has_rg = await RipgrepEngine.available(env, abort)
            engine = RipgrepEngine() if has_rg else WalkEngine()
            self._chosen[env.id] = engine
        return engine

    async def files(
        self,
        env: ExecutionEnv,
        root: str,
        collector: FileCollector,
        abort: asyncio.Event | None = None,
    ) -> None:
        """``files`` of the chosen engine."""
        await (await self.choose(env, abort)).files(env, root, collector, abort)

    async def grep(
        self,
        env: ExecutionEnv,
        query: GrepQuery,
        collector: LineCollector,
        abort: asyncio.Event | None = None,
    ) -> None:
        """``grep`` of the chosen engine."""
        await (await self.choose(env, abort)).grep(env, query, collector, abort)


class _LineSplitter:
    """Cuts a byte stream into lines for a handler (the last unterminated one at the end)."""

    def __init__(self, handle: Callable[[bytes], None]) -> None:
        self._handle = handle
        self._pending = b""

    def feed(self, chunk: bytes) -> None:
        data = self._pending + chunk
        *complete, self._pending = data.split(b"\n")
        for line in complete:
            if line:
                self._handle(line)

    def finish(self) -> None:
        if self._pending:
            line, self._pending = self._pending, b""
            self._handle(line)


async def _run(
    env: ExecutionEnv,
    argv: list[str],
    cwd: str,
    lines: _LineSplitter,
    abort: asyncio.Event | None,
) -> str | None:
    """Run ``rg``, feeding stdout to ``lines``; the stderr text when it failed, else ``None``."""
    errors: list[bytes] = []

    def on_output(chunk: bytes, stream: OutputStream, skipped: SkippedOutput | None) -> None:
        del skipped  # no window is asked for, so nothing is skipped
        if stream == "stderr":
            errors.append(chunk)
        else:
            lines.feed(chunk)

    try:
        result = await env.exec(argv, cwd=cwd, on_output=on_output, abort=abort)
        lines.finish()
    except StopSearch:
        return None
    # 0: found, 1: nothing found, 2: an error (file errors are silenced by --no-messages).
    stderr = b"".join(errors).decode("utf-8", "replace")
    if result.exit_code in (0, 1) or (result.exit_code == 2 and not stderr.strip()):
        return None
    return stderr or f"exit code {result.exit_code}"


def _relative(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _text(value: dict[str, str]) -> str:
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", "replace")


def _grep_event(line: bytes, collector: LineCollector) -> None:
    event = json.loads(line)
    kind = event.get("type")
    if kind not in ("match", "context"):
        return
    data = event["data"]
    text = _text(data["lines"])
    if text.endswith("\n"):
        text = text[:-1]
    path = _relative(_text(data["path"]))
    collector.add(GrepLine(path, int(data["line_number"]), text, kind == "match"))
