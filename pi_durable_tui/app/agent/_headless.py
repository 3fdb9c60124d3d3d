"""Print and JSON modes: run a prompt (or resume) to its answer without a screen.

``run_headless`` starts its ``follow`` (what prints the run: print mode's
stderr notices from the root conversation's agent events, R125 ``watch_events``;
JSON mode's wire) before anything runs, resumes whatever a killed process left,
submits the prompt (idempotent with a request ID, R59) and waits until the input
settles. With no prompt (``pidurable -c -p``) it settles the newest input of the
session once the conversation is idle, so a run cut by a kill finishes and
prints its answer. Everything printed derives from commits, and passes the
harness's redactor once more on its way out (``RedactedWriter``, issue 13);
printed text (the answer, every stderr line) loses its escape sequences and
control characters, since a pipe ends in a terminal often enough, and JSON
lines escape every control character:

- ``text``: the answer's text on ``out``; on ``err``, one line each time a failed
  request waits for a retry (``auto_retry_start``, R87): ``pidurable: retrying in
  4s (attempt 2): <error>``, and one line for each call refused because it needs
  the user's approval (issue 13), with the flags that allow it.
- ``json``: the wire's messages (``app._wire``, the family a terminal attached
  to a host reads) on ``out`` as commits publish them: ``follow`` prints them
  (``app.host``'s ``follow_wire``; this layer cannot build a host). A refused
  call shows as ``permission_request`` then ``permission_decision`` with
  ``"by": "headless"``; the last line is the ``result`` (``"status":
  "stopped"`` and the signal's name when a stop signal cut the run).

A settings edit during the run that cannot be used (malformed) prints one line
on ``err``; the settings from before stay in force. So does each skill or command
file that cannot be used (issue 16), before the run. A prompt naming a custom
command (``/review calc.py``) sends that command's text, as typing it does
(``expand_command_line``), with its notes on ``err``; a command whose file cannot
be used ends the run with one line and status 1 instead of sending the raw text.
Project settings whose
widening keys the user has not confirmed (issue 13) are not asked about: the
keys are ignored, with one line on ``err`` per run saying how to trust them.

Exit status: 0 for an answer; 1 with one line on ``err`` for an input left
unanswered (a provider error, a missing key, no model, an abort). A stop signal
(Ctrl-C, SIGTERM, SIGHUP) cancels the run wherever it is: the CLI prints its one
line and exits with ``128 + signal``; JSON mode's last line says the run stopped
and names the signal (``AgentApp.stopped_by``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol, TextIO

from pi_durable_tui.app.agent._agent_app import AgentApp
from pi_durable_tui.app.agent._model_setup import UNSERVED_MODEL_ADVICE
from pi_durable_tui.app.agent._permissions import HEADLESS_HINT
from pi_durable_tui.app.agent._printed import RedactedWriter, TextSink
from pi_durable_tui.app.agent._uncancelled import complete
from pi_durable_tui.app.files import (
    FrontMatterError,
    TrustRequest,
    discover_commands,
    discover_skills,
    expand_command_line,
)
from pi_durable_tui.harness import EventStream, Input, text_of, watch_events
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import SubmissionRecord

EXIT_OK = 0
EXIT_FAILED = 1
HeadlessMode = Literal["text", "json"]
"""``text`` prints the answer; ``json`` prints the wire's messages as JSON lines."""


class Following(Protocol):
    """What prints a run while it goes, attached before anything runs."""

    async def stop(self, record: SubmissionRecord | None, *, submission: int | None) -> None:
        """Print what the run's last commits left, then what ends it; detach.

        Args:
            record: The input the run settled (``None``: none, the run failed, or
                a stop signal cut it: ``AgentApp.stopped_by`` names the signal).
            submission: The ID of the input the run submitted or resumed, if any
                (settled or not).
        """
        ...


Follow = Callable[[AgentApp, TextSink, TextSink], Awaitable[Following]]
"""Starts following a run: ``follow(app, out, err)``."""

_REASONS = {
    "model_error": "the model request failed",
    "aborted": "the run was aborted",
    "faulted": "the run failed",
    "stale": "the input was dropped: its conversation was reset or compacted before it ran",
    "reset": "the conversation was reset before the input was answered",
}
_NO_MODEL_HINT = 'use --model provider/id, or set "model" in settings'


async def answer_text(app: AgentApp, entry_id: int) -> str:
    """The text of the answer entry ``entry_id`` (``""`` when it holds none)."""
    stored = await app.harness.session.storage.entry(entry_id)
    if stored is None or not stored.entry.model or not isinstance(stored.entry.model[0], dict):
        return ""
    return text_of(stored.entry.model[0])


async def newest_input(app: AgentApp) -> SubmissionRecord | None:
    """The newest input submission of the root conversation, if any."""
    storage = app.harness.session.storage
    newest: SubmissionRecord | None = None
    cursor = None
    while True:
        page = await storage.scan_submissions(conversation_id=app.root.id, limit=200, cursor=cursor)
        for record in page.items:
            if record.type == "input":
                newest = record
        if page.cursor is None:
            return newest
        cursor = page.cursor


