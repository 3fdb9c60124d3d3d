"""``python -m pi_durable_tui.bench hostile``: every hostile route once, and its figures are 0.

The benchmark runs the real product (``pidurable -p`` and the app in a
pseudo-terminal); the probes show that its counters see what they count.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pi_durable_tui.bench.hostile_escapes import EVIL, hostile_sequences
from pi_durable_tui.bench.hostile_routes import SECRET, leaks


def test_the_counters_see_a_raw_sequence_and_a_planted_key(tmp_path: Path) -> None:
    clean = b"\x1b[2J\x1b[?1049h painted"
    assert hostile_sequences(clean + EVIL.encode(), clean) == 3
    assert hostile_sequences(clean, clean) == 0
    (tmp_path / "store").write_bytes(SECRET[::-1].encode())
    assert leaks(tmp_path, SECRET.encode()) == 2


def test_every_route_once_ends_with_zero_escapes_leaks_sequences_and_processes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pi_durable_tui.bench", "hostile"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=os.environ.copy(),
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    for figure in (
        "escapes outside the workspace: 0",
        "leaked keys: 0",
        "escape sequences written to the pseudo-terminal: 0",
        "processes left: 0",
    ):
        assert any(line.startswith(figure) for line in lines), lines
    swaps = int(lines[0].split(" swapped ")[1].split()[0])
    assert swaps >= 200
