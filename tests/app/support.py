"""Helpers of the app tests: faux scripts, settings files, headless runs, store reads."""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_durable_tui.app import AgentApp, HeadlessMode, run_headless
from pi_durable_tui.app.agent._config import read_project_settings
from pi_durable_tui.app.files import remember_trust
from pi_durable_tui.storage import EntryRecord, SqliteStorage
from tests.wire_lines import messages

FAUX = "faux/faux-1"


def text(answer: str) -> dict[str, Any]:
    """A faux response answering with ``answer``."""
    return {"content": [{"type": "text", "text": answer}]}


def tool_call(name: str, arguments: dict[str, Any], lead: str = "") -> dict[str, Any]:
    """A faux response calling one tool (after an optional text)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": lead}] if lead else []
    content.append({"type": "tool_call", "name": name, "arguments": arguments})
    return {"content": content}


def write_script(directory: Path, *responses: dict[str, Any], **top: Any) -> Path:
    """Write a faux script file holding ``responses`` and return its path."""
    path = directory / "script.json"
    path.write_text(json.dumps({"responses": list(responses), **top}), "utf-8")
    return path


def write_settings(path: Path, data: Any) -> Path:
    """Write a settings file (``data`` as JSON, raw text or bytes), creating its directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else json.dumps(data), "utf-8")
    return path


def trust_settings(project: Path) -> None:
    """Trust the project's files (settings, ``.mcp.json``, extension files) as they are now."""
    digest = read_project_settings(project).digest
    assert digest is not None
    remember_trust(os.path.realpath(project), digest)


@dataclass
class Printed:
    """What a headless run returned and printed."""

    status: int
    out: str
    err: str

    def messages(self) -> list[dict[str, Any]]:
        """``--mode json``'s lines, decoded by the wire (``tests.wire_lines``)."""
        return messages(self.out)


async def run(
    app: AgentApp,
    prompt: str | None,
    *,
    mode: HeadlessMode = "text",
    request_id: str | None = None,
) -> Printed:
    """Run ``run_headless`` on ``app`` and capture what it printed."""
    out, err = io.StringIO(), io.StringIO()
    status = await run_headless(app, prompt, out, err, mode=mode, request_id=request_id)
    return Printed(status, out.getvalue(), err.getvalue())


async def stored_entries(store: Path, conversation_id: int = 1) -> list[EntryRecord]:
    """Every entry of a conversation of a closed store, oldest first."""
    storage = await SqliteStorage.open(store)
    try:
        page = await storage.scan_entries(conversation_id, order="asc", limit=10_000)
        return [stored.entry for stored in page.items]
    finally:
        await storage.close()


async def raw_store(path: Path, *messages: dict[str, Any]) -> Path:
    """A store whose root conversation holds ``messages`` as written, by a bare Session.

    No harness means no commit filter: the store holds what an older version (or
    any writer without redaction) would have left.
    """
    from pi_durable_tui.kernel import Session, Tx

    session = await Session.open(await SqliteStorage.open(path))

    async def write(tx: Tx) -> None:
        root = tx.create_root_conversation()
        for message in messages:
            tx.append(root.id, "pi.message", model=[message])

    await session.commit(write)
    await session.close()
    return path
