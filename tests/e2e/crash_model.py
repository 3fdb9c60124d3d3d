"""The crash workload's script and its reference final state (the model of K1-K4).

Shared by the child program (``crash_workload``), which runs the script, and by
the parent side (``crash_harness``), which compares what a store holds after a
chain of kills with what a run without kills must leave (reliability.md 15,
rows K1-K4: "final transcript equal to the reference except for interrupted
results").

The script is a list of driver steps drawn from a seed:

- ``note``: append a note entry, extend a rewindable conversation document and a
  session counter document, in one commit;
- ``ticker`` / ``parent`` / ``effect`` / ``victim``: create a task (with its own
  conversation) in the same commit as the driver's step marker;
- ``await``: wait until a task is terminal, then commit a marker entry;
- ``abort``: wait until the victim's child holds, abort the victim (R46), then
  commit a marker entry; the abort cascades to the child (R48) and both abort
  handlers run bottom-up (R47);
- ``finish``: wait until no task is live, then commit the final entry.

Task kinds (defined in ``crash_workload``): ``crash.ticker`` runs a replay-safe
effect and commits one tick per phase (checkpoint ``{"phase": "tick", "tick":
n}``), so a tick may run again after a kill; ``crash.parent`` creates owned
ticker children and waits for them in one commit, then collects them;
``crash.victim`` creates an owned ``crash.holder`` child that commits once and
then holds until it is aborted; ``crash.effect`` runs a replay-unsafe effect
inside the effect sandwich (R39) and ends ``applied``, or ``interrupted`` when
recovery finds it in its intent phase.

The normalized state (``expected_state`` here, ``normalize`` in the harness)
drops what legitimately differs between runs: IDs, commit numbers, the run that
committed an entry, and the random key of an unsafe effect.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

StepKind = Literal["note", "ticker", "parent", "effect", "victim", "await", "abort", "finish"]
TASK_KINDS: dict[str, str] = {
    "ticker": "crash.ticker",
    "parent": "crash.parent",
    "effect": "crash.effect",
    "victim": "crash.victim",
}
VICTIM_REASON = "stopped by the driver"
HOLDER_REASON = "its owner was aborted"
DRIVER = "driver"
"""The label of the driver's conversation and of the entries it appends."""
KEY = "<key>"
"""What an unsafe effect's random key becomes in a normalized state."""


@dataclass(frozen=True, slots=True)
class Step:
    """One driver step; ``sizes`` are tick counts (a ticker has one, a parent one per child)."""

    kind: StepKind
    label: str
    value: int = 0
    sizes: tuple[int, ...] = field(default_factory=tuple)


def fields(value: Any) -> dict[str, Any]:
    """Return a JSON object typed for reading (records type payloads as any JSON value)."""
    assert isinstance(value, dict), f"expected a JSON object, got {value!r}"
    return value


def build_script(seed: int) -> list[Step]:
    """Return the deterministic driver script of a seed (about 40 commits in all)."""
    rng = random.Random(seed)
    notes = iter(range(1, 100))

    def note() -> Step:
        return Step("note", f"n{next(notes)}", value=rng.randint(1, 99))

    head = [
        note(),
        Step("ticker", "t1", sizes=(rng.randint(2, 3),)),
        Step("effect", "e1"),
        Step("parent", "p1", sizes=(rng.randint(1, 2), rng.randint(1, 2))),
        Step("victim", "v1"),
    ]
    rng.shuffle(head)
    return [
        *head,
        note(),
        Step("await", "t1"),
        Step("effect", "e2"),
        note(),
        Step("abort", "v1"),
        Step("await", "p1"),
        Step("finish", "end"),
    ]


def child_labels(step: Step) -> list[str]:
    """Return the labels of a parent's (or the victim's) children, in creation order."""
    count = 1 if step.kind == "victim" else len(step.sizes)
    return [f"{step.label}.c{i}" for i in range(1, count + 1)]


