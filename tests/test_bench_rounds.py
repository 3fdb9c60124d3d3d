"""The rounds benchmark runs end to end at a tiny size and reports every figure.

Only the shape of the report is checked (keys, positive figures where work was
done, a real kill and resume): figures are never asserted (DESIGN.md section 6).
"""

from __future__ import annotations

import json

import pytest

from pi_durable_tui.bench import agent_rounds

PER_ROUND = ("commits", "op_bytes", "write_bytes", "reads", "hops", "tasks", "shields")


def test_a_small_run_reports_both_backends_the_floor_and_the_resume(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert agent_rounds.main(["--rounds", "6", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)

    assert set(report) == {"floor", "sqlite", "memory", "resume"}
    assert report["floor"]["p99_ms"] >= report["floor"]["p50_ms"] > 0
    for backend in ("sqlite", "memory"):
        row = report[backend]
        assert row["rounds"] == 6
        assert row["early_p99_ms"] >= row["early_p50_ms"] > 0
        assert row["late_p99_ms"] >= row["late_p50_ms"] > 0
        assert row["early_ratio"] > 0
        assert row["late_ratio"] > 0
        assert set(PER_ROUND) <= set(row["per_round"])
        assert row["per_round"]["commits"] >= 1
        assert row["per_round"]["tasks"] > 0
        assert row["per_round"]["loop_iterations"] > 0
    assert report["sqlite"]["per_round"]["hops"] > 0
    assert report["memory"]["per_round"]["hops"] == 0
    assert report["resume"]["p50_ms"] > 0
    assert report["resume"]["at_round"] == 6


def test_the_text_report_names_the_targets(capsys: pytest.CaptureFixture[str]) -> None:
    assert agent_rounds.main(["--rounds", "4"]) == 0
    out = capsys.readouterr().out

    assert "commit floor" in out
    assert "target <= 4" in out
    assert "resume after kill at round 4" in out
