"""Streamed partials committed to ``pi.live.generation.message`` with a throttle (R85).

A partial with empty content (no block yet: the start of a response) is never
committed. At most one partial commit is in
flight; a new partial schedules a commit at most every
``progress.partial_interval_ms`` (100 ms by default), the first one an interval
after the request started (a response that completes sooner commits no partial:
its classification shows it whole); the partial is read (and copied) when the
commit runs, so the newest one wins. The committer keeps the newest *event*,
not its partial: a delta event builds its partial only when read
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

The interval is real time (``asyncio.sleep``): it bounds the commit rate of a real
process, while retries and task sleeps use the harness clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from pi_durable_tui.ai import AssistantEvent, StartEvent
from pi_durable_tui.harness._runtime import HarnessRuntime, services_of
from pi_durable_tui.harness.state import LIVE_DOC, dump
from pi_durable_tui.kernel import TaskGateClosed, Tx


class PartialCommitter:
    """Commits the newest streamed partial of one request attempt.

    Args:
        runtime: The generation's runtime.
        attempt: The attempt the partial belongs to.
        interval_ms: The least time between two partial commits.
    """

    def __init__(self, runtime: HarnessRuntime, attempt: int, interval_ms: int) -> None:
        self._runtime = runtime
        self._attempt = attempt
        self._interval = interval_ms / 1000
        self._latest: AssistantEvent | None = None
        self._dirty = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._in_commit = False
        self._stopped = False
        # REMINDER: the stream's start counts as the last commit, so a response that
        # completes within one interval (most tool-calling turns) commits no partial
        # at all: its classification commit shows it whole.
        self._last = time.monotonic()
        self.commits = 0

    @property
    def stopped(self) -> bool:
        """Whether ``stop()`` was called."""
        return self._stopped

    def update(self, event: AssistantEvent) -> None:
        """Offer the newest event's partial; empty ones are ignored (R85).

        Only ``start`` has an empty partial (every later event follows a block's
        start), so the partial itself is not read here.
        """
        if self._stopped or (isinstance(event, StartEvent) and not event.partial.content):
            return
        self._latest = event
        self._dirty.set()
        if self._loop is None:
            self._loop = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            while not self._stopped:
                await self._dirty.wait()
                wait = self._last + self._interval - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if self.stopped:
                    return
                self._dirty.clear()
                self._in_commit = True
                try:
                    await self._commit()
                finally:
                    self._in_commit = False
                    self._last = time.monotonic()
        except TaskGateClosed:
            return

    async def _commit(self) -> None:
        event = self._latest
        if event is None:
            return
        message = getattr(event, "partial", None)
        if message is None or not message.content:
            return
        stored = withheld(dump(message), services_of(self._runtime).redactor.streaming)
        conversation_id = self._runtime.conversation_id
        attempt = self._attempt

        async def write(tx: Tx) -> None:
            live = await tx.doc(LIVE_DOC, conversation_id)
            generation = live.setdefault("generation", {"attempt": attempt})
            generation["message"] = stored

        await self._runtime.commit(write)
        self.commits += 1

    async def stop(self) -> None:
        """Stop committing; await the commit in flight, if any (R85)."""
        self._stopped = True
        loop, self._loop = self._loop, None
        if loop is None:
            return
        if self._in_commit:
            self._dirty.set()
        else:
            loop.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await loop


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
