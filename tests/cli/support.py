"""Running the real ``pidurable`` process for the command-line tests.

``run`` starts ``python -m pi_durable_tui`` in a project directory with its own
``PIDURABLE_HOME`` (the ``project`` fixture), feeds it the given standard input
(``/dev/null`` by default, never the test runner's), and returns its exit
status and output; ``user_texts`` reads back what a session stored.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from pi_durable_tui.harness import text_of
from tests.app.support import stored_entries
from tests.deadlines import WAIT


@dataclass(frozen=True)
class Ran:
    """How one ``pidurable`` process ended."""

    status: int
    out: str
    err: str


def run(
    cwd: Path, *args: str | bytes, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> Ran:
    """Run ``pidurable`` to its end (killed after the test deadline)."""
    done = subprocess.run(
        [sys.executable, "-m", "pi_durable_tui", *args],
        cwd=cwd,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        timeout=WAIT,
        check=False,
        env=env,
    )
    return Ran(done.returncode, _decoded(done.stdout), _decoded(done.stderr))


def _decoded(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")


def write_script(directory: Path, *answers: str, name: str = "script.json") -> Path:
    """A faux script answering each prompt, in order, with one of ``answers``."""
    path = directory / name
    responses = [{"content": [{"type": "text", "text": answer}]} for answer in answers]
    path.write_text(json.dumps({"responses": responses}))
    return path


def user_texts(store: Path) -> list[str]:
    """The texts of the user messages a session stored, oldest first."""
    entries = asyncio.run(stored_entries(store))
    messages = [e.model[0] for e in entries if e.model and isinstance(e.model[0], dict)]
    return [text_of(m) for m in messages if m.get("role") == "user"]


def only_store(home: Path) -> Path:
    """The store of the one session under ``home``."""
    (store,) = home.glob("sessions/*/*/session.sqlite")
    return store


def mount_tmpfs(path: Path, size: str, *, read_only: bool = False) -> None:
    """Mount a tmpfs of ``size`` at ``path`` (made if missing); skip the test without root.

    A real file system that fills up or refuses writes: ``ENOSPC`` and ``EROFS``
    come from the kernel, not from a simulation.
    """
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {done.stderr.strip()}")


def unmount(path: Path) -> None:
    """Unmount what ``mount_tmpfs`` mounted (lazily, so a process left in it cannot block)."""
    subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def tree(root: Path) -> set[str]:
    """Every path under ``root``, relative to it: what a command created shows here."""
    return {str(path.relative_to(root)) for path in root.rglob("*")}
