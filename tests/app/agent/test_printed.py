"""Printed output is redacted like committed output (issue 13).

A store written before redaction covered every commit (here: a Session without
the harness's filter) still exports no key; a key cut between two writes is
found.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from pi_durable_tui.app import RedactedWriter, output_redactor
from pi_durable_tui.env import SecretRedactor
from tests.app.agent.test_export import export
from tests.app.support import raw_store

KEY = "sk-ant-api03-Q2w9E8r7T6y5U4i3"


def test_a_key_cut_between_two_writes_is_redacted_and_flush_writes_the_rest() -> None:
    out = io.StringIO()
    writer = RedactedWriter(out, SecretRedactor([KEY]).text)

    writer.write(f"first {KEY[:7]}")
    assert out.getvalue() == ""  # an unfinished line waits
    writer.write(f"{KEY[7:]} line\nsecond {KEY}")
    assert out.getvalue() == "first [redacted] line\n"
    writer.flush()
    assert out.getvalue() == "first [redacted] line\nsecond [redacted]"


def test_the_output_redactor_knows_secret_variables_of_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)

    assert output_redactor().text(f"x{KEY}y") == "x[redacted]y"


@pytest.fixture
async def unredacted_store(tmp_path: Path) -> Path:
    """A store whose entries hold the key: written with no commit filter."""
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": f"so {KEY}"},
            {"type": "text", "text": f"it is {KEY}"},
            {"type": "tool_call", "id": "c", "name": "bash", "arguments": {"c": KEY}},
        ],
    }
    path = await raw_store(
        tmp_path / "old.sqlite", {"role": "user", "content": f"key {KEY}"}, assistant
    )
    assert KEY.encode() in path.read_bytes()
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "markdown", "html"])
async def test_an_export_of_a_store_holding_a_key_prints_it_redacted(
    unredacted_store: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    exported = await export(unredacted_store, fmt)

    assert KEY not in exported
    assert exported.count("[redacted]") >= 3
