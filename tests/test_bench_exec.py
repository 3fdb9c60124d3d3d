"""The exec benchmark runs end to end on a small file and reports every workload.

Only the shape of the report is checked (keys, positive figures, no wrong
totals): figures are never asserted (DESIGN.md section 6).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_durable_tui.bench import exec_output
from tests.env.sshd_server import Sshd


def test_a_small_run_reports_every_workload_with_exact_totals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exec_output.main(["--mib", "2", "--repeat", "1", "--json", "--dir", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report) == [
        "baseline.cat_devnull",
        "baseline.cat_file",
        "exec.plain",
        "exec.tail",
        "exec.tail_spill",
        "exec.job",
    ]
    for key, entry in report.items():
        assert "wrong" not in entry, (key, entry)
        assert entry["wall_ms"] > 0
        assert entry["mib_per_s"] > 0
        if key.startswith("exec."):
            assert entry["ratio"] > 0
            assert entry["peak_rss_mib"] > 0
    assert list(tmp_path.iterdir()) == []


def test_with_an_ssh_env_the_ssh_workloads_report_exact_totals_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ssh_client: Sshd
) -> None:
    remote = tmp_path / "remote"
    remote.mkdir()
    argv = ["--mib", "2", "--repeat", "1", "--json", "--dir", str(tmp_path / "local")]
    (tmp_path / "local").mkdir()
    assert exec_output.main([*argv, "--env", ssh_client.url(str(remote))]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"ssh.plain", "ssh.tail", "ssh.tail_spill", "baseline.openssh_cat"} <= set(report)
    for key, entry in report.items():
        assert "wrong" not in entry, (key, entry)
        assert entry["wall_ms"] > 0
    assert list(remote.iterdir()) == []
