"""The large-message benchmark runs end to end at small sizes and prints every row.

Only the shape of the report is checked (workloads, ratios, correct answers and
written files): figures are never asserted (DESIGN.md section 6).
"""

from __future__ import annotations

import json

import pytest

from pi_durable_tui.bench import large_message

SIZES = ["--sizes", "0.01,0.03", "--repeat", "1"]


def test_a_small_run_reports_every_workload_correct_and_the_growth_ratios(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert large_message.main([*SIZES, "--json"]) == 0

    report = json.loads(capsys.readouterr().out)

    assert list(report) == ["text.0.01mb", "tool.0.01mb", "text.0.03mb", "tool.0.03mb", "ratios"]
    for key in ("text.0.01mb", "tool.0.01mb", "text.0.03mb", "tool.0.03mb"):
        assert "wrong" not in report[key], (key, report[key])
        assert report[key]["seconds"] > 0
    assert list(report["ratios"]) == [
        "text.0.03mb_over_0.01mb",
        "tool.0.03mb_over_0.01mb",
        "tool_over_text.0.01mb",
        "tool_over_text.0.03mb",
    ]
    assert all(entry["ratio"] > 0 for entry in report["ratios"].values())


def test_the_text_report_prints_one_row_per_workload_and_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert large_message.main(SIZES) == 0

    lines = capsys.readouterr().out.splitlines()

    assert lines[0].startswith("Large streamed messages")
    rows = [line.split()[0] for line in lines[1:]]
    assert rows == [
        "text.0.01mb",
        "tool.0.01mb",
        "text.0.03mb",
        "tool.0.03mb",
        "text.0.03mb_over_0.01mb",
        "tool.0.03mb_over_0.01mb",
        "tool_over_text.0.01mb",
        "tool_over_text.0.03mb",
    ]
    assert not any("WRONG" in line for line in lines)


def test_sizes_that_are_not_positive_numbers_are_refused_with_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        large_message.main(["--sizes", "one"])

    assert exit_.value.code == 2
    assert "--sizes wants numbers like 1,4, got 'one'" in capsys.readouterr().err
