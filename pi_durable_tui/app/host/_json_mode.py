"""``--mode json``: a headless run prints the wire's messages (issue 15).

DESIGN.md section 8 lists ``--mode json`` among a host's clients: what it prints
is the message family of ``app._wire``, from the same host code, encoder and
bounds as the Unix socket and the web page's WebSocket. The run's process hosts
its own session without a socket (``SessionHost.start(listen=False)``; a
headless run is not joined by other terminals) and hands ``serve_client`` one
more ``Transport``, ``PrintedTransport``: its ``hello`` is scripted and what the
host sends is written to standard output, one message per line. So a script
reads what an attached terminal reads: ``welcome``, a ``snapshot`` (the newest
window of entries, the documents, the task tree) taken on the line before the
run resumes, then per commit a ``commit`` message with its sequence number
(entries, document operations, submission states), ``permission_request`` /
``permission_decision`` for the calls headless mode refuses (issue 13),
``tasks`` and ``clients``; and last the ``result`` of the settled input, or,
when a stop signal (Ctrl-C, SIGTERM, SIGHUP) cut the run first, a ``result``
with ``"status": "stopped"`` naming the signal (``stopped_message``).

Why no second event stream: the old R125 agent events (``message_update``,
``tool_execution_*``, ...) said the same commits in other words, and every
client would have to learn both. No consumer outside this repository was known
to rely on those names, so they were dropped rather than kept beside the wire.

A reader that falls 100 frames behind gets one fresh snapshot (R124), as any
client does. A closed standard output (``| head``) stops the printing, not the run.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from pi_durable_tui.app._wire import PROTOCOL, encode
from pi_durable_tui.app.agent import answer_text
from pi_durable_tui.app.agent import run_headless as run_without_screen
from pi_durable_tui.app.host._host import SessionHost
from pi_durable_tui.app.screen import recovery_report

if TYPE_CHECKING:
    from typing import TextIO

    from pi_durable_tui.app.agent import AgentApp, Following, HeadlessMode, TextSink
    from pi_durable_tui.storage.records import SubmissionRecord

JSON_CLIENT = "json"
"""What the printing client calls itself in ``clients``."""


class PrintedTransport:
    """Standard output as a host's client: a scripted ``hello``, then the host's lines.

    Args:
        out: Where the lines go (the run's redacting writer).
    """

    def __init__(self, out: TextSink) -> None:
        self._out = out
        self._said_hello = False
        self._writable = True
        self.following = asyncio.Event()
        """Set once the host registered this client (its snapshot is queued)."""
        self._ended = asyncio.Event()

    def describe(self) -> dict[str, Any]:
        """This process: the client is its own standard output."""
        return {"pid": os.getpid()}

    async def receive(self) -> bytes:
        """``hello`` first; then nothing until ``end()`` (``b""``)."""
        if not self._said_hello:
            self._said_hello = True
            return encode({"t": "hello", "v": PROTOCOL, "name": JSON_CLIENT})
        self.following.set()  # the host reads again only after it registered us
        await self._ended.wait()
        return b""

    async def send(self, data: bytes) -> None:
        """Write one line (a closed pipe: the run goes on, unprinted)."""
        if not self._writable:
            return
        try:
            self._out.write(data.decode("utf-8", "surrogatepass"))
            self._out.flush()
        except OSError:
            self._writable = False

    def end(self) -> None:
        """The run is over: the host flushes what it queued and lets this client go."""
        self._ended.set()

    async def close(self) -> None:
        """Nothing to close: standard output stays the process's."""


class _WirePrinter:
    """A run followed as a host's client (``Following``)."""

    def __init__(self, app: AgentApp, host: SessionHost, transport: PrintedTransport) -> None:
        self._app = app
        self._host = host
        self._transport = transport
        self._serving = asyncio.ensure_future(host.serve_client(transport))

    async def started(self) -> None:
        """Until the host took the snapshot and registered the printer (or failed to)."""
        following = asyncio.ensure_future(self._transport.following.wait())
        await asyncio.wait({following, self._serving}, return_when=asyncio.FIRST_COMPLETED)
        following.cancel()

    async def stop(self, record: SubmissionRecord | None, *, submission: int | None) -> None:
        """Flush the run's frames, print its ``result``, close the host.

        A run a stop signal cut (``AgentApp.stopped_by``) before its input settled
        ends with ``stopped_message`` instead: a client reading the lines sees how
        the run ended, not a stream that just stops.
        """
        # The settling commit was published before the submission settled, so its
        # frames are in the outbox already: ``end`` lets the host flush them.
        # REMINDER: read before ``end``: every commit up to it has its frames queued.
        seq = self._app.harness.session.published_seq
        self._transport.end()
        try:
            await self._serving
        finally:
            await self._host.close()
        if record is not None:
            await self._transport.send(encode(await result_message(self._app, record)))
        elif self._app.stopped_by is not None:
            message = stopped_message(seq, submission, self._app.stopped_by)
            await self._transport.send(encode(message))


async def result_message(app: AgentApp, record: SubmissionRecord) -> dict[str, Any]:
    """The ``result`` message of a settled input."""
    answered = record.status == "done" and record.answer is not None
    text = await answer_text(app, record.answer) if answered and record.answer else None
    return {
        "t": "result",
        "seq": app.harness.session.published_seq,
        "submission": record.id,
        "status": record.status,
        "reason": record.reason,
        "detail": record.detail,
        "answer": record.answer,
        "text": text,
    }


def stopped_message(seq: int, submission: int | None, signal_name: str) -> dict[str, Any]:
    """The last message of a run a stop signal cut: a ``result`` whose status is ``stopped``.

    The fields of every ``result``: ``seq`` the last commit published when the
    printing stopped (the lines before hold every frame of the followed
    conversation up to it; commits the closing run makes later are not printed),
    ``submission`` the input that was left unsettled (``None`` while the run
    knew none: before the prompt was submitted, or while a prompt-less ``-c``
    waited for the resumed turn), ``reason`` the signal's name; no answer. The input stays
    durable: ``--continue`` (with the same ``--request-id``) finishes it.
    """
    return {
        "t": "result",
        "seq": seq,
        "submission": submission,
        "status": "stopped",
        "reason": signal_name,
        "detail": f"pidurable was stopped by {signal_name}; --continue resumes the session",
        "answer": None,
        "text": None,
    }


async def follow_wire(app: AgentApp, out: TextSink, err: TextSink) -> Following:
    """JSON mode's ``follow``: the run's process hosts its session for its standard output."""
    host = SessionHost(app, name=None)
    await host.start(listen=False)
    printer = _WirePrinter(app, host, PrintedTransport(out))
    await printer.started()
    return printer


async def run_headless(
    app: AgentApp,
    prompt: str | None,
    out: TextIO,
    err: TextIO,
    *,
    mode: HeadlessMode = "text",
    request_id: str | None = None,
) -> int:
    """``pidurable -p``: ``app.agent``'s run without a screen, printing the wire in ``json`` mode.

    Args and returns as ``app.agent.run_headless`` (``follow`` chosen by ``mode``).
    """
    follow = follow_wire if mode == "json" else None
    # What the screen shows on --continue (the turn that resumes, the call that was
    # interrupted and why), read before the run resumes, goes to stderr here.
    report = await recovery_report(app)
    return await run_without_screen(
        app, prompt, out, err, mode=mode, request_id=request_id, follow=follow, report=report
    )
