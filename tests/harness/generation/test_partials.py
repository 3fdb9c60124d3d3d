"""Streamed partials never commit a secret, not even its start (issue 13, R85).

The committed partial is the newest whole message with its growing strings
(text, thinking, tool-call argument strings) through ``SecretRedactor.streaming``:
what could still become a secret is withheld until later chunks decide.
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_durable_tui.ai import FauxProvider, faux_response, faux_thinking
from pi_durable_tui.env import SecretRedactor
from pi_durable_tui.harness import ProgressSettings, Settings
from pi_durable_tui.harness.generation._partials import withheld
from tests.harness.generation.test_generation import partials_of
from tests.harness.run_support import RigFactory, message, texts

SECRET = "sk-proj-Zq81mXc4Lr7Tw0Yb5Nf"


def partial(text: str, thinking: str, command: str) -> dict[str, Any]:
    """A dumped partial assistant message with one block of each growing kind."""
    return {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": thinking},
            {"type": "text", "text": text},
            {"type": "tool_call", "id": "c1", "name": "bash", "arguments": {"command": command}},
        ],
        "model": "faux-1",
    }


def pieces(value: str) -> list[str]:
    """Every start of the secret of 2 or more characters that ``value`` holds."""
    return [SECRET[:size] for size in range(2, len(SECRET) + 1) if SECRET[:size] in value]


@pytest.mark.parametrize("chunks", [2, 3, 4, 7, len(SECRET)])
def test_a_key_split_over_n_chunks_at_each_split_point_is_never_committed(chunks: int) -> None:
    redactor = SecretRedactor([SECRET])
    full = f"use {SECRET} now"
    start = full.index(SECRET)
    for first in range(1, len(SECRET)):
        rest = len(SECRET) - first
        cuts = [start + first + rest * i // (chunks - 1) for i in range(chunks - 1)]
        for end in [*cuts, len(full)]:
            grown = full[:end]
            committed = withheld(partial(grown, grown, grown), redactor.streaming)
            for block in committed["content"]:
                value = block.get("text") or block.get("thinking") or block["arguments"]["command"]
                assert pieces(value) == [], (cuts, end, value)
        assert committed["content"][1]["text"] == "use [redacted] now"
    assert committed["model"] == "faux-1"  # metadata is not touched


async def test_a_streamed_answer_thinking_and_tool_call_holding_a_key_never_commit_it(
    open_rig: RigFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    words = " ".join(f"w{i}" for i in range(30))
    faux = FauxProvider(
        [
            faux_response(
                faux_thinking(f"{words} {SECRET} {words}"), f"{words} the key {SECRET} {words}"
            )
        ],
        tokens_per_second=400,
    )
    rig = await open_rig(
        faux=faux, settings=Settings(progress=ProgressSettings(partial_interval_ms=5))
    )

    await rig.ask("go")

    streamed = partials_of(rig)
    assert len(streamed) >= 3
    for stored in streamed:
        for block in stored["content"]:
            assert pieces(str(block.get("text") or block.get("thinking") or "")) == []
    answer = (await rig.transcript())[-1]
    assert texts(answer) == f"{words} the key [redacted] {words}"
    assert SECRET not in str(message(answer))
