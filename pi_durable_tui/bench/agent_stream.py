"""Benchmark: a streamed answer through the harness, against the same stream consumed raw.

``python -m pi_durable_tui.bench stream [--tokens N] [--rate TPS] [--json]``

The faux provider streams one answer of ``--tokens`` tokens (default 20,000) at
``--rate`` tokens per second (default 5,000), so the stream itself takes about
four seconds. ``raw`` iterates that stream directly, as a client without any
durability would; ``harness`` sends it through a real harness on SQLite, where
partials are committed to ``pi.live`` at most every 100 ms and the answer is
committed at the end. Reported: wall seconds of each, ``ratio`` (harness / raw;
target at most 1.1), partial commits per second of streaming (target at most
11), and whether the final committed text equals the streamed text.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pi_durable_tui.ai import (
    Context,
    FauxProvider,
    StreamOptions,
    UserMessage,
    faux_response,
)
from pi_durable_tui.bench._agent_kit import open_agent
from pi_durable_tui.harness import LIVE_DOC, Input
from pi_durable_tui.kernel import CommitInfo

WORDS = ("durable ", "commit ", "stream ", "agent ", "token ", "screen ", "kill ", "resume ")


def answer_text(tokens: int) -> str:
    """An answer of about ``tokens`` faux tokens (4 characters each)."""
    words = [WORDS[i % len(WORDS)] for i in range(tokens // 2)]
    return "".join(words)[: tokens * 4]


async def _raw(text: str, rate: float) -> tuple[float, str]:
    faux = FauxProvider([faux_response(text)], tokens_per_second=rate)
    model = faux.get_model()
    context = Context(messages=[UserMessage(content="go")])
    started = time.perf_counter()
    message = await faux.stream(model, context, StreamOptions()).result()
    return time.perf_counter() - started, message.text()


async def _harness(directory: Path, text: str, rate: float) -> dict[str, Any]:
    kit = await open_agent(
        directory, factory=lambda *_: faux_response(text), tokens_per_second=rate, extensions=()
    )
    partials = 0

    def count(info: CommitInfo) -> None:
        nonlocal partials
        for change in info.documents:
            if change.address.kind == LIVE_DOC.kind and any(
                op.get("path", [])[:2] == ["generation", "message"] for op in change.ops
            ):
                partials += 1

    kit.harness.session.subscribe(count)
    try:
        started = time.perf_counter()
        record = await (await kit.root.submit(Input("go"))).wait()
        elapsed = time.perf_counter() - started
        stored = await kit.harness.session.storage.entry(record.answer or 0)
    finally:
        await kit.close()
    message: dict[str, Any] = {}
    if stored is not None and stored.entry.model and isinstance(stored.entry.model[0], dict):
        message = stored.entry.model[0]
    committed = "".join(
        b.get("text", "") for b in message.get("content", []) if b.get("type") == "text"
    )
    return {"seconds": elapsed, "partial_commits": partials, "text": committed}


async def measure(tokens: int, rate: float) -> dict[str, Any]:
    """Run both workloads; return the report keyed by workload."""
    text = answer_text(tokens)
    raw_seconds, raw_text = await _raw(text, rate)
    with tempfile.TemporaryDirectory(prefix="pidurable-bench-") as name:
        through = await _harness(Path(name), text, rate)
    return {
        "raw": {"seconds": round(raw_seconds, 3), "tokens": tokens, "rate": rate},
        "harness": {
            "seconds": round(through["seconds"], 3),
            "ratio": round(through["seconds"] / raw_seconds, 3),
            "partial_commits": through["partial_commits"],
            "commits_per_second": round(through["partial_commits"] / raw_seconds, 2),
            "text_identical": through["text"] == raw_text == text,
        },
    }


def main(argv: list[str]) -> int:
    """Run the benchmark; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench stream")
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--rate", type=float, default=5000.0, help="tokens per second")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    report = asyncio.run(measure(max(10, args.tokens), max(1.0, args.rate)))
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
        return 0
    raw, harness = report["raw"], report["harness"]
    sys.stdout.write(
        f"A faux stream of {raw['tokens']} tokens at {raw['rate']:.0f} tokens/s\n"
        f"  raw:      {raw['seconds']:.3f} s\n"
        f"  harness:  {harness['seconds']:.3f} s  ratio {harness['ratio']} (target <= 1.1)\n"
        f"  partial commits: {harness['partial_commits']} "
        f"({harness['commits_per_second']}/s, target <= 11)\n"
        f"  final committed text identical: {harness['text_identical']}\n"
    )
    return 0
