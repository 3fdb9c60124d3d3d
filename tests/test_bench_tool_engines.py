"""The tool-engines benchmark runs end to end on tiny inputs and reports every workload.

Only the report's shape is checked; figures are never asserted (DESIGN.md section 6).
"""

from __future__ import annotations

import json

import pytest

from pi_durable_tui.bench import tool_engines


def test_a_tiny_run_reports_each_workload_with_its_median_and_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert tool_engines.main(["--json", "--repeat", "1", "--lines", "300", "--megabytes", "1"]) == 0
    report = json.loads(capsys.readouterr().out)

    assert list(report) == ["diff_few_edits", "diff_rewrite", "edit_few_edits", "read_big_file"]
    for row in report.values():
        assert row["p50_ms"] > 0
        assert row["floor_p50_ms"] > 0
        assert row["ratio"] > 0
