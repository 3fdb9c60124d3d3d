"""The clients benchmark runs end to end in its smoke mode and reports every figure (issue 15).

Only the report's shape is checked; figures are never asserted (DESIGN.md section 6).
"""

from __future__ import annotations

import json

import pytest

from pi_durable_tui.bench import clients


def test_smoke_run_reports_attach_wire_and_follower_figures(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIDURABLE_HOME", "unused")  # the benchmark sets its own
    assert clients.main(["--smoke", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report)[:6] == [
        "attach.10_entries_ms",
        "attach.10000_entries_ms",
        "attach.ratio",
        "wire.bytes_per_streamed_word",
        "wire.word_bytes",
        "wire.ratio",
    ]
    for n in (1, 5, 20):
        assert {f"followers.{n}.host_cpu_s", f"followers.{n}.lag_p99_ms"} <= set(report)
        assert {f"web.followers.{n}.host_cpu_s", f"web.followers.{n}.lag_p99_ms"} <= set(report)
    assert all(isinstance(value, (int, float)) and value >= 0 for value in report.values())
