"""One MCP server's connection: started lazily, restarted after it died, closed at exit (issue 16).

Owns the life of a client session with the ``mcp`` SDK over stdio or streamable
HTTP. The SDK's transports are async context managers; one background task holds
them open, so calls from any task share the session. A call that finds the
server gone fails (a tool error) and drops the session: the next call starts the
server again. A call is never retried here, since a tool that is not read-only
must not run twice (R95); the harness decides what a cut call becomes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import httpx2

from pi_durable_tui.env import MARK_NAME, call_mark
from pi_durable_tui.harness.mcp._config import McpServerConfig

if TYPE_CHECKING:
    # REMINDER: the SDK is imported where a server starts, never at module import:
    # it costs about 0.3 s and 30 MiB, which every start of pidurable would pay
    # (`bench tui`'s first paint) though most sessions configure no server.
    from mcp import ClientSession
    from mcp import types as mcp_types

# REMINDER: a stdio server's stdin is the protocol, so the orphan guard of bash
# (a pipe on stdin) cannot watch it; this launcher asks Linux to SIGKILL the
# server when pidurable dies, however it dies (kill -9 included), then execs it.
_LAUNCHER = """
import ctypes, os, signal, sys
parent = int(sys.argv[1])
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass
if os.getppid() != parent:
    sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def _guarded(command: str, args: tuple[str, ...]) -> tuple[str, list[str]]:
    """The command and arguments that start ``command`` killed with this process."""
    return sys.executable, ["-c", _LAUNCHER, str(os.getpid()), command, *args]


class McpServerError(Exception):
    """The server could not be reached or failed the request: one line for a notice."""


class McpConnection:
    """The client side of one declared server.

    Args:
        config: The declaration.
        log_path: Where the server's stderr goes (the session's log); ``None``
            discards it. Never the terminal: a server's output could hold control
            sequences or secrets.
        cwd: The working directory of a stdio server.
    """

    def __init__(
        self, config: McpServerConfig, *, log_path: Path | None = None, cwd: Path | None = None
    ):
        self.config = config
        self._log_path = log_path
        self._cwd = cwd
        self._session: ClientSession | None = None
        self._runner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self.last_error: str | None = None
        self.starts = 0

    @property
    def state(self) -> str:
        """``"running"``, ``"failed"`` or ``"stopped"`` (for ``/mcp``)."""
        if self._session is not None:
            return "running"
        return "failed" if self.last_error is not None else "stopped"

    async def _serve(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        from mcp import ClientSession, StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client

        errlog: IO[str] | None = None
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self.config.command is not None:
                    errlog = stack.enter_context(
                        open(self._log_path or "/dev/null", "a", encoding="utf-8")  # noqa: SIM115
                    )
                    if shutil.which(self.config.command) is None:
                        raise FileNotFoundError(f"no program {self.config.command!r}")
                    command, args = _guarded(self.config.command, self.config.args)
                    # A mark of its own, as every process pidurable starts carries:
                    # a command running meanwhile never takes the server for an
                    # orphan it left, and the run guard ends it after a kill -9.
                    env = {MARK_NAME: call_mark(), **self.config.env}
                    params = StdioServerParameters(
                        command=command, args=args, env=env, cwd=self._cwd
                    )
                    read, write = await stack.enter_async_context(
                        stdio_client(params, errlog=errlog)
                    )
                else:
                    assert self.config.url is not None
                    client = await stack.enter_async_context(
                        httpx2.AsyncClient(headers=dict(self.config.headers))
                    )
                    read, write = await stack.enter_async_context(
                        streamable_http_client(self.config.url, http_client=client)
                    )
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                self._session = session
                ready.set_result(session)
                await stop.wait()
        except BaseException as error:
            if not ready.done():
                ready.set_exception(error)
            if isinstance(error, asyncio.CancelledError):
                raise
        finally:
            self._session = None

    async def session(self) -> ClientSession:
        """The live session, starting (or restarting) the server when there is none.

        Raises:
            McpServerError: When the server cannot be started or does not answer.
        """
        async with self._lock:
            if self._session is not None and self._runner is not None and not self._runner.done():
                return self._session
            await self._drop()
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[ClientSession] = loop.create_future()
            self._stop = asyncio.Event()
            self.starts += 1
            self._runner = asyncio.create_task(
                self._serve(ready, self._stop), name=f"mcp-{self.config.name}"
            )
            try:
                session = await ready
            except Exception as error:
                self.last_error = _one_line(error)
                await self._drop()
                raise McpServerError(
                    f"MCP server {self.config.name!r} did not start: {self.last_error}"
                ) from None
            self.last_error = None
            return session

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server offers (following pagination)."""
        from mcp import types as mcp_types

        session = await self.session()
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        while True:
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self._guard(session.list_tools(params=params))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call one tool once.

        Raises:
            McpServerError: The server is gone or refused the request.
        """
        session = await self.session()
        return await self._guard(session.call_tool(name, arguments))

    async def _guard(self, request: Any) -> Any:
        try:
            return await request
        except asyncio.CancelledError:
            raise
        except Exception as error:
            self.last_error = _one_line(error)
            await self.close()
            raise McpServerError(f"MCP server {self.config.name!r}: {self.last_error}") from None

    async def _drop(self) -> None:
        runner, self._runner = self._runner, None
        if self._stop is not None:
            self._stop.set()
        if runner is not None:
            try:
                await asyncio.wait_for(asyncio.shield(runner), timeout=5)
            except (Exception, asyncio.CancelledError):
                runner.cancel()
                with contextlib.suppress(BaseException):
                    await runner
        self._session = None

    async def close(self) -> None:
        """Stop the server (the SDK terminates a stdio process tree); safe to call twice."""
        await self._drop()


def _one_line(error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:300]