def describe_failure(record: SubmissionRecord) -> str:
    """One line saying why an input was left unanswered."""
    detail = record.detail
    text = detail if isinstance(detail, str) else ("" if detail is None else str(detail))
    if record.reason == "no_model":
        # A model the session names but nothing serves now: most often a local
        # server's model, continued without the --base-url it was served from.
        unserved = text.endswith("is not available")
        hint = f"{_NO_MODEL_HINT} ({UNSERVED_MODEL_ADVICE})" if unserved else _NO_MODEL_HINT
        return f"{text or 'No model is configured'}; {hint}"
    head = _REASONS.get(record.reason or "", record.reason or record.status)
    return f"{head}: {text}" if text else head


def _seconds(milliseconds: float) -> str:
    """``4000`` -> ``4s``, ``1500`` -> ``1.5s``, ``400`` -> ``0.4s``."""
    return f"{max(0.0, milliseconds) / 1000:.1f}".removesuffix(".0") + "s"


def retry_line(attempt: int, delay_ms: float, error: str) -> str:
    """The line print mode writes when a failed request waits for a retry (R87).

    Args:
        attempt: The attempt that failed (the retry is ``attempt + 1``).
        delay_ms: How long the retry waits.
        error: Why the attempt failed.

    Returns:
        ``pidurable: retrying in 4s (attempt 2): <error>`` with a newline.
    """
    return f"pidurable: retrying in {_seconds(delay_ms)} (attempt {attempt + 1}): {error}\n"


def refusal_line(request: JsonObject) -> str:
    """The line print mode writes when it refused a call that needs approval (issue 13).

    Args:
        request: The committed request (``tool``, ``suggestion``, ``reason``).

    Returns:
        ``pidurable: refused bash(make test) (...): it needs approval; rerun with ...``.
    """
    what = request.get("suggestion") or request.get("tool")
    return (
        f"pidurable: refused {what} ({request.get('reason')}): it needs approval; {HEADLESS_HINT}\n"
    )


class _NoticePrinter:
    """Writes print mode's stderr notices of a run's events (retries, refusals)."""

    def __init__(self, stream: EventStream, err: TextSink, now: Callable[[], float]) -> None:
        self._stream = stream
        self._err = err
        self._now = now
        self._writable = True
        self._requests: dict[str, JsonObject] = {}
        self._printing = asyncio.ensure_future(self._run())

    async def stop(self, record: SubmissionRecord | None, *, submission: int | None) -> None:
        """Print the events already queued, then stop (a stop signal's line is the CLI's)."""
        # The settling commit was published before the submission settled, so its
        # events are queued: drain them, then stop.
        await self._stream.stop(drain=True)
        await self._printing

    async def _run(self) -> None:
        async for batch in self._stream:
            for event in batch:
                self._print(event)

    def _print(self, event: JsonObject) -> None:
        if event["type"] == "permission_decision" and event["decision"].get("by") == "headless":
            request = self._requests.get(event["tool_call_id"]) or {"tool": event["tool_name"]}
            self._write(self._err, refusal_line(request))
        elif event["type"] == "permission_request":
            self._requests[event["tool_call_id"]] = event["request"]
        if event["type"] == "auto_retry_start":
            line = retry_line(event["attempt"], event["delay_ms"], event["error_message"])
            self._write(self._err, line)
        elif event["type"] == "snapshot":  # continued while a retry waits
            generation = event.get("generation") or {}
            retry = generation.get("retry")
            if retry is not None:
                delay = retry["at"] - self._now()
                self._write(self._err, retry_line(generation["attempt"], delay, retry["error"]))

    def _write(self, stream: TextSink, text: str) -> None:
        if not self._writable:
            return
        try:
            stream.write(text)
            stream.flush()
        except OSError:  # a closed pipe (`| head`): the run goes on, unprinted
            self._writable = False


def settings_warning(error: Exception) -> str:
    """The line for a settings edit made during the run that cannot be used (issue 12)."""
    return f"pidurable: {error}; the settings from before stay in force\n"


def untrusted_warning(request: TrustRequest, user_settings: str) -> str:
    """The one line print mode writes when project settings widen powers unconfirmed (issue 13).

    Print mode never asks and never trusts: the widening keys are ignored.
    """
    keys = ", ".join(request.widening)
    return (
        f"pidurable: ignoring {keys} in {request.where}: not confirmed by you; to use them, "
        f"run pidurable in {request.project} once and trust them, or set them in "
        f"{user_settings}\n"
    )


def _line(err: TextSink, text: str) -> None:
    try:
        err.write(text)
        err.flush()
    except OSError:  # a closed stderr: the run goes on
        pass


async def _settle(
    app: AgentApp, prompt: str | None, request_id: str | None, submitted: Callable[[int], None]
) -> SubmissionRecord | None:
    """Submit the prompt (or find the newest input) and wait until it settles.

    ``submitted`` hears the input's ID as soon as it is known.
    """
    if prompt is not None:
        await app.remember_title(prompt)
        submission = await app.root.submit(Input(prompt, request_id=request_id))
        submitted(submission.id)
        return await submission.wait()
    await app.root.wait_for_idle()
    found = await newest_input(app)
    if found is None:
        return None
    submitted(found.id)
    handle = await app.harness.submission(found.id)
    return await handle.wait() if handle is not None else found


