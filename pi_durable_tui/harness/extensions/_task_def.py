"""Durable task definitions written against the harness runtime (``define_task``).

A harness task is a kernel task whose phases receive a ``HarnessRuntime`` (the
kernel runtime plus ``env()``, ``agent()``, the models and conversation handles)
instead of the bare kernel runtime. The harness turns each definition into a kernel
``TaskDefinition`` when it installs it, once per definition object, so the kernel
still sees one stable object per definition and notices a reload by identity (R35).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import TaskRecord

HarnessPhase: TypeAlias = Callable[[TaskRecord, Any], Awaitable[None]]
"""``async def phase(task, runtime)``; moves the task only through ``runtime.commit``.

``runtime`` is a ``HarnessRuntime``. It is typed ``Any`` here because the runtime
sits above the definitions (it needs the registry that holds them); annotate the
parameter as ``HarnessRuntime`` in a phase.
"""


@dataclass(frozen=True, eq=False)
class HarnessTask:
    """A durable task kind run by the harness. Build it with ``define_task``."""

    name: str
    version: int
    initial: Callable[[Json], JsonObject]
    phases: Mapping[str, HarnessPhase]
    abort: HarnessPhase
    migrate: Callable[[Json, JsonObject, int], tuple[Json, JsonObject]] | None = None


def define_task(
    name: str,
    *,
    initial: Callable[[Json], JsonObject],
    phases: Mapping[str, HarnessPhase],
    abort: HarnessPhase,
    version: int = 1,
    migrate: Callable[[Json, JsonObject, int], tuple[Json, JsonObject]] | None = None,
) -> HarnessTask:
    """Define a durable task for an extension (R36-R58).

    Args:
        name: Unique across the built-in tasks and installed extensions (R32).
        initial: ``initial(input)`` returns the first checkpoint ``{"phase": ...}``.
        phases: Maps each phase name to ``async def phase(task, runtime)``.
        abort: ``async def abort(task, runtime)``: commits the outcome of an
            abort-marked task, after its owned work drained (R43, R47).
        version: A positive integer.
        migrate: ``migrate(input, checkpoint, from_version)`` (R44).

    Returns:
        The definition.

    Raises:
        ValueError: For an empty name, a bad version or no phases.
    """
    if not name:
        raise ValueError("Task name must be a non-empty string")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"Task {name} version must be a positive integer")
    if not phases:
        raise ValueError(f"Task {name} needs at least one phase")
    return HarnessTask(name, version, initial, dict(phases), abort, migrate)
