"""Streamed partials committed to ``pi.live.generation.message`` with a throttle (R85).

A partial with empty content (no block yet: the start of a response) is never
committed. The commits are the harness's ``ThrottledCommitter``
(``harness/_progress.py``, shared with tool output): at most one in flight, at
most every ``progress.partial_interval_ms`` (100 ms by default), the first one an
interval after the request started (``hold``: a response that completes sooner
commits no partial; its classification shows it whole); the partial is read (and
copied) when the commit runs, so the newest one wins. The committer keeps the
newest *event*, not its partial: a delta event builds its partial only when read
(``pi_durable_tui.ai`` stream events), so a long answer pays for its growing
text once per commit, not once per delta. ``stop()`` ends the throttle and awaits a
commit in flight, so no stale partial lands after the classification commit.

A partial is a text still growing: a secret can be cut anywhere by the chunks
that built it. Before it is committed, its text, thinking and tool-call
argument strings pass through the harness's ``SecretRedactor.streaming``
(issue 13), which withholds an end that could be the start of a secret until
later chunks show what it is; a secret split over any number of chunks is
therefore never committed, not even in part. The commit then redacts every
string as every commit does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_durable_tui.ai import AssistantEvent, StartEvent
from pi_durable_tui.harness._progress import ProgressThrottle, ThrottledCommitter, now_ms
from pi_durable_tui.harness._runtime import HarnessRuntime
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness.state import LIVE_DOC, dump
from pi_durable_tui.kernel import Tx


class PartialCommitter:
    """Commits the newest streamed partial of one request attempt.

    Args:
        runtime: The generation's runtime.
        services: The harness services (the streaming redactor).
        attempt: The attempt the partial belongs to.
        interval_ms: The least time between two partial commits.
    """

    def __init__(
        self, runtime: HarnessRuntime, services: HarnessServices, attempt: int, interval_ms: int
    ) -> None:
        self._runtime = runtime
        self._services = services
        self._attempt = attempt
        self._latest: AssistantEvent | None = None
        throttle = ProgressThrottle(min_interval_ms=interval_ms)
        # REMINDER: the stream's start counts as the last commit, so a response that
        # completes within one interval (most tool-calling turns) commits no partial
        # at all: its classification commit shows it whole.
        throttle.hold(now_ms())
        self._committer = ThrottledCommitter(self._commit, throttle)

    def update(self, event: AssistantEvent) -> None:
        """Offer the newest event's partial; empty ones are ignored (R85).

        Only ``start`` has an empty partial (every later event follows a block's
        start), so the partial itself is not read here.
        """
        if self._committer.stopped or (isinstance(event, StartEvent) and not event.partial.content):
            return
        self._latest = event
        self._committer.changed()

    async def _commit(self) -> int:
        event = self._latest
        message = getattr(event, "partial", None)
        if message is None or not message.content:
            return 0
        stored = withheld(dump(message), self._services.redactor.streaming)
        conversation_id = self._runtime.conversation_id
        attempt = self._attempt

        async def write(tx: Tx) -> None:
            live = await tx.doc(LIVE_DOC, conversation_id)
            generation = live.setdefault("generation", {"attempt": attempt})
            generation["message"] = stored

        await self._runtime.commit(write)
        return 0  # partials have no byte budget (R85)

    async def stop(self) -> None:
        """Stop committing; await the commit in flight, if any (R85)."""
        await self._committer.stop()


def withheld(stored: Any, streaming: Callable[[str], str]) -> Any:
    """A dumped partial whose growing strings passed through ``streaming``.

    The strings that grow are a block's ``text`` and ``thinking`` and the
    string values inside a tool call's ``arguments``; metadata (ids, names,
    signatures) is left as it is.
    """
    for block in stored.get("content") or []:
        for key in ("text", "thinking"):
            if isinstance(block.get(key), str):
                block[key] = streaming(block[key])
        if isinstance(block.get("arguments"), dict):
            block["arguments"] = _argument_strings(block["arguments"], streaming)
    return stored


def _argument_strings(value: Any, streaming: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return streaming(value)
    if isinstance(value, list):
        return [_argument_strings(item, streaming) for item in value]
    if isinstance(value, dict):
        return {key: _argument_strings(item, streaming) for key, item in value.items()}
    return value
