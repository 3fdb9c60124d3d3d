"""The first-paint part of the TUI benchmark: the real ``pidurable`` in a pseudo-terminal.

``measure_paint(repeat, entries, log)`` times three commands, each started in a
120x40 pseudo-terminal (``_pty_launch``) until its screen shows a marker:

- the floor: a bare Textual app with one ``Static`` (``python -c``), marker
  ``bare-textual-painted``;
- ``python -m pi_durable_tui --model faux/faux-1`` in a fresh project directory
  with a fresh ``PIDURABLE_HOME`` each run (a new session each time), marker
  ``/compact`` of the footer's hints line, which the first frame shows in every
  state (before the session is open too);
- ``python -m pi_durable_tui -c`` in each of two project directories prepared
  once, outside the timing: a session opened with ``AgentApp.open`` that holds
  10 or ``entries`` user entries (appended in commits of 1,000), the last one's
  text a marker without spaces (``last-entry-10``, ``last-entry-10000``), which
  the transcript paints once the session is open.

The children run the code of this checkout (``PYTHONPATH``), not whatever copy
of the package the interpreter would find from a temporary directory, and may
write bytecode, as an installed program has it. Each command's best run counts,
every figure its own minimum, the kinds interleaved so a noisy moment of the
machine hits them all alike.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pi_durable_tui
from pi_durable_tui.app import AgentApp, AppOptions
from pi_durable_tui.bench._agent_kit import pidurable_home
from pi_durable_tui.bench._pty_launch import Launch, launch_until
from pi_durable_tui.kernel import Tx

Report = dict[str, dict[str, Any]]

BARE_MARKER = "bare-textual-painted"
HINTS_MARKER = "/compact"
"""A word of the hints line (``tui._app.HINTS``), painted as one run of text."""
SMALL_SESSION = 10
BATCH = 1_000
"""Entries per seeding commit, as the app tests seed a long history."""

_BARE_APP = f"""
from textual.app import App, ComposeResult
from textual.widgets import Static


class Bare(App[None]):
    def compose(self) -> ComposeResult:
        yield Static({BARE_MARKER!r})


Bare().run()
"""
_FAUX_SCRIPT = {"responses": [], "when_exhausted": "echo"}
"""Serves ``faux/faux-1`` without answering anything: no request is made."""


def _last_marker(entries: int) -> str:
    return f"last-entry-{entries}"


class _Workspace:
    """The temporary directories, faux script and child environment of one measurement."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.script = root / "faux-script.json"
        self.script.write_text(json.dumps(_FAUX_SCRIPT), encoding="utf-8")
        self._runs = 0
        package_root = str(Path(pi_durable_tui.__file__).resolve().parent.parent)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPATH"] = os.pathsep.join(
            path for path in (package_root, env.get("PYTHONPATH")) if path
        )
        self._env = env

    def fresh(self, name: str) -> tuple[Path, Path]:
        """A new empty project directory and home directory."""
        self._runs += 1
        base = self.root / f"{name}-{self._runs}"
        project, home = base / "project", base / "home"
        project.mkdir(parents=True)
        home.mkdir()
        return project, home

    def env(self, home: Path) -> dict[str, str]:
        """The children's environment with ``home`` as ``PIDURABLE_HOME``."""
        return self._env | {"PIDURABLE_HOME": str(home)}

    def bare(self) -> Launch:
        """The floor: a bare Textual app until its one ``Static`` is painted."""
        return launch_until(
            [sys.executable, "-c", _BARE_APP],
            BARE_MARKER,
            cwd=self.root,
            env=self._env,
        )

    def new_session(self) -> Launch:
        """``pidurable`` on a new session in a fresh project and home, until the hints."""
        project, home = self.fresh("new")
        command = [sys.executable, "-m", "pi_durable_tui", "--model", "faux/faux-1"]
        return launch_until(
            [*command, "--faux-script", str(self.script)],
            HINTS_MARKER,
            cwd=project,
            env=self.env(home),
        )

    def continued(self, project: Path, home: Path, entries: int) -> Launch:
        """``pidurable -c`` in a seeded project until its last entry is painted."""
        return launch_until(
            [sys.executable, "-m", "pi_durable_tui", "-c"],
            _last_marker(entries),
            cwd=project,
            env=self.env(home),
        )

    def seeded(self, entries: int) -> tuple[Path, Path]:
        """A project and home whose one session holds ``entries`` user entries."""
        project, home = self.fresh(f"seeded{entries}")
        with pidurable_home(home):
            asyncio.run(_seed(project, self.script, entries))
        return project, home


async def _seed(project: Path, script: Path, entries: int) -> None:
    """Open a new session in ``project``, append ``entries`` user entries, close it."""
    options = AppOptions(cwd=str(project), model="faux/faux-1", faux_script=str(script))
    app = await AgentApp.open(options)
    root = app.root.id

    def batch(start: int) -> Callable[[Tx], None]:
        def append(tx: Tx) -> None:
            for number in range(start, min(entries, start + BATCH)):
                last = number == entries - 1
                text = _last_marker(entries) if last else f"message {number + 1}"
                message = {"role": "user", "content": text, "timestamp": 0}
                tx.append(root, "pi.user", model=[message])

        return append

    try:
        for start in range(0, entries, BATCH):
            await app.root.commit(batch(start))
    finally:
        await app.close()


def _best(runs: list[Launch]) -> tuple[float, float]:
    """The shortest paint and the smallest peak RSS of ``runs``."""
    return min(run.paint_s for run in runs), min(run.rss_mib for run in runs)


def measure_paint(repeat: int, entries: int, log: Callable[[str], None]) -> Report:
    """Measure first paint and RSS of the real command against a bare Textual app.

    Args:
        repeat: Runs of each command; the best counts.
        entries: The long session's entries (10,000; fewer in the smoke run).
        log: Progress lines.

    Returns:
        ``baseline.bare_textual``, ``first_paint``, ``first_paint_10000`` and ``rss``.
    """
    with tempfile.TemporaryDirectory(prefix="pidurable-paint-") as directory:
        workspace = _Workspace(Path(directory))
        log(f"seeding sessions of {SMALL_SESSION} and {entries} entries")
        small_dirs = workspace.seeded(SMALL_SESSION)
        large_dirs = workspace.seeded(entries)
        runs: dict[str, list[Launch]] = {"bare": [], "new": [], "small": [], "large": []}
        for index in range(repeat):
            log(f"first paint {index + 1}/{repeat}")
            runs["bare"].append(workspace.bare())
            runs["new"].append(workspace.new_session())
            runs["small"].append(workspace.continued(*small_dirs, SMALL_SESSION))
            runs["large"].append(workspace.continued(*large_dirs, entries))
    (bare_s, bare_rss), (new_s, _) = _best(runs["bare"]), _best(runs["new"])
    (small_s, small_rss), (large_s, large_rss) = _best(runs["small"]), _best(runs["large"])
    return {
        "baseline.bare_textual": {"paint_s": bare_s, "rss_mib": bare_rss},
        "first_paint": {"paint_s": new_s, "ratio": new_s / bare_s, "target": 2.0},
        "first_paint_10000": {"paint_s": large_s, "ratio": large_s / small_s, "target": 1.5},
        "rss": {
            "rss_10_mib": small_rss,
            "rss_10000_mib": large_rss,
            "ratio": large_rss / small_rss,
        },
    }
