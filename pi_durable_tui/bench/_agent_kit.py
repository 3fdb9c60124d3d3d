"""What the agent benchmarks share: a harness on a real SQLite store with a faux model.

``open_agent(directory, factory=..., ...)`` opens ``SqliteStorage`` in
``directory``, a harness with the coding tools and a ``LocalEnv`` rooted there,
and the root conversation on the faux model; ``close()`` ends it. ``CommitCounter``
counts the commits a workload makes (and the document bytes they write) through
the session's publications. ``pidurable_home(path)`` points this process's
``PIDURABLE_HOME`` at a directory for a block (the app layer reads it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_durable_tui.ai import FauxProvider, ModelRef, Models
from pi_durable_tui.env import LocalEnv
from pi_durable_tui.harness import AgentChange, Conversation, Extension, Harness, create_registry
from pi_durable_tui.kernel import CommitInfo
from pi_durable_tui.storage import SqliteStorage, Storage
from pi_durable_tui.tools import CodingTools


class CommitCounter:
    """Counts stored commits and the JSON bytes of their document operations."""

    def __init__(self) -> None:
        self.commits = 0
        self.op_bytes = 0

    def __call__(self, info: CommitInfo) -> None:
        if not info.stored:
            return  # a reservation only the live index took in: no write transaction
        self.commits += 1
        for change in info.documents:
            self.op_bytes += len(json.dumps(change.ops))

    def reset(self) -> None:
        """Start counting again."""
        self.commits = 0
        self.op_bytes = 0


@dataclass(eq=False)
class AgentKit:
    """An open harness for a benchmark."""

    harness: Harness
    root: Conversation
    faux: FauxProvider
    counter: CommitCounter
    store: Path

    async def close(self) -> None:
        """Close the harness and its store."""
        await self.harness.close()


async def open_agent(
    directory: Path,
    *,
    factory: Callable[..., Any] | None = None,
    tokens_per_second: float = 0.0,
    extensions: tuple[Extension, ...] = (CodingTools,),
    settings: Any = None,
    storage: Storage | None = None,
) -> AgentKit:
    """Open a harness on ``directory/session.sqlite`` with a faux model and the coding tools.

    ``storage``, when given, is used instead (and closed with the harness).
    """
    faux = FauxProvider(
        factory=factory, tokens_per_second=tokens_per_second, when_exhausted="error"
    )
    models = Models()
    models.register_faux(faux)
    store = directory / "session.sqlite"
    if storage is None:
        storage = await SqliteStorage.open(store)
    harness = await Harness.open(
        storage,
        models=models,
        registry=create_registry(*extensions),
        env=lambda target: LocalEnv(target.cwd or str(directory)),
        settings=settings,
    )
    counter = CommitCounter()
    harness.session.subscribe(counter)
    agent = AgentChange(model=ModelRef("faux", "faux-1"), cwd=str(directory))
    root = await harness.root(agent=agent)
    harness.resume()
    return AgentKit(harness, root, faux, counter, store)


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` percentile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


@contextlib.contextmanager
def pidurable_home(home: Path) -> Iterator[None]:
    """Point ``PIDURABLE_HOME`` of this process at ``home`` for the block (app reads it)."""
    previous = os.environ.get("PIDURABLE_HOME")
    os.environ["PIDURABLE_HOME"] = str(home)
    try:
        yield
    finally:
        if previous is None:
            del os.environ["PIDURABLE_HOME"]
        else:
            os.environ["PIDURABLE_HOME"] = previous


def run_rounds_bench(
    argv: list[str],
    name: str,
    default_rounds: int,
    measure: Callable[[int], Coroutine[Any, Any, dict[str, Any]]],
) -> dict[str, Any] | None:
    """Parse ``[--rounds N] [--json]`` and run ``measure``; with ``--json``, print its report.

    Returns:
        The report, for the caller to render as text; ``None`` when it was printed as JSON.
    """
    parser = argparse.ArgumentParser(prog=f"python -m pi_durable_tui.bench {name}")
    parser.add_argument("--rounds", type=int, default=default_rounds, help="rounds to time")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    report = asyncio.run(measure(max(1, args.rounds)))
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
        return None
    return report
