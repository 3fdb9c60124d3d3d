"""The storage benchmark runs end to end in its tiny smoke mode and reports every workload.

Only the shape of the report is checked (keys, positive figures, ratios where
they belong, no wrong answers): figures are never asserted (DESIGN.md section 6).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.bench import storage
from pi_durable_tui.bench.storage import PROFILES, evaluate_targets, render, workload_keys

COMMITS = ("commit_1_entry", "commit_100_entries", "commit_mixed", "session_commit_1_entry")


def _numbers(entry: dict[str, Any]) -> list[float]:
    return [v for v in entry.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]


def test_smoke_run_reports_every_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert storage.main(["--smoke", "--json", "--dir", str(tmp_path), "--no-postgres"]) == 0
    report = json.loads(capsys.readouterr().out)

    assert list(report) == workload_keys(PROFILES["smoke"], postgres=False)
    for key in (
        "baseline.raw_sqlite3.commit_1_row",
        "baseline.aiosqlite.commit_1_row",
        "sqlite.commit_1_entry",
        "sqlite.session_commit_1_entry",
        "jsonl.doc_tail_1024_historical",
        "sqlite.fork_head_lookup",
        "jsonl.reopen_200",
        "memory.commit_1_entry_at_200",
        "sqlite.memory_200",
        "sqlite.sustained_commit_1_entry",
        "baseline.raw_sqlite3.sustained_commit_1_row",
        "baseline.aiosqlite.open_and_read_200",
    ):
        assert key in report
    for key, entry in report.items():
        assert "wrong" not in entry, f"{key}: {entry['wrong']}"
        workload = key.split(".", 1)[1]
        if workload.startswith("memory_"):
            assert entry["tracemalloc_peak_mib"] > 0
            assert entry["tracemalloc_held_mib"] > 0
            assert isinstance(entry["rss_held_mib"], float)  # a few pages either way at 200
            continue
        assert all(value > 0 for value in _numbers(entry)), (key, entry)
        assert entry["p99_ms"] >= entry["p50_ms"] > 0
        assert entry["n"] > 0
        is_commit = workload in COMMITS or workload.startswith("commit_1_entry_at_")
        if is_commit and not key.startswith("baseline."):
            assert entry["ratio"] > 0
            assert entry["ratio_raw"] > 0
        if workload.startswith(("reopen_", "commit_1_entry_at_")):
            assert entry["ratio_vs_1k"] > 0
    assert isinstance(report["sqlite.commit_1_entry"]["targets"]["ratio"]["pass"], bool)
    assert report["sqlite.session_commit_1_entry"]["targets"]["ratio"]["limit"] == 3.0
    sustained = report["sqlite.sustained_commit_1_entry"]
    assert sustained["n"] == PROFILES["smoke"].sustained
    assert sustained["targets"]["p99_over_p50"]["limit"] == 3.0
    for key in ("sqlite.sustained_commit_1_entry", "baseline.raw_sqlite3.sustained_commit_1_row"):
        assert report[key]["wal_frames_per_commit"] >= 1.0  # a commit writes at least a page
    assert set(report["sqlite.reopen_200"]["targets"]) == {"ratio", "ratio_vs_1k"}
    assert report["sqlite.reopen_200"]["ratio"] > 0
    assert not list(tmp_path.iterdir())  # every store was removed

    targets = evaluate_targets(report, "200", "100")
    table = render(report, targets, "smoke")
    assert "Targets (printed, never asserted)" in table
    assert table.count("[pass]") + table.count("[MISS]") == len(targets) == 9
    assert "Sustained one-entry commits" in table
    assert "WRONG ANSWERS" not in table


def test_smoke_run_on_postgresql_reports_its_rows_beside_raw_asyncpg(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    argv = ["--smoke", "--json", "--dir", str(tmp_path), "--database", postgres_url]
    assert storage.main([*argv, "--only-postgres"]) == 0
    report = json.loads(capsys.readouterr().out)

    every = workload_keys(PROFILES["smoke"])
    assert list(report) == every[every.index("baseline.asyncpg.commit_1_row") :]
    for key in (
        "baseline.asyncpg.commit_1_row",
        "baseline.asyncpg.insert_1_row",
        "postgres.commit_1_entry",
        "baseline.asyncpg.connect_and_read",
        "postgres.reopen_100",
        "postgres.reopen_200",
    ):
        entry = report[key]
        assert entry["p99_ms"] >= entry["p50_ms"] > 0, key
    assert report["postgres.commit_1_entry"]["ratio"] > 0
    assert report["postgres.commit_1_entry"]["ratio_insert"] > 0
    assert report["postgres.reopen_200"]["ratio_vs_1k"] > 0
    sqlite, postgres = report["sqlite.tool_round"], report["postgres.tool_round"]
    assert sqlite["commits"] > 0
    assert postgres["commits_vs_sqlite"] == postgres["commits"] / sqlite["commits"]

    targets = [t for t in evaluate_targets(report, "200", "100") if t.key in report]
    assert len(targets) == 3
    table = render(report, targets, "smoke")
    assert "PostgreSQL, ms" in table
    assert "Tool round on PostgreSQL, commits vs on SQLite" in table
    assert postgres_url not in table
