r"""``pidurable export``: a session's transcript as JSON lines, Markdown or HTML.

The transcript is every visible entry of the main conversation, oldest first
(compaction summaries and resets included, so nothing is hidden). JSON lines
hold one stored entry per line, exactly as committed; Markdown and HTML render
user and assistant text, thinking, tool calls with their arguments and tool
results with their output, a shell command the user ran (``!cmd``) with its
output and how it ended. An entry that holds only part of what it would have
is marked under it (``cut_of``: an answer aborted with Esc, the partial a crash
left, one at the model's output limit, a tool call that came back ``interrupted``
or ``aborted``): ``_(answer cut: aborted)_`` in Markdown, a ``cut`` note in HTML,
so a reader does not take it for a whole one. HTML is one self-contained file (inline CSS, every
text escaped: ``<``, ``>``, ``&`` and quotes as entities, and every control
character, the ESC of an escape sequence included, as visible ``\xNN`` text, so
neither a browser nor a terminal that shows the file obeys them, issue 13).
Markdown shows control characters the same way, and JSON lines escape the ones
JSON leaves raw (DEL and C1), so no format written to a terminal controls it.
Everything written passes ``output_redactor`` (issue 13): a store written
before redaction covered every commit still exports no key.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import io
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Literal, TextIO

from pi_durable_tui.app._terminal_text import visible_controls
from pi_durable_tui.app.agent._printed import RedactedWriter, json_line, output_redactor
from pi_durable_tui.app.files import (
    NoSession,
    SessionPathError,
    SessionUnavailable,
    newest_session,
    open_store,
    resolve_session,
)
from pi_durable_tui.harness import INTERRUPTED_PARTIAL, text_of
from pi_durable_tui.storage import EntryRecord, Storage, StorageError, StoreLocked

ExportFormat = Literal["jsonl", "markdown", "html"]


async def entries_of(storage: Storage, conversation_id: int = 1) -> AsyncIterator[EntryRecord]:
    """Yield a conversation's visible entries, oldest first, page by page."""
    cursor = None
    while True:
        page = await storage.scan_entries(conversation_id, order="asc", limit=500, cursor=cursor)
        for stored in page.items:
            yield stored.entry
        if page.cursor is None:
            return
        cursor = page.cursor


def cut_of(entry: EntryRecord) -> str | None:
    """Why an entry holds only part of what it would have, in words; ``None`` when whole.

    From what the entry records: an answer's ``stop_reason`` (``aborted`` by Esc, or
    with ``INTERRUPTED_PARTIAL`` the partial a crash left, R84; ``length`` at the
    model's output limit) and a tool result's error diagnostic code
    (``interrupted``: cut by a crash, it may have partly run; ``aborted``).
    """
    message = entry.model[0] if entry.model and isinstance(entry.model[0], dict) else {}
    if entry.kind == "pi.assistant":
        stop = message.get("stop_reason")
        if stop == "aborted":
            if message.get("error_message") == INTERRUPTED_PARTIAL:
                return "interrupted, pidurable stopped while it streamed"
            return "aborted"
        return "the model's output limit" if stop == "length" else None
    if entry.kind != "pi.tool-result" or not message.get("is_error"):
        return None
    data = entry.data if isinstance(entry.data, dict) else {}
    codes = {d.get("code") for d in data.get("diagnostics") or [] if isinstance(d, dict)}
    if "interrupted" in codes:
        return "interrupted, it may have partly run"
    return "aborted" if "aborted" in codes else None


