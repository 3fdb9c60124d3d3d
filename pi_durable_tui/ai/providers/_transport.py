"""HTTP transport of the streaming providers: client, errors, SSE reading, abort.

Owns the shared ``httpx.AsyncClient`` factory (``create_client``), the reading
of an SSE response (``stream_sse``), the translation of every transport failure
into a ``StreamFailure`` with readable words, ``retry-after`` parsing, request
body encoding and the redaction of secrets. Implements model-layer.md 2.1 (SSE
over httpx, status checked before the event stream is opened, never
``aiter_lines``), the abort and failure rules of 1.4 and the lone-surrogate
rule of 1.11. A connection failure and a 404 name the URL that was tried, and a
404 on a path without ``/v1`` says the base URL probably lacks it (the usual
mistake with local servers, issue 7). A 404 whose message names the model sent
(Ollama's "model not found", vLLM's "does not exist") says so instead and lists
the models the server serves (``GET .../models``, one bounded request); a web
page where an event stream was expected says the URL is not the API's; the idle
timeout says how to wait longer.

Abort without a task per read: ``AbortWatch`` runs one watcher task per stream.
When the abort event is set while a read is waiting, the watcher cancels the
reading task and the read turns that cancellation back into ``StreamAborted``;
between reads the event is simply checked. The idle timeout is httpx's read
timeout (no byte for that long fails the read), set per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import re
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

import httpx
from httpx_sse import EventSource, ServerSentEvent

_T = TypeVar("_T")

DEFAULT_TIMEOUT = httpx.Timeout(connect=30.0, read=None, write=60.0, pool=30.0)
"""Client timeouts; the read timeout is replaced per request by the idle timeout."""

ERROR_BODY_LIMIT = 64 * 1024
"""Bytes of an error body read at most."""

ERROR_TEXT_CHARS = 500
"""Characters of a non-JSON error body kept in the message."""

REDACTED = "[redacted]"

IDLE_TIMEOUT_ADVICE = 'set "stream": {"idle_timeout_s": 600} in settings'
"""How to wait longer for a server, said when the idle timeout fails a stream."""


class StreamFailure(Exception):
    """A request or stream that failed, described for people and for retry logic.

    Args:
        message: What went wrong, already free of secrets.
        status: The HTTP status (or the status a provider error event stands for).
        retry_after_ms: How long the server asked to wait, when it said.
        retryable: The transport's own verdict, or ``None`` to classify later.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after_ms: int | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after_ms = retry_after_ms
        self.retryable = retryable


class StreamAborted(Exception):
    """The caller's abort event was set; the response has been closed."""


def create_client(*, timeout: httpx.Timeout = DEFAULT_TIMEOUT) -> httpx.AsyncClient:
    """Create the HTTP client shared by the providers of one process or test.

    Args:
        timeout: Connect, write and pool timeouts; the read timeout is set per
            request from ``StreamOptions.idle_timeout_s``.

    Returns:
        A new client; whoever created it closes it with ``aclose()``.
    """
    return httpx.AsyncClient(timeout=timeout, follow_redirects=False)


