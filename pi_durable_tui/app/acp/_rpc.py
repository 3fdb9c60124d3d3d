"""JSON-RPC 2.0 over newline-delimited JSON: the framing of the Agent Client Protocol (issue 15).

One object per line each way. ``Connection`` reads requests and notifications
from the client, runs each request in its own task (so ``session/cancel`` is
read while a ``session/prompt`` streams), answers with a ``result`` or an
``error``, and sends the agent's own requests (``session/request_permission``)
and notifications. A line that is not JSON is answered with a parse error
(-32700), a JSON value that is not a request with -32600, an unknown method
with -32601, bad parameters with -32602 (``RpcError``); the connection goes on
after each. End of input ends ``serve`` after the running requests are
cancelled, so the process exits with nothing left behind.

Written here rather than taken from the ``agent-client-protocol`` package: the
framing is a hundred lines, it keeps the product free of a second schema layer
(pydantic models of every ACP type) and lets every line pass through the
product's redactor on its way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from pi_durable_tui.app.agent import json_line

MAX_LINE = 4 * 1024 * 1024
"""The longest line read from the client; a longer one ends the connection."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

Handler = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""``handler(method, params)``: a request's result (a notification's is dropped)."""


class RpcError(Exception):
    """An error answer: ``code`` and a one-line ``message`` saying what to send instead."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Connection:
    """One client on a reader and a line writer.

    Args:
        reader: The client's lines.
        write: Writes one complete line (the caller redacts and flushes it).
        handler: Runs a request or a notification.
    """

    def __init__(
        self, reader: asyncio.StreamReader, write: Callable[[str], None], handler: Handler
    ) -> None:
        self._reader = reader
        self._write = write
        self._handler = handler
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._running: set[asyncio.Task[None]] = set()

    def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line."""
        self._write(json_line({"jsonrpc": "2.0", **message}) + "\n")

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification."""
        self.send({"method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request to the client and wait for its result.

        Raises:
            RpcError: The client answered with an error, or the connection ended.
        """
        self._next_id += 1
        ident = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        try:
            self.send({"id": ident, "method": method, "params": params})
            return await future
        finally:
            self._waiting.pop(ident, None)

    async def serve(self) -> None:
        """Read until end of input; then cancel what still runs and return."""
        try:
            while True:
                try:
                    line = await self._reader.readline()
                except ValueError:  # longer than the reader's limit: the stream is lost
                    self.send(_error(None, INVALID_REQUEST, f"a line longer than {MAX_LINE} bytes"))
                    return
                if not line:
                    return
                if line.strip():
                    self._receive(line)
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(RpcError(INTERNAL_ERROR, "the client went away"))
            for task in list(self._running):
                task.cancel()
            for task in list(self._running):
                with contextlib.suppress(BaseException):
                    await task

    def _receive(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError as error:
            self.send(_error(None, PARSE_ERROR, f"not JSON ({error}); send one object per line"))
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            ident = message.get("id") if isinstance(message, dict) else None
            self.send(
                _error(ident, INVALID_REQUEST, 'not a JSON-RPC 2.0 object ("jsonrpc": "2.0")')
            )
            return
        if "method" not in message:
            self._answered(message)
            return
        method, params = message["method"], message.get("params", {})
        if not isinstance(method, str) or not isinstance(params, dict):
            ident = message.get("id")
            self.send(_error(ident, INVALID_REQUEST, "method must be a string, params an object"))
            return
        task = asyncio.ensure_future(self._run(message.get("id"), "id" in message, method, params))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    def _answered(self, message: dict[str, Any]) -> None:
        future = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(RpcError(int(error.get("code", 0)), str(error.get("message"))))
        else:
            future.set_result(message.get("result"))

    async def _run(self, ident: Any, answer: bool, method: str, params: dict[str, Any]) -> None:
        try:
            result = await self._handler(method, params)
        except RpcError as error:
            reply = _error(ident, error.code, error.message)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # one request failed; the agent stays up
            reply = _error(ident, INTERNAL_ERROR, f"{type(error).__name__}: {error}")
        else:
            reply = {"id": ident, "result": result}
        if answer:
            self.send(reply)


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"id": ident, "error": {"code": code, "message": message}}