def _cut_note(entry: EntryRecord) -> str | None:
    """The note an export puts under a cut entry: ``answer cut: aborted``."""
    why = cut_of(entry)
    if why is None:
        return None
    return f"{'tool call' if entry.kind == 'pi.tool-result' else 'answer'} cut: {why}"


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _markdown_entry(entry: EntryRecord) -> str:
    message = entry.model[0] if entry.model and isinstance(entry.model[0], dict) else {}
    parts: list[str] = []
    role = message.get("role")
    if entry.kind == "pi.system":
        return ""
    if entry.kind == "pi.compaction":
        return "## Earlier context (summary)\n\n" + text_of(message) + "\n"
    if entry.kind == "pi.shell":
        title, shown, outcome = _shell_parts(entry)
        return f"## {title}\n\n{_fenced(shown)}\n_({outcome})_\n"
    if entry.kind == "pi.reset":
        return "---\n\n*New context*\n"
    title = {"user": "User", "assistant": "Assistant", "toolResult": "Tool result"}.get(
        str(role), str(role)
    )
    if role == "toolResult":
        title = f"Tool result: {message.get('tool_name')}"
    parts.append(f"## {title}\n")
    for block in _blocks(message):
        kind = block.get("type")
        if kind == "text":
            text = block.get("text", "")
            parts.append(_fenced(text) if role == "toolResult" else f"{text}\n")
        elif kind == "thinking":
            parts.append("> " + block.get("thinking", "").replace("\n", "\n> ") + "\n")
        elif kind == "tool_call":
            arguments = json.dumps(block.get("arguments", {}), indent=2, ensure_ascii=False)
            parts.append(f"**{block.get('name')}**\n\n```json\n{arguments}\n```\n")
        elif kind == "image":
            parts.append(f"*[image {block.get('mime_type')}]*\n")
    if message.get("stop_reason") == "error":
        parts.append(f"*[error] {message.get('error_message') or ''}*\n")
    note = _cut_note(entry)
    if note is not None:
        parts.append(f"_({note})_\n")
    return "\n".join(parts)


def _shell_parts(entry: EntryRecord) -> tuple[str, str, str]:
    """A user's shell command (``!cmd``): its title, command and output, and how it ended."""
    data = entry.data if isinstance(entry.data, dict) else {}
    whose = "you" if data.get("context", True) else "you, not sent to the model"
    shown = f"$ {data.get('command', '')}\n{data.get('output') or ''}"
    exit_code = data.get("exit_code")
    outcome = f"exit {exit_code}" if isinstance(exit_code, int) else str(data.get("status"))
    return f"Shell command ({whose})", shown, outcome