def encode_json_body(body: Mapping[str, Any]) -> bytes:
    """Encode a request body as UTF-8 JSON without lone UTF-16 surrogates.

    Args:
        body: The JSON request body.

    Returns:
        The encoded bytes.
    """
    # REMINDER: every character except a surrogate encodes in UTF-8, so
    # errors="ignore" removes exactly the lone surrogates (model-layer.md 1.11),
    # which the APIs reject as invalid JSON when escaped as \udXXX.
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "ignore")


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace every secret in ``text``.

    Args:
        text: A message that may quote a secret (servers echo keys back).
        secrets: The values to hide; empty values are ignored.

    Returns:
        The text with each secret replaced by ``[redacted]``.
    """
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, REDACTED)
    return text


_SECRET_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|cookie", re.IGNORECASE)


def secrets_of(headers: Mapping[str, str]) -> tuple[str, ...]:
    """Return the header values that are credentials, to keep out of every message.

    Args:
        headers: Request headers.

    Returns:
        The values of authorization, key, token, secret and cookie headers, with
        a bearer token also listed without its ``Bearer`` prefix.
    """
    found: list[str] = []
    for name, value in headers.items():
        if value and _SECRET_HEADER.search(name):
            found.append(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.lower() == "bearer":
                found.append(token.strip())
    return tuple(found)


def parse_retry_after_ms(headers: Mapping[str, str], *, now: float | None = None) -> int | None:
    """Read how long the server asks to wait, from ``retry-after-ms`` or ``retry-after``.

    Args:
        headers: Response headers (case-insensitive mapping).
        now: The current Unix time, for an HTTP-date value; defaults to the clock.

    Returns:
        Milliseconds to wait (never negative), or ``None`` when absent or unreadable.
    """
    millis = headers.get("retry-after-ms")
    if millis:
        with contextlib.suppress(ValueError):
            return max(0, round(float(millis)))
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0, round(float(value) * 1000))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return max(0, round((when.timestamp() - current) * 1000))


def describe_error_body(status: int, body: bytes, reason: str = "") -> str:
    """Turn a non-2xx response body into a readable message.

    JSON bodies give the provider's own message (``error.message`` with its
    ``error.type``, a string ``error``, ``message`` or ``detail``); other bodies
    give their first ``ERROR_TEXT_CHARS`` characters.

    Args:
        status: The HTTP status.
        body: The (possibly truncated) body.
        reason: The HTTP reason phrase, used when the body says nothing.

    Returns:
        ``"HTTP <status>: <message>"``.
    """
    text = body.decode("utf-8", "replace")
    message: str | None = None
    with contextlib.suppress(ValueError):
        message = _message_of(json.loads(text))
    if not message:
        message = " ".join(text.split())[:ERROR_TEXT_CHARS] or reason or "no details"
    return f"HTTP {status}: {message}"


def _message_of(data: Any) -> str | None:
    if isinstance(data, list) and data:
        return _message_of(data[0])
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        text = error.get("message")
        kind = error.get("type") or error.get("code")
        if isinstance(text, str) and text:
            return f"{kind}: {text}" if isinstance(kind, str) and kind not in text else text
        return _message_of(error)
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


class AbortWatch:
    """Races reads against an abort event with one watcher task per stream.

    Args:
        abort: The caller's abort event, or ``None`` for a stream that cannot be
            aborted (then ``read`` is a plain await).
    """

    def __init__(self, abort: asyncio.Event | None) -> None:
        self._abort = abort
        self._watcher: asyncio.Task[None] | None = None
        self._reader: asyncio.Task[Any] | None = None
        self._cancelled_by_us = False

    def start(self) -> None:
        """Start watching (inside the event loop)."""
        if self._abort is not None and self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def stop(self) -> None:
        """Stop watching; call when the stream ends."""
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None

    async def _watch(self) -> None:
        assert self._abort is not None
        await self._abort.wait()
        # REMINDER: cancel only while a read is waiting. Between reads the
        # consumer's own code runs in this task and must never see our
        # cancellation; the next read checks the event instead.
        if self._reader is not None:
            self._cancelled_by_us = True
            self._reader.cancel()

    async def read(self, start: Callable[[], Awaitable[_T]]) -> _T:
        """Await ``start()`` unless the abort event is (or becomes) set.

        Args:
            start: Creates the awaitable; not called when already aborted.

        Returns:
            The awaitable's result.

        Raises:
            StreamAborted: When the abort event was set before or during the read.
        """
        if self._abort is None:
            return await start()
        if self._abort.is_set():
            raise StreamAborted
        task = asyncio.current_task()
        self._reader = task
        try:
            return await start()
        except asyncio.CancelledError:
            if self._cancelled_by_us and task is not None:
                self._cancelled_by_us = False
                # Only our own cancellation becomes an abort; a caller's
                # cancellation (task.cancelling() still > 0) propagates.
                if task.uncancel() == 0:
                    raise StreamAborted from None
            raise
        finally:
            self._reader = None


async def stream_sse(
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    idle_timeout_s: float | None,
    abort: asyncio.Event | None,
    secrets: tuple[str, ...] = (),
) -> AsyncGenerator[ServerSentEvent, None]:
    """POST a JSON body and yield the server-sent events of the response.

    The HTTP status is checked before any event is read: a non-2xx response is
    read (up to ``ERROR_BODY_LIMIT`` bytes) into a ``StreamFailure``. Closing
    the generator, or cancelling the task that iterates it, closes the response.

    Args:
        client: The HTTP client.
        url: The endpoint.
        headers: Request headers (credentials included).
        body: The JSON body.
        idle_timeout_s: Seconds without a byte before the stream fails; ``None``
            waits forever.
        abort: When set, the stream stops at once with ``StreamAborted``.
        secrets: Values that must never appear in an error message.

    Yields:
        Each event, in order. The generator ends at the end of the body; whether
        that end was expected is the caller's decision.

    Raises:
        StreamFailure: For HTTP errors, unexpected content, timeouts and dropped
            connections.
        StreamAborted: When the abort event was set.
    """
    watch = AbortWatch(abort)
    watch.start()
    timeout = httpx.Timeout(
        connect=client.timeout.connect,
        read=idle_timeout_s,
        write=client.timeout.write,
        pool=client.timeout.pool,
    )
    try:
        async with contextlib.AsyncExitStack() as stack:
            request = client.stream(
                "POST", url, content=encode_json_body(body), headers=dict(headers), timeout=timeout
            )
            try:
                response = await watch.read(lambda: stack.enter_async_context(request))
                if not _is_event_stream(response):
                    message = await watch.read(lambda: _refusal_of(response, url))
                    if response.status_code == 404 and _names_the_model(message, body):
                        served = await watch.read(lambda: served_models(client, url, headers))
                        message += f" ({unknown_model_hint(str(body['model']), url, served)})"
                    elif response.status_code == 404:
                        message += f" ({not_found_hint(url)})"
                    raise StreamFailure(
                        redact(message, secrets),
                        status=response.status_code,
                        retry_after_ms=parse_retry_after_ms(response.headers),
                        retryable=False if response.is_success else None,
                    )
                events = EventSource(response).aiter_sse()
                stack.push_async_callback(events.aclose)
                while True:
                    try:
                        event = await watch.read(events.__anext__)
                    except StopAsyncIteration:
                        return
                    yield event
            except httpx.HTTPError as error:
                raise _failure_of(error, url, idle_timeout_s, secrets) from None
    finally:
        watch.stop()


def _is_event_stream(response: httpx.Response) -> bool:
    content_type = response.headers.get("content-type", "")
    return response.is_success and "text/event-stream" in content_type


async def _refusal_of(response: httpx.Response, url: str) -> str:
    """Describe a response that is not an event stream (an error, a page, plain JSON)."""
    body = await _read_limited(response)
    if not response.is_success:
        return describe_error_body(response.status_code, body, response.reason_phrase)
    content_type = response.headers.get("content-type", "")
    snippet = " ".join(body.decode("utf-8", "replace").split())[:ERROR_TEXT_CHARS]
    message = (
        f"Expected an event stream but the server sent "
        f"{content_type or 'no content type'}: {snippet or 'an empty body'}"
    )
    if "html" in content_type:
        # A web page where an API was expected: the base URL names the server's
        # site (a web UI, a proxy's landing page), not its API.
        message += f" (POST {url} answered with a web page, not the API{_v1_advice(url)})"
    return message


def _names_the_model(message: str, body: Mapping[str, Any]) -> bool:
    """Whether a refusal is about the model asked for (Ollama, vLLM, OpenAI word it so)."""
    model = body.get("model")
    lowered = message.lower()
    named = isinstance(model, str) and bool(model) and model.lower() in lowered
    return named and "model" in lowered


def models_url(url: str) -> str:
    """The ``/models`` listing beside an endpoint (``/v1/chat/completions`` -> ``/v1/models``).

    Args:
        url: The endpoint that was tried.

    Returns:
        The listing URL.
    """
    for endpoint in ("/chat/completions", "/responses", "/messages"):
        if url.endswith(endpoint):
            return url.removesuffix(endpoint) + "/models"
    return url.rsplit("/", 1)[0] + "/models"


MODELS_LISTED = 20
"""Model ids a "no such model" message names at most."""

MODELS_LISTING_TIMEOUT_S = 5.0
"""How long the listing asked for after a "no such model" refusal may take."""


async def served_models(
    client: httpx.AsyncClient, url: str, headers: Mapping[str, str]
) -> list[str]:
    """Ask the server which models it serves (``GET .../models``), for a refusal's message.

    Every OpenAI-compatible server (llama.cpp, Ollama, vLLM, LM Studio) and the
    Anthropic API answer ``{"data": [{"id": ...}, ...]}`` there. Anything else
    (an error, a timeout, another shape) gives no list: the message then says
    where to look.

    Args:
        client: The HTTP client.
        url: The endpoint the refused request went to.
        headers: That request's headers (the server may want its key here too).

    Returns:
        Up to ``MODELS_LISTED`` ids, in the server's order; empty when unknown.
    """
    timeout = httpx.Timeout(MODELS_LISTING_TIMEOUT_S)
    try:
        async with client.stream(
            "GET", models_url(url), headers=dict(headers), timeout=timeout
        ) as response:
            if not response.is_success:
                return []
            data = json.loads(await _read_limited(response))
    except (httpx.HTTPError, ValueError):
        return []
    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return []
    ids = [row["id"] for row in rows if isinstance(row, dict) and isinstance(row.get("id"), str)]
    # REMINDER: the ids come from the server: keep them short and printable, the
    # message is committed and shown.
    return [" ".join(i.split())[:80] for i in ids if i.strip()][:MODELS_LISTED]


def unknown_model_hint(model: str, url: str, served: list[str]) -> str:
    """Say that the server lacks the model, and which ones it has (or where to look).

    Args:
        model: The id that was sent.
        url: The endpoint that was tried.
        served: What ``served_models`` found.

    Returns:
        ``the server at <base> has no model '<id>'; it serves: a, b`` or, with no
        list, where the server lists its models.
    """
    listing = models_url(url)
    base = listing.removesuffix("/models")
    head = f"the server at {base} has no model {model!r}"
    if served:
        return f"{head}; it serves: {', '.join(served)}"
    return f"{head}; GET {listing} lists the ones it serves"


def not_found_hint(url: str) -> str:
    """Say which URL answered 404, and suggest ``/v1`` when its path lacks it.

    Args:
        url: The endpoint that was tried.

    Returns:
        ``POST <url> was not found``, plus the ``/v1`` advice when it applies.
    """
    return f"POST {url} was not found{_v1_advice(url)}"


def _v1_advice(url: str) -> str:
    if "/v1" in httpx.URL(url).path:
        return ""
    return (
        "; the path has no /v1: OpenAI-compatible servers (llama.cpp, Ollama, vLLM, "
        "LM Studio) usually want a base URL ending in /v1, such as http://localhost:8080/v1"
    )


async def _read_limited(response: httpx.Response) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size >= ERROR_BODY_LIMIT:
            break
    return b"".join(parts)[:ERROR_BODY_LIMIT]


def _failure_of(
    error: httpx.HTTPError, url: str, idle_timeout_s: float | None, secrets: tuple[str, ...]
) -> StreamFailure:
    detail = redact(str(error) or type(error).__name__, secrets)
    if isinstance(error, httpx.ReadTimeout) and idle_timeout_s is not None:
        message = (
            f"Stream idle timeout: no data from the server for {idle_timeout_s:g} s "
            f"(a slow local model may need longer: {IDLE_TIMEOUT_ADVICE})"
        )
    elif isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout)):
        message = redact(f"Connection failed to {url}: {detail} (is the server running?)", secrets)
    elif isinstance(error, httpx.TimeoutException):
        message = f"Request timed out: {detail}"
    elif isinstance(error, (httpx.RemoteProtocolError, httpx.ReadError)):
        message = f"Connection dropped mid-stream: {detail}"
    elif isinstance(error, httpx.TransportError):
        message = f"Network error: {detail}"
    else:
        message = f"HTTP error: {detail}"
    # Transport failures are transient by nature; a broken request is not.
    retryable = isinstance(error, httpx.TransportError) and not isinstance(
        error, (httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.ProxyError)
    )
    return StreamFailure(message, retryable=retryable)
