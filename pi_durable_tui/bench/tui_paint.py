"""Child process of the TUI benchmark: start an app, report its first paint and RSS.

``python -m pi_durable_tui.bench.tui_paint KIND BLOCKS SPAWN_TIME`` runs ``KIND``
(``bare``: a Textual app with one ``Static``; ``app``: ``PidurableApp`` over a
static model of ``BLOCKS`` blocks) headless at 120x40 and prints one JSON line:
``paint_s`` (from ``SPAWN_TIME``, the parent's ``time.time()`` just before it
started this process, to the first refresh after mount, so interpreter start and
imports count, minus ``model_s``, the time spent building the sample blocks,
which a real session reads lazily), ``model_s`` and ``rss_mib`` (peak RSS at
first paint).
"""

from __future__ import annotations

import json
import resource
import sys
import time


def _run(kind: str, blocks: int, spawned: float) -> dict[str, float]:
    from textual.app import App, ComposeResult

    model_s = 0.0
    app: App[None]
    if kind == "bare":
        from textual.widgets import Static

        class Bare(App[None]):
            def compose(self) -> ComposeResult:
                yield Static("pidurable")

        app = Bare()
    else:
        from pi_durable_tui.bench.tui_model import (
            RecordingController,
            StaticScreenModel,
            sample_blocks,
        )
        from pi_durable_tui.tui import PidurableApp

        started = time.perf_counter()
        model = StaticScreenModel(sample_blocks(blocks))
        model_s = time.perf_counter() - started
        app = PidurableApp(model, RecordingController(model))
    painted: dict[str, float] = {}

    def first_paint() -> None:
        painted["at"] = time.time()
        rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        painted["rss_mib"] = rss_kib / 1024
        app.exit()

    async def after_start(pilot: object) -> None:
        # The auto-pilot starts once the first screen is mounted; the callback runs
        # after the refresh that paints it.
        app.call_after_refresh(first_paint)

    app.run(headless=True, size=(120, 40), auto_pilot=after_start)
    return {
        "paint_s": painted["at"] - spawned - model_s,
        "model_s": model_s,
        "rss_mib": painted["rss_mib"],
    }


def main(argv: list[str]) -> int:
    """Run one first-paint measurement and print it as JSON.

    Args:
        argv: ``KIND BLOCKS SPAWN_TIME``.

    Returns:
        0.
    """
    kind, blocks, spawned = argv[0], int(argv[1]), float(argv[2])
    sys.stdout.write(json.dumps(_run(kind, blocks, spawned)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
