"""Print mode: run the agent to the end of a prompt and print the final answer.

``run_print`` submits the prompt to the root conversation (idempotent with a
request ID), resumes whatever a killed process left, waits until the answer
settles and writes its text to ``out``. With no prompt (``pidurable -c -p``) it
resumes the session and prints the answer of the newest input once the
conversation is idle. Exit status: 0 for an answer; 1 with one line on ``err``
for an input left unanswered (a provider error, no model, an abort).
"""

from __future__ import annotations

import io
from typing import TextIO

from pi_durable_tui.app._agent_app import AgentApp
from pi_durable_tui.app._sessions import write_title
from pi_durable_tui.harness import Input
from pi_durable_tui.storage.records import SubmissionRecord

EXIT_OK = 0
EXIT_FAILED = 1


async def _answer_text(app: AgentApp, entry_id: int) -> str:
    stored = await app.harness.session.storage.entry(entry_id)
    if stored is None or not stored.entry.model:
        return ""
    message = stored.entry.model[0]
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    return "".join(
        block.get("text", "")
        for block in content or []
        if isinstance(block, dict) and block.get("type") == "text"
    )


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
    reasons = {
        "model_error": "the model request failed",
        "no_model": 'no model is configured (use --model provider/id, or set "model" in settings)',
        "aborted": "the run was aborted",
        "faulted": "the run failed",
    }
    head = reasons.get(record.reason or "", record.reason or record.status)
    return f"{head}: {text}" if text else head


async def run_print(
    app: AgentApp, prompt: str | None, out: TextIO, err: TextIO, *, request_id: str | None = None
) -> int:
    """Run one prompt (or resume) to its answer and print it."""
    app.harness.resume()
    if prompt is not None:
        write_title(app.store, prompt)
        submission = await app.root.submit(Input(prompt, request_id=request_id))
        record = await submission.wait()
    else:
        await app.root.wait_for_idle()
        found = await newest_input(app)
        if found is None:
            err.write("pidurable: the session has no prompt to resume; give one with -p TEXT\n")
            return EXIT_FAILED
        handle = await app.harness.submission(found.id)
        record = await handle.wait() if handle is not None else found
    if record.status == "done" and record.answer is not None:
        text = await _answer_text(app, record.answer)
        out.write(text if text.endswith("\n") else text + "\n")
        out.flush()
        return EXIT_OK
    err.write(f"pidurable: {describe_failure(record)}\n")
    return EXIT_FAILED


async def run_json(
    app: AgentApp, prompt: str | None, out: TextIO, err: TextIO, *, request_id: str | None = None
) -> int:
    """Like ``run_print``, printing agent events as JSON lines as they are committed."""
    from pi_durable_tui.app._json_events import JsonEventPrinter

    printer = JsonEventPrinter(app, out)
    await printer.start()
    try:
        status = await run_print(app, prompt, io.StringIO(), err, request_id=request_id)
        await printer.flush()
        return status
    finally:
        await printer.stop()