def driver_entry(index: int, step: Step, total: int) -> list[Any]:
    """Return the normalized ``[kind, data]`` of the entry a driver step appends."""
    if step.kind == "note":
        return ["crash.note", {"step": index, "label": step.label, "value": step.value}]
    if step.kind == "await":
        return ["crash.awaited", {"step": index, "label": step.label}]
    if step.kind == "abort":
        return ["crash.abort", {"step": index, "label": step.label}]
    if step.kind == "finish":
        return ["crash.finish", {"step": index, "total": total}]
    return ["crash.spawn", {"step": index, "label": step.label, "kind": TASK_KINDS[step.kind]}]


def tick_entries(label: str, ticks: int) -> list[list[Any]]:
    """Return the normalized entries a ticker appends, one per tick."""
    return [["crash.tick", {"label": label, "n": n}] for n in range(ticks)]


def expected_state(seed: int, interrupted: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Return the normalized final state of the seed's workload.

    Args:
        seed: The workload seed.
        interrupted: Labels of unsafe effects that recovery found in their intent
            phase; they end ``interrupted`` instead of ``applied`` (R39).

    Returns:
        ``{"conversations", "tasks", "docs"}``; see ``crash_verify.normalize``.
    """
    script = build_script(seed)
    total = sum(step.value for step in script if step.kind == "note")
    driver = [["crash.start", {"seed": seed}]]
    driver += [driver_entry(i, step, total) for i, step in enumerate(script)]
    conversations: dict[str, dict[str, list[list[Any]]]] = {DRIVER: {DRIVER: driver}}
    tasks: dict[str, dict[str, Any]] = {}
    progress: dict[str, dict[str, Any]] = {}

    def ticker(label: str, ticks: int, conversation: str) -> None:
        conversations[conversation][label] = tick_entries(label, ticks)
        tasks[label] = {
            "kind": "crash.ticker",
            "outcome": {"status": "completed", "result": {"label": label, "ticks": ticks}},
        }
        progress.setdefault(conversation, {"ticks": {}})["ticks"][label] = list(range(ticks))

    for step in script:
        label = step.label
        if step.kind == "ticker":
            conversations[label] = {}
            ticker(label, step.sizes[0], label)
        elif step.kind == "parent":
            children = child_labels(step)
            conversations[label] = {
                label: [
                    ["crash.spawned", {"label": label, "children": children}],
                    ["crash.collected", {"label": label, "ticks": list(step.sizes)}],
                ]
            }
            for child, ticks in zip(children, step.sizes, strict=True):
                ticker(child, ticks, label)
            tasks[label] = {
                "kind": "crash.parent",
                "outcome": {"status": "completed", "result": {"ticks": list(step.sizes)}},
            }
        elif step.kind == "effect":
            status = "interrupted" if label in interrupted else "applied"
            conversations[label] = {
                label: [
                    ["crash.intent", {"label": label, "effect": "charge", "key": KEY}],
                    ["crash.effect", {"label": label, "status": status, "key": KEY}],
                ]
            }
            tasks[label] = {
                "kind": "crash.effect",
                "outcome": {"status": "completed", "result": {"status": status, "key": KEY}},
            }
        elif step.kind == "victim":
            [child] = child_labels(step)
            conversations[label] = {
                label: [
                    ["crash.spawned", {"label": label, "children": [child]}],
                    ["crash.aborted", {"label": label}],
                ],
                child: [["crash.holding", {"label": child}], ["crash.aborted", {"label": child}]],
            }
            tasks[label] = {
                "kind": "crash.victim",
                "outcome": {"status": "aborted", "reason": VICTIM_REASON},
            }
            tasks[child] = {
                "kind": "crash.holder",
                "outcome": {"status": "aborted", "reason": HOLDER_REASON},
            }
    notes = [f"{s.label}={s.value}" for s in script if s.kind == "note"]
    spawned = sorted(s.label for s in script if s.kind in TASK_KINDS)
    return {
        "conversations": conversations,
        "tasks": tasks,
        "docs": {
            "crash.driver": {"step": len(script), "tasks": spawned},
            "crash.counters": {"notes": len(notes), "sum": total},
            "crash.notes": {"lines": notes},
            "crash.progress": progress,
        },
    }