async def follow_notices(app: AgentApp, out: TextSink, err: TextSink) -> Following:
    """Print mode's ``follow``: retries and refused calls as lines on ``err``."""
    stream = await watch_events(app.harness, app.root.id, tail=0)
    return _NoticePrinter(stream, err, app.harness.session.clock.now)


async def run_headless(
    app: AgentApp,
    prompt: str | None,
    out: TextIO,
    err: TextIO,
    *,
    mode: HeadlessMode = "text",
    request_id: str | None = None,
    follow: Follow | None = None,
    report: Sequence[str] | None = None,
) -> int:
    """Run one prompt (or, with ``None``, resume the newest) to its answer and print it.

    Args:
        app: The open session.
        prompt: The prompt, or ``None`` to resume the session's newest input.
        out: Where the answer (text) or the events (json) go.
        err: Where retry notices and the failure line go.
        mode: ``text`` or ``json``.
        request_id: Makes the prompt idempotent: resubmitted after a kill, it
            finds the first submission instead of adding another (R59).
        follow: What prints the run while it goes (``follow_notices`` by
            default); required for ``json`` (``app.host.follow_wire``).
        report: The recovery report, printed on ``err`` first, one line each (by
            default what this layer knows: processes and jobs an earlier run
            left, and the app's notices).

    Returns:
        0 when the input was answered, 1 when it was left unanswered.
    """
    app.settings.choose_permissions(interactive=False)  # no one to ask here (issue 13)
    redact = app.harness.redactor.text
    # REMINDER: text goes to a terminal sooner or later (``| cat``, ``less -R``):
    # printed text is always made terminal-safe; JSON escapes instead.
    printed = RedactedWriter(out, redact, terminal=mode == "text")
    errors = RedactedWriter(err, redact, terminal=True)
    if report is None:  # issues 13 and 16
        leftovers = [] if app.leftovers is None else [app.leftovers]
        report = [*leftovers, *app.job_report, *app.notices]
    for line in report:
        _line(errors, f"pidurable: {line}\n")
    if follow is None:
        if mode == "json":
            raise ValueError("JSON mode prints the wire: pass app.host's follow_wire")
        follow = follow_notices
    return await _run(app, prompt, printed, errors, mode, request_id, follow)


def _expanded(app: AgentApp, prompt: str | None, err: TextSink) -> str | None:
    """The prompt to send: a custom command's text for ``/name ...`` (issue 16).

    Unusable skill and command files are reported first, one line each.

    Raises:
        FrontMatterError: The prompt names a command whose file cannot be used.
    """
    problems = list(discover_commands(app.cwd).problems)
    if app.remote is None:
        problems += discover_skills(app.cwd).problems
    for problem in problems:
        _line(err, f"pidurable: {problem}\n")
    expansion = None if prompt is None else expand_command_line(prompt, app.cwd)
    if expansion is None:
        return prompt
    for note in expansion.notes:
        _line(err, f"pidurable: {note}\n")
    return expansion.text


async def _run(
    app: AgentApp,
    prompt: str | None,
    out: TextSink,
    err: TextSink,
    mode: HeadlessMode,
    request_id: str | None,
    follow: Follow,
) -> int:
    try:
        prompt = _expanded(app, prompt, err)
    except FrontMatterError as error:
        _line(err, f"pidurable: not sent: {error}\n")
        return EXIT_FAILED
    unwatch = app.settings.on_error(lambda error: _line(err, settings_warning(error)))
    warned: list[TrustRequest] = []

    def untrusted(request: TrustRequest) -> None:
        if not warned:  # one line per run, however often the file changes
            warned.append(request)
            _line(err, untrusted_warning(request, app.settings_home))

    unwatch_trust = app.settings.on_trust_request(untrusted)
    waiting = app.settings.pending()
    if waiting is not None:
        untrusted(waiting)
    # A stop signal while the printing starts: it starts, then stops (its last line).
    following = await complete(
        follow(app, out, err), undo=lambda started: started.stop(None, submission=None)
    )
    record: SubmissionRecord | None = None
    submitted: list[int] = []
    try:
        app.harness.resume()
        record = await _settle(app, prompt, request_id, submitted.append)
    finally:
        try:
            # REMINDER: a stop signal cancels the run wherever it is, in this
            # ``stop`` too: it runs to its end all the same, so JSON mode's last
            # line is printed and its host closed on every path.
            last = submitted[-1] if submitted else None
            await complete(following.stop(record, submission=last))
        finally:
            unwatch()
            unwatch_trust()
    if record is None:
        err.write("pidurable: the session has no prompt to resume; give one with -p TEXT\n")
        err.flush()
        return EXIT_FAILED
    if record.status == "done" and record.answer is not None:
        if mode == "text":
            text = await answer_text(app, record.answer)
            out.write(text if text.endswith("\n") else text + "\n")
            out.flush()
        return EXIT_OK
    err.write(f"pidurable: {describe_failure(record)}\n")
    err.flush()
    return EXIT_FAILED
