"""Benchmark: the pidurable screen against floors measured in the same run.

``python -m pi_durable_tui.bench tui [--json] [--repeat N] [--tokens N]``

- ``first_paint``: ``python -m pi_durable_tui --model faux/faux-1`` (the real
  ``pidurable``, a new session in a fresh directory) started in a pseudo-terminal
  of 120x40, from just before the spawn until the terminal shows the footer's
  hints line; the floor, ``baseline.bare_textual``, is a bare Textual app with one
  ``Static`` started the same way, until that ``Static`` shows. Target: ratio <= 2.
- ``first_paint_10000``: ``python -m pi_durable_tui -c`` on a session of 10,000
  user entries until its last entry is painted, against the same on a session of
  10 entries (the transcript is windowed). Target: ratio <= 1.5. ``rss``: the
  peak RSS (``VmHWM``) of those two processes when their last entry shows, and
  their ratio. ``tui_paint`` says how the sessions are prepared.
- Each of these commands runs ``--repeat`` times, the kinds interleaved; each
  figure is its best run.
- ``stream``: in one process (``run_test``, headless, which does the full
  rendering work: DESIGN.md section 5), ``--tokens`` tokens are appended to a
  streaming assistant block at 200 tokens/s, each as a model update. ``lag_ms``
  p50/p99 is the time from an update to the first render of the live tail that
  includes it (target p99 <= 150 ms); ``cpu_ms_per_token`` is the process CPU
  time of the stream divided by the tokens, ``cpu_share`` the CPU time divided
  by the wall time.
- ``keystroke``: every 50 ms during the stream a key press is posted to the app as
  the terminal driver would; ``echo_ms`` p50/p99 is the time from the press to the
  first render of the editor showing it (target p99 <= 50 ms). The floor,
  ``keystroke_idle``, is the same with no stream.

Figures are printed with ``pass``/``MISS`` for the targets, never asserted
(DESIGN.md section 6). ``--smoke`` (hidden) runs a tiny version for the tests: one run of
each command, a long session of 200 entries, 40 tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable

from pi_durable_tui.bench.tui_paint import Report, measure_paint


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _stream(tokens: int, *, stream: bool, keys_every_s: float) -> dict[str, float]:
    from textual import events
    from textual.geometry import Region
    from textual.strip import Strip

    from pi_durable_tui.app import Block
    from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
    from pi_durable_tui.bench.tui_model import sample_blocks as blocks
    from pi_durable_tui.tui import PidurableApp

    model = StaticScreenModel(blocks(10))
    app = PidurableApp(model, RecordingController(model))
    paints: list[tuple[float, int]] = []
    echoes: list[tuple[float, int]] = []
    pushes: list[tuple[float, int]] = []
    presses: list[tuple[float, int]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        model.append(Block("live", "assistant", text="", streaming=True))
        await pilot.pause()
        # Only public faces here: the live message's tail widget is found by its CSS
        # type, and its paints (and the editor's) are timed by wrapping its instance.
        live = app.transcript.view("live")
        assert live is not None
        tail = live.query_one("LiveTail")
        tail_render, editor_render = tail.render_lines, app.editor.render_line

        def render_tail(crop: Region) -> list[Strip]:
            paints.append((time.perf_counter(), getattr(live, "shown_length", 0)))
            return tail_render(crop)

        def render_editor(y: int) -> Strip:
            echoes.append((time.perf_counter(), len(app.editor.text)))
            return editor_render(y)

        tail.render_lines = render_tail  # type: ignore[method-assign]
        app.editor.render_line = render_editor  # type: ignore[method-assign]
        text = ""
        cpu, wall = time.process_time(), time.perf_counter()
        next_key = wall
        for index in range(tokens):
            due = wall + index * 0.005
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            if stream:
                text += f"word{index} " + ("\n\n" if index % 40 == 39 else "")
                model.update("live", text=text)
                pushes.append((time.perf_counter(), len(text)))
            if time.perf_counter() >= next_key:
                next_key += keys_every_s
                app.post_message(events.Key("x", "x"))
                presses.append((time.perf_counter(), len(presses) + 1))
        await pilot.pause(0.3)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    lags = _lags(pushes, paints)
    echo = _lags(presses, echoes)
    result = {
        "echo_p50_ms": _percentile(echo, 0.5) * 1000,
        "echo_p99_ms": _percentile(echo, 0.99) * 1000,
        "presses": float(len(presses)),
    }
    if stream:
        result.update(
            lag_p50_ms=_percentile(lags, 0.5) * 1000,
            lag_p99_ms=_percentile(lags, 0.99) * 1000,
            cpu_ms_per_token=cpu * 1000 / tokens,
            cpu_share=cpu / wall,
            tokens=float(tokens),
        )
    return result


def _lags(events: list[tuple[float, int]], renders: list[tuple[float, int]]) -> list[float]:
    """For each (time, size) event, the delay to the first render at or above that size."""
    lags: list[float] = []
    position = 0
    for at, size in events:
        while position < len(renders) and (
            renders[position][0] < at or renders[position][1] < size
        ):
            position += 1
        if position == len(renders):
            lags.append(float("inf"))
        else:
            lags.append(renders[position][0] - at)
    return lags


def measure_stream(tokens: int, log: Callable[[str], None]) -> Report:
    """Measure streaming lag, CPU and keystroke echo, with the idle echo floor."""
    log("keystrokes without a stream")
    idle = asyncio.run(_stream(tokens, stream=False, keys_every_s=0.05))
    log(f"stream of {tokens} tokens at 200 tokens/s with keystrokes")
    busy = asyncio.run(_stream(tokens, stream=True, keys_every_s=0.05))
    return {
        "baseline.keystroke_idle": {
            "echo_p50_ms": idle["echo_p50_ms"],
            "echo_p99_ms": idle["echo_p99_ms"],
        },
        "stream": {
            key: busy[key]
            for key in ("lag_p50_ms", "lag_p99_ms", "cpu_ms_per_token", "cpu_share", "tokens")
        }
        | {"target": 150.0},
        "keystroke": {
            "echo_p50_ms": busy["echo_p50_ms"],
            "echo_p99_ms": busy["echo_p99_ms"],
            "ratio": busy["echo_p99_ms"] / max(idle["echo_p99_ms"], 1e-3),
            "target": 50.0,
        },
    }


def _verdicts(report: Report) -> list[tuple[str, str, float, float]]:
    checks = [
        ("first_paint", "ratio"),
        ("first_paint_10000", "ratio"),
        ("stream", "lag_p99_ms"),
        ("keystroke", "echo_p99_ms"),
    ]
    rows = []
    for key, metric in checks:
        if key in report:
            value, limit = report[key][metric], report[key]["target"]
            report[key]["pass"] = value <= limit
            rows.append((key, metric, value, limit))
    return rows


def render(report: Report) -> str:
    """Format the report as a table with the targets."""
    lines = ["workload                   figures"]
    for key, values in report.items():
        shown = "  ".join(
            f"{name}={value:.3f}" if isinstance(value, float) else f"{name}={value}"
            for name, value in values.items()
            if name not in ("target", "pass")
        )
        lines.append(f"{key:<26} {shown}")
    lines.append("")
    for key, metric, value, limit in _verdicts(report):
        verdict = "pass" if value <= limit else "MISS"
        lines.append(f"target {key}.{metric} <= {limit:g}: {value:.3f} {verdict}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Run the TUI benchmark.

    Args:
        argv: Command-line arguments after ``tui``.

    Returns:
        0.
    """
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench tui")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeat", type=int, default=5, help="first-paint runs per kind")
    parser.add_argument("--tokens", type=int, default=600, help="tokens streamed (200/s)")
    parser.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    repeat, tokens, entries = (1, 40, 200) if args.smoke else (args.repeat, args.tokens, 10_000)

    def log(text: str) -> None:
        sys.stderr.write(f"[tui bench] {text}\n")

    report = measure_paint(repeat, entries, log) | measure_stream(tokens, log)
    table = render(report)
    sys.stdout.write((json.dumps(report) if args.json else table) + "\n")
    return 0
