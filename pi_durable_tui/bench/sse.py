"""Benchmark: the providers' SSE parsing path against iterating the raw bytes.

``python -m pi_durable_tui.bench sse [--json] [--repeat N] [--size BYTES]
[--chunk BYTES]``. For each HTTP API it synthesizes a recorded-style stream of
about ``--size`` bytes (thinking, text and tool calls split into many small
deltas, as the wire formats of model-layer.md 2.2-2.4 describe), serves it from
memory through ``httpx.MockTransport`` (no network) and measures, in the same
process and with the same client:

- ``raw``: iterating the response bytes (the baseline);
- ``sse``: decoding server-sent events with httpx-sse, nothing else;
- ``provider``: the real provider path, from request to the terminal event.

It reports stream events per second, the time ratio to the baseline and the
added latency per event in microseconds ((provider - raw) / events). The best
of ``--repeat`` runs counts. Figures are printed, never asserted (DESIGN.md 6).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
from httpx_sse import EventSource

from pi_durable_tui.ai import (
    Context,
    Model,
    ModelCost,
    StreamOptions,
    UserMessage,
    create_providers,
)

WORDS = (
    "the model streams small deltas of text while the harness commits them;",
    "a tool call arrives as fragments of JSON \u2014 paths, patterns, file contents.",
    "line\u2028separators and emoji \U0001f642 travel inside JSON strings.",
)
APIS = ("anthropic-messages", "openai-completions", "openai-responses")


def _words() -> Iterator[str]:
    for word in itertools.cycle(" ".join(WORDS).split(" ")):
        yield word + " "


def _event(name: str | None, data: dict[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (f"event: {name}\n" if name else "") + f"data: {text}\n\n"


def anthropic_stream(size: int) -> bytes:
    """Synthesize an Anthropic Messages stream of about ``size`` bytes."""
    words = _words()
    usage = {"input_tokens": 900, "cache_read_input_tokens": 4000, "output_tokens": 1}
    start = {"type": "message_start", "message": {"id": "msg_bench", "content": [], "usage": usage}}
    parts = [_event("message_start", start)]
    total = len(parts[0])
    index = 0
    while total < size:
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = [
            (
                {"type": "thinking", "thinking": "", "signature": ""},
                [{"type": "thinking_delta", "thinking": next(words)} for _ in range(20)]
                + [{"type": "signature_delta", "signature": "c2lnbmF0dXJl"}],
            ),
            (
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": next(words)} for _ in range(200)],
            ),
            (
                {"type": "tool_use", "id": f"toolu_{index}", "name": "write", "input": {}},
                [{"type": "input_json_delta", "partial_json": '{"path": "a.txt", "content": "'}]
                + [{"type": "input_json_delta", "partial_json": next(words)} for _ in range(60)]
                + [{"type": "input_json_delta", "partial_json": '"}'}],
            ),
        ]
        for block, deltas in blocks:
            chunk = [
                _event(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": block},
                )
            ]
            chunk += [
                _event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
                for delta in deltas
            ]
            chunk.append(
                _event("content_block_stop", {"type": "content_block_stop", "index": index})
            )
            parts.extend(chunk)
            total += sum(len(part) for part in chunk)
            index += 1
    parts.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 5000},
            },
        )
    )
    parts.append(_event("message_stop", {"type": "message_stop"}))
    return "".join(parts).encode()


def completions_stream(size: int) -> bytes:
    """Synthesize a Chat Completions stream of about ``size`` bytes."""
    words = _words()

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        body = {
            "id": "chatcmpl-bench",
            "model": "bench",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return _event(None, body)

    parts: list[str] = []
    total = 0
    call = 0
    while total < size:
        batch = [chunk({"reasoning_content": next(words)}) for _ in range(20)]
        batch += [chunk({"content": next(words)}) for _ in range(200)]
        opening = {
            "index": call,
            "id": f"call_{call}",
            "type": "function",
            "function": {"name": "write", "arguments": '{"path": "a.txt", "content": "'},
        }
        batch.append(chunk({"tool_calls": [opening]}))
        batch += [
            chunk({"tool_calls": [{"index": call, "function": {"arguments": next(words)}}]})
            for _ in range(60)
        ]
        batch.append(chunk({"tool_calls": [{"index": call, "function": {"arguments": '"}'}}]}))
        parts.extend(batch)
        total += sum(len(part) for part in batch)
        call += 1
    parts.append(chunk({}, "tool_calls"))
    usage = {
        "prompt_tokens": 4900,
        "completion_tokens": 5000,
        "prompt_tokens_details": {"cached_tokens": 4000},
    }
    parts.append(_event(None, {"id": "chatcmpl-bench", "choices": [], "usage": usage}))
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def responses_stream(size: int) -> bytes:
    """Synthesize a Responses API stream of about ``size`` bytes."""
    words = _words()
    sequence = itertools.count()

    def event(kind: str, **fields: Any) -> str:
        return _event(kind, {"type": kind, "sequence_number": next(sequence), **fields})

    parts = [event("response.created", response={"id": "resp_bench", "status": "in_progress"})]
    total = len(parts[0])
    output = 0
    while total < size:
        rs, msg, fc = f"rs_{output}", f"msg_{output}", f"fc_{output}"
        batch = [
            event(
                "response.output_item.added",
                output_index=output,
                item={"id": rs, "type": "reasoning", "summary": []},
            )
        ]
        batch += [
            event(
                "response.reasoning_summary_text.delta",
                item_id=rs,
                output_index=output,
                delta=next(words),
            )
            for _ in range(20)
        ]
        batch.append(
            event(
                "response.output_item.done",
                output_index=output,
                item={"id": rs, "type": "reasoning", "summary": [], "encrypted_content": "ZW5j"},
            )
        )
        batch.append(
            event(
                "response.output_item.added",
                output_index=output + 1,
                item={"id": msg, "type": "message", "content": []},
            )
        )
        batch += [
            event(
                "response.output_text.delta",
                item_id=msg,
                output_index=output + 1,
                content_index=0,
                delta=next(words),
            )
            for _ in range(200)
        ]
        batch.append(
            event(
                "response.output_item.done",
                output_index=output + 1,
                item={"id": msg, "type": "message", "content": []},
            )
        )
        batch.append(
            event(
                "response.output_item.added",
                output_index=output + 2,
                item={
                    "id": fc,
                    "type": "function_call",
                    "call_id": f"call_{output}",
                    "name": "write",
                    "arguments": "",
                },
            )
        )
        batch.append(
            event(
                "response.function_call_arguments.delta",
                item_id=fc,
                output_index=output + 2,
                delta='{"path": "a.txt", "content": "',
            )
        )
        batch += [
            event(
                "response.function_call_arguments.delta",
                item_id=fc,
                output_index=output + 2,
                delta=next(words),
            )
            for _ in range(60)
        ]
        batch.append(
            event(
                "response.function_call_arguments.delta",
                item_id=fc,
                output_index=output + 2,
                delta='"}',
            )
        )
        batch.append(
            event(
                "response.output_item.done",
                output_index=output + 2,
                item={
                    "id": fc,
                    "type": "function_call",
                    "call_id": f"call_{output}",
                    "name": "write",
                },
            )
        )
        parts.extend(batch)
        total += sum(len(part) for part in batch)
        output += 3
    usage = {
        "input_tokens": 4900,
        "input_tokens_details": {"cached_tokens": 4000},
        "output_tokens": 5000,
    }
    parts.append(
        event(
            "response.completed",
            response={"id": "resp_bench", "status": "completed", "usage": usage},
        )
    )
    return "".join(parts).encode()


SYNTHESIZERS: dict[str, Callable[[int], bytes]] = {
    "anthropic-messages": anthropic_stream,
    "openai-completions": completions_stream,
    "openai-responses": responses_stream,
}


class _Chunks(httpx.AsyncByteStream):
    """A response body served from memory in fixed-size chunks."""

    def __init__(self, data: bytes, size: int) -> None:
        self._data = data
        self._size = size

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self._data), self._size):
            yield self._data[start : start + self._size]


def _client(data: bytes, chunk: int) -> httpx.AsyncClient:
    def serve(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, headers=headers, stream=_Chunks(data, chunk))

    return httpx.AsyncClient(transport=httpx.MockTransport(serve))


async def _measure(api: str, data: bytes, chunk: int, repeat: int) -> dict[str, Any]:
    client = _client(data, chunk)
    provider = create_providers(lambda name: "bench-key", client)[api]
    model = Model(
        id="bench",
        api=api,
        provider="bench",
        base_url="http://bench.invalid/v1",
        cost=ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75),
    )
    context = Context(system_prompt="bench", messages=[UserMessage(content="go")])
    options = StreamOptions(idle_timeout_s=None)
    best = {"raw": float("inf"), "sse": float("inf"), "provider": float("inf")}
    counts = {"sse_events": 0, "stream_events": 0}
    try:
        for _ in range(repeat):
            began = time.perf_counter()
            async with client.stream("POST", model.base_url) as response:
                async for _piece in response.aiter_bytes():
                    pass
            best["raw"] = min(best["raw"], time.perf_counter() - began)

            began = time.perf_counter()
            sse_events = 0
            async with client.stream("POST", model.base_url) as response:
                async for _event in EventSource(response).aiter_sse():
                    sse_events += 1
            best["sse"] = min(best["sse"], time.perf_counter() - began)

            began = time.perf_counter()
            stream_events = 0
            async for _item in provider.stream(model, context, options):
                stream_events += 1
            best["provider"] = min(best["provider"], time.perf_counter() - began)
            counts = {"sse_events": sse_events, "stream_events": stream_events}
    finally:
        await client.aclose()
    events = counts["stream_events"]
    return {
        "bytes": len(data),
        **counts,
        "raw_s": best["raw"],
        "sse_s": best["sse"],
        "provider_s": best["provider"],
        "raw_mb_per_s": len(data) / best["raw"] / 1e6,
        "provider_events_per_s": events / best["provider"],
        "provider_to_raw_ratio": best["provider"] / best["raw"],
        "added_us_per_event": (best["provider"] - best["raw"]) / events * 1e6,
        "sse_decoding_us_per_event": (best["sse"] - best["raw"]) / counts["sse_events"] * 1e6,
    }


def main(argv: list[str]) -> int:
    """Run the benchmark.

    Args:
        argv: Command-line arguments after ``sse``.

    Returns:
        The exit status (0).
    """
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench sse")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (best counts)")
    parser.add_argument("--size", type=int, default=1_000_000, help="bytes per recorded stream")
    parser.add_argument("--chunk", type=int, default=16_384, help="bytes per body chunk")
    args = parser.parse_args(argv)
    results = {
        api: asyncio.run(_measure(api, SYNTHESIZERS[api](args.size), args.chunk, args.repeat))
        for api in APIS
    }
    if args.json:
        report = {"benchmark": "sse", "repeat": args.repeat, "chunk": args.chunk, "apis": results}
        sys.stdout.write(json.dumps(report) + "\n")
        return 0
    sys.stdout.write(
        f"SSE parsing, best of {args.repeat}, {args.chunk}-byte chunks from memory\n"
        f"{'api':<20}{'bytes':>10}{'events':>8}{'raw MB/s':>10}{'events/s':>11}"
        f"{'x raw':>8}{'+us/event':>11}{'sse us/ev':>11}\n"
    )
    for api, row in results.items():
        sys.stdout.write(
            f"{api:<20}{row['bytes']:>10}{row['stream_events']:>8}{row['raw_mb_per_s']:>10.0f}"
            f"{row['provider_events_per_s']:>11.0f}{row['provider_to_raw_ratio']:>8.1f}"
            f"{row['added_us_per_event']:>11.1f}{row['sse_decoding_us_per_event']:>11.1f}\n"
        )
    return 0
