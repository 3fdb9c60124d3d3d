"""The output benchmark runs end to end on a few MiB and reports every workload.

Only the report's shape is checked (keys, positive figures, no wrong counts):
figures are never asserted (DESIGN.md section 6).
"""

from __future__ import annotations

import json

import pytest

from pi_durable_tui.bench import output
from pi_durable_tui.bench.__main__ import main as bench_main


def test_a_small_run_reports_baseline_head_and_tail_with_ratios_and_peaks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench_main(["output", "--mib", "3", "--chunk", "64", "--repeat", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)

    assert list(report) == ["baseline", "head", "tail"]
    assert report["baseline"]["bytes"] == 3 * 1024 * 1024
    for name in ("head", "tail"):
        entry = report[name]
        assert "wrong" not in entry, entry["wrong"]
        assert entry["ratio"] > 0
        assert entry["seconds"] > 0
        assert entry["peak_kib"] > 0
        assert 0 < entry["kept_bytes"] <= 51200
        assert entry["dropped_lines"] > 0
        assert entry["progress_reads"] >= 1  # the first change commits at once


def test_the_table_names_every_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert output.main(["--mib", "1", "--repeat", "1"]) == 0
    table = capsys.readouterr().out
    for name in ("baseline", "head", "tail"):
        assert f"\n{name} " in table
    assert "WRONG" not in table


def test_generated_chunks_are_distinct_and_cut_inside_lines() -> None:
    chunks = output.generate_chunks(4096, 3)
    assert [len(chunk) for chunk in chunks] == [4096, 4096, 4096]
    assert len(set(chunks)) == 3
    assert not all(chunk.endswith(b"\n") for chunk in chunks)
