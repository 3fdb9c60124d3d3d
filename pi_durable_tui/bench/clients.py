"""``python -m pi_durable_tui.bench clients``: what attached clients cost (issue 15).

Three figures, each against a baseline measured in the same run:

1. attach to a ready view: ``attach_screen`` on a 10,000-entry session against
   a 10-entry one (target: at most 1.5x), both served by a real ``SessionHost``
   over its Unix socket: the snapshot is a window, not the history. The figure
   is the view model's (``LiveScreenModel``) blocks being built, not a
   terminal's paint (``bench tui`` measures painting);
2. bytes on the wire per streamed word (``w0001 ``, about two faux tokens)
   against the word's own bytes, everything a follower read included (welcome,
   snapshot, the usage and agent documents): the frames of a streamed answer
   are string ``append`` operations, so the ratio is the envelope's cost;
3. 1, 5 and 20 followers, each a separate process reading the socket, while
   the faux model streams at 200 tokens/s: the host process's CPU seconds
   (``getrusage``) per run, as a ratio to one follower (target: 20 cost at
   most 2x), and the commit-to-receipt lag p99 per follower (target at most
   150 ms): the host stamps each commit's wall time when it is published, a
   follower stamps each frame when it reads it. The same again with web
   followers: each a process reading the page's WebSocket (``WebServer`` on
   127.0.0.1, aiohttp's client), the one host code path over another transport
   (``web.followers.N.*``).

``--smoke`` runs a short version (the test suite checks the report's shape);
``--json`` prints the figures as one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FOLLOWER = r"""
import json, socket, sys, time
sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
sock.sendall(b'{"t": "hello", "v": 1, "name": "bench"}\n')
seen = []
size = 0
for line in sock.makefile("rb"):
    size += len(line)
    message = json.loads(line)
    if message["t"] == "commit":
        seen.append((message["seq"], time.time()))
    elif message["t"] == "bye":
        break
print(json.dumps({"bytes": size, "seen": seen}))
"""


WEB_FOLLOWER = r"""
import asyncio, json, sys, time
import aiohttp
async def main():
    seen = []
    size = 0
    async with aiohttp.ClientSession() as client:
        async with client.ws_connect(sys.argv[1], max_msg_size=0) as ws:
            await ws.send_str('{"t": "hello", "v": 1, "name": "bench-web"}')
            async for frame in ws:
                if frame.type != aiohttp.WSMsgType.TEXT:
                    break
                size += len(frame.data.encode())
                message = json.loads(frame.data)
                if message["t"] == "commit":
                    seen.append((message["seq"], time.time()))
                elif message["t"] == "bye":
                    break
    print(json.dumps({"bytes": size, "seen": seen}))