def _fenced(text: str) -> str:
    """A code block around ``text`` whose fence is longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text.removesuffix(chr(10))}\n{fence}\n"


_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;"
    "line-height:1.5;color:#222}pre{background:#f4f4f4;padding:.6rem;overflow-x:auto;"
    "white-space:pre-wrap}.user{border-left:4px solid #3a7bd5;padding-left:.8rem}"
    ".assistant{border-left:4px solid #2e9d5b;padding-left:.8rem}.tool{border-left:4px solid"
    " #999;padding-left:.8rem}.thinking{color:#777;font-style:italic}h3{margin-bottom:.2rem}"
    ".cut,.error{font-style:italic;color:#a33;border:1px dashed #a33;padding:.2rem .5rem}"
)


def _escaped(text: str) -> str:
    r"""``text`` as HTML text: entities for markup, ``\xNN`` for control characters."""
    return html.escape(visible_controls(text))


def _html_entry(entry: EntryRecord) -> str:
    message = entry.model[0] if entry.model and isinstance(entry.model[0], dict) else {}
    role = str(message.get("role", ""))
    if entry.kind == "pi.system":
        return ""
    if entry.kind == "pi.shell":
        title, shown, outcome = _shell_parts(entry)
        return (
            f"<div class='tool'><h3>{_escaped(title)}</h3><pre>{_escaped(shown)}</pre>"
            f"<p>({_escaped(outcome)})</p></div>"
        )
    css = {"user": "user", "assistant": "assistant", "toolResult": "tool"}.get(role, "tool")
    title = {"user": "User", "assistant": "Assistant"}.get(role, entry.kind)
    if role == "toolResult":
        title = f"Tool result: {message.get('tool_name')}"
    if entry.kind == "pi.compaction":
        title = "Earlier context (summary)"
    body: list[str] = []
    for block in _blocks(message):
        kind = block.get("type")
        if kind == "text":
            body.append(f"<pre>{_escaped(block.get('text', ''))}</pre>")
        elif kind == "thinking":
            body.append(f"<p class='thinking'>{_escaped(block.get('thinking', ''))}</p>")
        elif kind == "tool_call":
            arguments = json.dumps(block.get("arguments", {}), indent=2, ensure_ascii=False)
            body.append(
                f"<p><b>{_escaped(str(block.get('name')))}</b></p><pre>{_escaped(arguments)}</pre>"
            )
    if message.get("stop_reason") == "error":
        error = str(message.get("error_message") or "")
        body.append(f"<p class='error'>[error] {_escaped(error)}</p>")
    note = _cut_note(entry)
    if note is not None:
        body.append(f"<p class='cut'>({_escaped(note)})</p>")
    return f"<div class='{css}'><h3>{_escaped(title)}</h3>{''.join(body)}</div>"


async def export_transcript(
    storage: Storage,
    fmt: ExportFormat,
    into: TextIO,
    *,
    redact: Callable[[str], str] | None = None,
    conversation_id: int = 1,
) -> int:
    """Write a conversation's transcript; returns the number of entries written.

    Args:
        storage: The session's store.
        fmt: ``jsonl``, ``markdown`` or ``html``.
        into: Where the transcript goes.
        redact: Redacts what is written (``output_redactor().text`` by default).
        conversation_id: Whose history (its visible one: a fork's includes what
            it inherited); the main conversation by default.
    """
    out = RedactedWriter(into, redact if redact is not None else output_redactor().text)
    count = 0
    if fmt == "html":
        out.write("<!doctype html><meta charset='utf-8'><title>pidurable</title>")
        out.write(f"<style>{_CSS}</style>")
    async for entry in entries_of(storage, conversation_id):
        count += 1
        if fmt == "jsonl":
            out.write(json_line(entry.to_json()) + "\n")
        elif fmt == "markdown":
            text = visible_controls(_markdown_entry(entry))
            if text:
                out.write(text + "\n")
        else:
            out.write(_html_entry(entry) + "\n")
    out.flush()
    return count


def export_main(argv: Sequence[str]) -> int:
    r"""Run ``pidurable export``; returns the exit status.

    A session that does not exist is an error (exit 2), never a new store. What
    the output cannot encode (a lone surrogate a tool's output held) is written
    as a backslash escape: ``\udcff``, which is also valid inside a JSON string.
    A reader that leaves early (``| head``) raises ``BrokenPipeError`` to the caller.
    """
    parser = argparse.ArgumentParser(prog="pidurable export", description="Write a transcript.")
    parser.add_argument(
        "--session",
        metavar="ID",
        help="the session: its file, or its ID in the database (default: the newest here)",
    )
    parser.add_argument("--format", choices=("jsonl", "markdown", "html"), default="markdown")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    args = parser.parse_args(list(argv))
    try:
        cwd = os.getcwd()
        if args.session:
            path = resolve_session(args.session, cwd, existing=True)
        else:
            path = newest_session(cwd)
    except (NoSession, SessionUnavailable, SessionPathError) as error:
        sys.stderr.write(f"pidurable export: {error}\n")
        return 2

    async def run() -> int:
        storage = await open_store(path)
        try:
            if args.output:
                with open(args.output, "w", encoding="utf-8", errors="backslashreplace") as out:
                    return await export_transcript(storage, args.format, out)
            return await export_transcript(storage, args.format, sys.stdout)
        finally:
            await storage.close()

    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    try:
        asyncio.run(run())
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
    except StoreLocked as error:
        sys.stderr.write(f"pidurable export: {held_elsewhere(error, path)}\n")
        return 2
    except StorageError as error:
        sys.stderr.write(f"pidurable export: {error}\n")
        return 2
    return 0


def held_elsewhere(error: StoreLocked, store: os.PathLike[str] | str) -> str:
    """Why a held session cannot be exported, naming the holder, and what to do instead.

    The running pidurable is the store's one writer; its ``/export`` writes the same
    transcript (quitting it frees the store for ``pidurable export``).
    """
    then = "quit that pidurable first, or run /export in it"
    if str(store) not in str(error):  # in a database: the refusal names host and pid itself
        return f"{error}; {then}"
    holder = f"process {error.pid}" if error.pid is not None else "another process"
    return f"the session {store} is open in {holder} (a running pidurable); {then}"
