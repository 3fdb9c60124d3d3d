"""The MCP bench runs end to end at a tiny size and reports both rounds and their ratio (issue 16).

Figures are never asserted (DESIGN.md section 6): only that each was measured.
"""

from __future__ import annotations

import json

import pytest

from pi_durable_tui.bench import mcp_round


def test_a_small_run_reports_the_builtin_and_the_mcp_round_and_their_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert mcp_round.main(["--rounds", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)

    assert set(report) == {"builtin", "mcp", "ratio"}
    for workload in ("builtin", "mcp"):
        assert report[workload]["rounds"] == 3
        assert report[workload]["p99_ms"] >= report[workload]["p50_ms"] > 0
    assert report["ratio"] > 0