asyncio.run(main())
"""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _served(home: Path, answer: str, tps: float, entries: int) -> Any:
    """An open session (faux model) with ``entries`` seeded entries and its started host."""
    from pi_durable_tui.ai import FauxProvider, faux_response, faux_text
    from pi_durable_tui.app import AgentApp, AppOptions, PermissionChoices, SessionHost

    work = home / f"work-{entries}-{len(answer)}-{time.monotonic_ns()}"
    work.mkdir(parents=True)
    faux = FauxProvider([faux_response(faux_text(answer))], tokens_per_second=tps)
    options = AppOptions(
        cwd=str(work), model="faux/faux-1", permissions=PermissionChoices(mode="auto")
    )
    app = await AgentApp.open(options, faux=faux)
    root = app.root
    for start in range(0, entries, 1000):

        def append(tx: Any, start: int = start) -> None:
            for n in range(start, min(entries, start + 1000)):
                message = {"role": "user", "content": f"message {n}", "timestamp": 0}
                tx.append(root.id, "pi.user", model=[message])

        await root.commit(append)
    host = SessionHost(app, name=None)
    await host.start()
    return app, host


async def _attach_ms(home: Path, entries: int, runs: int) -> float:
    from pi_durable_tui.app import attach_screen

    app, host = await _served(home, "unused", 0, entries)
    times = []
    try:
        for _ in range(runs):
            started = time.perf_counter()
            model, controller = await attach_screen(app.store)
            assert model.blocks
            times.append((time.perf_counter() - started) * 1000)
            await controller.close()
    finally:
        await host.close()
        await app.close()
    return statistics.median(times)


async def _stream(home: Path, followers: int, tokens: int, web: bool = False) -> dict[str, Any]:
    from pi_durable_tui.app.web import WebAddress, WebServer
    from pi_durable_tui.harness import Input

    words = " ".join(f"w{n:04d}" for n in range(tokens))
    app, host = await _served(home, words, 200.0, 0)
    published: dict[int, float] = {}
    app.harness.session.subscribe(lambda info: published.setdefault(info.seq, time.time()))
    page = WebServer(host, WebAddress("127.0.0.1", 0)) if web else None
    if page is not None:
        base, token = (await page.start()).split("/?token=")
        # The follower's argument: the WebSocket URL, or the socket relative to its
        # cwd (a socket path is limited to 107 bytes).
        script, target = WEB_FOLLOWER, f"ws{base[4:]}/ws?token={token}"
    else:
        script, target = FOLLOWER, host.path.name
    readers = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, target, stdout=subprocess.PIPE, cwd=host.path.parent
        )
        for _ in range(followers)
    ]
    while host.attached < followers:
        await asyncio.sleep(0.01)
    cpu = _cpu()
    submission = await app.root.submit(Input("stream"))
    await submission.wait()
    await app.harness.wait_for_idle()
    cpu = _cpu() - cpu
    await host.close()
    results = [json.loads((await reader.communicate())[0]) for reader in readers]
    if page is not None:
        await page.close()
    await app.close()
    lags = sorted(
        (received - published[seq]) * 1000
        for result in results
        for seq, received in result["seen"]
        if seq in published
    )
    p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))] if lags else 0.0
    return {
        "cpu_s": cpu,
        "lag_p99_ms": p99,
        "wire_bytes": results[0]["bytes"] if results else 0,
        "text_bytes": len(words.encode()),
        "tokens": tokens,
    }


async def _run(smoke: bool) -> dict[str, Any]:
    runs = 2 if smoke else 5
    tokens = 40 if smoke else 400
    before = os.environ.get("PIDURABLE_HOME")
    with tempfile.TemporaryDirectory(prefix="pidurable-bench-clients-") as tmp:
        home = Path(tmp)
        os.environ["PIDURABLE_HOME"] = str(home / "home")  # sessions of this run only
        try:
            small = await _attach_ms(home, 10, runs)
            large = await _attach_ms(home, 1000 if smoke else 10_000, runs)
            streams = {n: await _stream(home, n, tokens) for n in (1, 5, 20)}
            webs = {n: await _stream(home, n, tokens, web=True) for n in (1, 5, 20)}
        finally:
            if before is None:
                os.environ.pop("PIDURABLE_HOME", None)
            else:
                os.environ["PIDURABLE_HOME"] = before
    one = streams[1]
    per_word_wire = one["wire_bytes"] / one["tokens"]
    per_word_text = one["text_bytes"] / one["tokens"]
    report: dict[str, Any] = {
        "attach.10_entries_ms": round(small, 2),
        "attach.10000_entries_ms": round(large, 2),
        "attach.ratio": round(large / small, 2),
        "wire.bytes_per_streamed_word": round(per_word_wire, 1),
        "wire.word_bytes": round(per_word_text, 1),
        "wire.ratio": round(per_word_wire / per_word_text, 2),
    }
    for n, figures in streams.items():
        report[f"followers.{n}.host_cpu_s"] = round(figures["cpu_s"], 3)
        report[f"followers.{n}.cpu_ratio_to_1"] = round(figures["cpu_s"] / one["cpu_s"], 2)
        report[f"followers.{n}.lag_p99_ms"] = round(figures["lag_p99_ms"], 1)
    for n, figures in webs.items():
        report[f"web.followers.{n}.host_cpu_s"] = round(figures["cpu_s"], 3)
        report[f"web.followers.{n}.cpu_ratio_to_1"] = round(figures["cpu_s"] / webs[1]["cpu_s"], 2)
        report[f"web.followers.{n}.lag_p99_ms"] = round(figures["lag_p99_ms"], 1)
    return report


def main(argv: list[str]) -> int:
    """Run the benchmark; print one figure a line, or JSON with ``--json``."""
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench clients")
    parser.add_argument("--smoke", action="store_true", help="a short run (the test suite's)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    options = parser.parse_args(argv)
    report = asyncio.run(_run(options.smoke))
    if options.json:
        print(json.dumps(report))
    else:
        for name, value in report.items():
            print(f"{name:<32} {value}")
    return 0
