"""The TUI benchmark runs end to end in its smoke mode and reports every figure.

Only the report's shape is checked; figures are never asserted (DESIGN.md section 6).
"""

from __future__ import annotations

import json

import pytest

from pi_durable_tui.bench import tui


def test_smoke_run_reports_paint_memory_stream_and_keystroke_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert tui.main(["--smoke", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report) == [
        "baseline.bare_textual",
        "first_paint",
        "first_paint_10000",
        "rss",
        "baseline.keystroke_idle",
        "stream",
        "keystroke",
    ]
    assert report["first_paint"]["ratio"] > 0
    assert report["first_paint_10000"]["target"] == 1.5
    assert report["rss"]["rss_10000_mib"] > 0
    assert 0 < report["stream"]["lag_p50_ms"] < float("inf")
    assert report["stream"]["cpu_ms_per_token"] > 0
    assert report["keystroke"]["echo_p99_ms"] < float("inf")
    assert isinstance(report["keystroke"]["pass"], bool)


def test_the_table_names_each_target_with_its_verdict() -> None:
    report = {
        "first_paint": {"paint_s": 0.5, "ratio": 1.2, "target": 2.0},
        "stream": {"lag_p99_ms": 180.0, "target": 150.0},
    }
    table = tui.render(report)
    assert "target first_paint.ratio <= 2: 1.200 pass" in table
    assert "target stream.lag_p99_ms <= 150: 180.000 MISS" in table
