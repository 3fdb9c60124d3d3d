"""Invariants checked after every chain of kills (reliability.md 15: K1-K4, A1; R2, R22, R36-R40).

``check_chain`` reopens the store the chain left behind and compares it with
what every run printed and with the effect ledger:

- **No lost acknowledged commit** (R2): every ``ack`` names an entry that is in
  the store with the same conversation, kind, data, task and commit seq.
- **At most one committed-but-unpublished commit per kill** (R1, R2): the store
  reopens at most one commit ahead of the last commit the killed process
  published, and never behind it. Acknowledgements are printed after
  ``commit()`` returned to its caller, a few event-loop turns after
  publication, so with several writers (driver and tasks) in one process a kill
  can leave one unacknowledged entry per writer; an unacknowledged entry must
  come from a killed run (or, in an ambiguous-commit trial, a poisoned one, R8),
  and at most one per writer per kill.
- **Tasks continue from their last committed checkpoint** (R22, R36, R37): each
  restart lists exactly the tasks that were live in the store (none lost, none
  resurrected), in ``pending`` or ``waiting``, at the checkpoint the store's
  entries imply, with the memo'd effect key that the effect finally used (R40);
  the driver resumes at its committed step.
- **Effects**: the replay-safe effect (a tick) runs at least once, at most
  once per run, again only after a kill that interrupted it, and the last
  execution is the one whose commit landed (so at most one repeat per task per
  kill). The replay-unsafe effect runs at most once per memo'd key (R39, R40);
  an ``interrupted`` outcome only follows a kill between its intent and outcome
  commits.
- **Final state** equals ``crash_model.expected_state`` except for interrupted
  effects: every entry once, every task terminal with its outcome (the aborted
  victim and the child its abort cascaded to included, R46-R48), the documents'
  final values, and the rewindable notes document's value as of every note's
  commit (R19).
- **Storage health**: ``PRAGMA integrity_check`` is ``ok`` and
  ``PRAGMA foreign_key_check`` is empty (SQLite, reliability.md 9.5); the JSONL
  store reopens without repairs after the last, clean, close (R131).
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.crash_model import DRIVER, build_script, expected_state, fields
from tests.e2e.crash_runner import KILLED, Chain, Run
from tests.e2e.crash_store import (
    StoreDump,
    differences,
    dump_store,
    label_of,
    normalize,
    postgres_health,
    read_ledger,
    sqlite_health,
)

DONE_KINDS = {"crash.collected", "crash.effect", "crash.aborted"}


@dataclass(slots=True)
class ChainReport:
    """What one chain showed: problems (must be empty) and figures for the totals."""

    chain: Chain
    problems: list[str] = field(default_factory=list)
    unacked_per_kill: list[int] = field(default_factory=list)
    """Committed entries never acknowledged, per kill (at most one per writer)."""
    unpublished_per_kill: list[int] = field(default_factory=list)
    """Commits in the store that the killed run had not published, per kill (0 or 1)."""
    interrupted: list[str] = field(default_factory=list)
    safe_repeats: int = 0
    unsafe_executions: int = 0
    mid_work_kills: int = 0
    """Kills of a run that had acknowledged work and not completed."""
    recovery_kills: int = 0
    """Kills of a run that had acknowledged nothing yet (in open, reconcile, or its first step)."""
    repaired_opens: int = 0
    resume_steps: list[int] = field(default_factory=list)
    """The driver step each restart resumed at: where in the script the kills landed."""

    def fail(self, run: Run | None, message: str) -> None:
        self.problems.append(f"{self.chain.describe(run)}: {message}")


def check_chain(chain: Chain) -> ChainReport:
    """Verify every invariant of the module docstring; problems go to ``report.problems``.

    When there is any, the last problem is the command that replays the chain.
    """
    report = ChainReport(chain)
    _check(report)
    if report.problems:
        report.problems.append(f"replay: {chain.replay_command()}")
    return report


def _check(report: ChainReport) -> None:
    chain = report.chain
    setup = chain.setup
    runs = chain.runs
    if not runs:
        report.fail(None, "no run")
        return
    for run in runs:
        if run.hung:
            report.fail(run, "the run hung (recovery or work never finished)")
        for item in run.payloads("report"):
            report.fail(run, f"the Session reported a problem: {item}")
        for item in run.payloads("garbled"):
            report.fail(run, f"unparsable output line {item['text']!r}")
        if any(item["repairs"] for item in run.payloads("repairs")):
            report.repaired_opens += 1
    *early, last = runs
    for run in early:
        if run not in chain.kills:
            report.fail(run, f"expected a kill before completion; stderr: {run.stderr[-2000:]}")
    # A kill that lands after ``complete`` was printed (the store is closed by then) ends
    # the chain like an exit; it is not counted as a kill trial.
    if last.returncode not in (0, KILLED) or not last.completed:
        report.fail(last, f"the last run did not complete; stderr: {last.stderr[-2000:]}")
        return
    if last.stderr.strip():
        report.fail(last, f"the complete run wrote to stderr: {last.stderr[-2000:]}")
    for run in chain.kills:
        if run.acks:
            report.mid_work_kills += 1
        else:
            report.recovery_kills += 1
    if setup.backend == "sqlite":
        for problem in sqlite_health(setup.store):
            report.fail(None, problem)
    elif setup.backend == "postgres":
        for problem in postgres_health(setup):
            report.fail(None, f"check_integrity: {problem}")
    try:
        dump = dump_store(setup)
    except Exception as error:  # a store that does not reopen is the finding
        report.fail(None, f"the store does not reopen: {error!r}")
        return
    if dump.repairs:
        report.fail(None, f"JSONL reopened after a clean close with repairs {dump.repairs}")
    _check_acks(report, dump)
    _check_tasks_and_state(report, dump)
    _check_resumes(report, dump)
    _check_effects(report, dump, read_ledger(setup))


def _killed_numbers(chain: Chain) -> set[int]:
    return {run.number for run in chain.kills}


def _check_acks(report: ChainReport, dump: StoreDump) -> None:
    chain = report.chain
    by_id = {s.entry.id: s for s in dump.entries}
    acked: set[int] = set()
    for run in chain.runs:
        previous = 0
        for ack in run.acks:
            acked.add(ack["entry"])
            if ack["seq"] <= previous:
                report.fail(run, f"acknowledged seqs do not increase: {ack}")
            previous = ack["seq"]
            stored = by_id.get(ack["entry"])
            if stored is None:
                report.fail(run, f"LOST acknowledged commit: entry {ack['entry']} ({ack})")
                continue
            entry = stored.entry
            seen = {
                "entry": entry.id,
                "seq": stored.commit_seq,
                "conversation": entry.conversation_id,
                "kind": entry.kind,
                "data": entry.data,
                "by_task": entry.by_task_id,
            }
            if seen != ack:
                report.fail(run, f"acknowledged {ack} but the store holds {seen}")
    killed = _killed_numbers(chain)
    labels = {t.id: label_of(t) for t in dump.tasks}
    unacked: Counter[int] = Counter()
    writers: Counter[tuple[int, str]] = Counter()
    for stored in dump.entries:
        if stored.entry.id in acked:
            continue
        origin: int = fields(stored.entry.data)["run"]
        if origin not in killed:
            report.fail(
                None, f"entry {stored.entry} is unacknowledged, but run {origin} was not killed"
            )
        unacked[origin] += 1
        by_task = stored.entry.by_task_id
        writers[(origin, DRIVER if by_task is None else labels[by_task])] += 1
    for (number, writer), count in sorted(writers.items()):
        if count > 1:
            report.fail(
                chain.runs[number - 1],
                f"{count} committed-but-unacknowledged entries of writer {writer} from one kill",
            )
    for number in sorted(killed):
        report.unacked_per_kill.append(unacked[number])
    _check_publications(report)


def _check_publications(report: ChainReport) -> None:
    """Per kill, the store holds at most one commit the killed run had not published (R1, R2).

    The next run's ``opened`` seq is the store's seq at the kill; the killed run
    knew its ``session`` seq and every seq it published. A store behind what was
    published lost a commit; more than one ahead means commits landed unpublished.
    """
    runs = report.chain.runs
    for run, following in itertools.pairwise(runs):
        if run not in report.chain.kills:
            continue
        published = [item["seq"] for item in run.payloads("published")]
        sessions = [item["seq"] for item in run.payloads("session")]
        opened = following.payloads("opened")
        if not opened or not (published or sessions):
            continue  # killed inside Session.open, or the next run died before opening
        known = max(published + sessions)
        ahead = opened[0]["seq"] - known
        report.unpublished_per_kill.append(ahead)
        if ahead < 0:
            report.fail(
                run,
                f"LOST published commits: published up to seq {known}, "
                f"the store reopened at seq {opened[0]['seq']}",
            )
        elif ahead > 1:
            report.fail(run, f"{ahead} commits landed unpublished at one kill (max 1)")


def _check_tasks_and_state(report: ChainReport, dump: StoreDump) -> None:
    setup = report.chain.setup
    labels = Counter(label_of(t) for t in dump.tasks)
    for label, count in labels.items():
        if count != 1:
            report.fail(None, f"task {label} exists {count} times")
    for task in dump.tasks:
        if task.status != "terminal":
            report.fail(None, f"task {task.input} is still {task.status}: {task.state}")
    interrupted = frozenset(
        label_of(t)
        for t in dump.tasks
        if t.kind == "crash.effect"
        and (t.state.get("outcome") or {}).get("result", {}).get("status") == "interrupted"
    )
    report.interrupted = sorted(interrupted)
    actual = normalize(dump)
    expected = expected_state(setup.seed, interrupted)
    if actual != expected:
        report.fail(
            None, f"final state differs from the reference: {differences(actual, expected)}"
        )
    script = build_script(setup.seed)
    lines: list[str] = []
    notes = iter(s for s in script if s.kind == "note")
    for seq, value in dump.notes_history:
        step = next(notes)
        lines.append(f"{step.label}={step.value}")
        if value != {"lines": lines}:
            report.fail(None, f"notes document as of seq {seq} is {value}, expected {lines}")


def _entry_runs(dump: StoreDump) -> tuple[dict[str, int], dict[str, int], dict[str, list[int]]]:
    """Return, per task label, the run that created it, the run that finished it, and tick runs."""
    created: dict[str, int] = {}
    finished: dict[str, int] = {}
    ticks: dict[str, list[int]] = defaultdict(list)
    sizes = {label_of(t): fields(t.input).get("ticks") for t in dump.tasks}
    for stored in dump.entries:
        entry = stored.entry
        data = fields(entry.data)
        run = data["run"]
        if entry.kind == "crash.spawn":
            created[data["label"]] = run
        elif entry.kind == "crash.spawned":
            for child in data["children"]:
                created[child] = run
        elif entry.kind == "crash.tick":
            ticks[data["label"]].append(run)
            if data["n"] + 1 == sizes[data["label"]]:
                finished[data["label"]] = run
        if entry.kind in DONE_KINDS:
            finished[data["label"]] = run
    return created, finished, ticks


def _check_resumes(report: ChainReport, dump: StoreDump) -> None:
    created, finished, ticks = _entry_runs(dump)
    phases: dict[str, dict[str, int]] = defaultdict(dict)
    keys: dict[str, str] = {}
    driver_steps: list[int] = []
    for stored in dump.entries:
        data = fields(stored.entry.data)
        if stored.entry.kind in ("crash.spawned", "crash.intent", "crash.holding"):
            phases[data["label"]][stored.entry.kind] = data["run"]
        if stored.entry.kind == "crash.intent":
            keys[data["label"]] = data["key"]
        if stored.entry.by_task_id is None and stored.entry.kind != "crash.start":
            driver_steps.append(data["run"])
    for run in report.chain.runs:
        if not run.payloads("resumed"):
            continue  # killed before it listed what it found
        number = run.number
        live = {
            label
            for label, origin in created.items()
            if origin < number and finished.get(label, number) >= number
        }
        found = {item["label"]: item for item in run.payloads("resume-task")}
        for label in sorted(set(found) - live):
            state = "finished" if label in finished else "not created"
            report.fail(run, f"RESURRECTED or phantom task {label} ({state} before this run)")
        for label in sorted(live - set(found)):
            report.fail(run, f"live task {label} was not found at reopen")
        for label, item in found.items():
            if item["status"] not in ("pending", "waiting"):
                report.fail(run, f"task {label} reopened as {item['status']} (R22)")
            memo = (item.get("memos") or {}).get("key")
            if memo is not None and memo != keys.get(label):
                report.fail(
                    run, f"task {label} memo key {memo} is not its intent's {keys.get(label)}"
                )
            expected = _expected_checkpoint(item["kind"], ticks[label], phases[label], number)
            if expected is not None and not _matches(item["checkpoint"], expected):
                report.fail(
                    run,
                    f"task {label} resumed at {item['checkpoint']}, but its last committed "
                    f"checkpoint is {expected}",
                )
        for item in run.payloads("resume-driver"):
            if number > 1:
                report.resume_steps.append(item["step"])
            committed = sum(1 for origin in driver_steps if origin < number)
            if item["step"] != committed:
                report.fail(run, f"driver resumed at step {item['step']}, committed {committed}")


def _expected_checkpoint(
    kind: str, tick_runs: list[int], phases: dict[str, int], number: int
) -> dict[str, Any] | None:
    if kind == "crash.ticker":
        return {"phase": "tick", "tick": sum(1 for origin in tick_runs if origin < number)}
    if kind in ("crash.parent", "crash.victim"):
        return {"phase": "collect" if phases.get("crash.spawned", number) < number else "spawn"}
    if kind == "crash.holder":
        return {
            "phase": "hold",
            "holding": True if phases.get("crash.holding", number) < number else None,
        }
    if kind == "crash.effect":
        return {"phase": "applying" if phases.get("crash.intent", number) < number else "prepare"}
    return None


def _matches(checkpoint: dict[str, Any], expected: dict[str, Any]) -> bool:
    return all(checkpoint.get(key) == value for key, value in expected.items())


def _check_effects(report: ChainReport, dump: StoreDump, ledger: list[dict[str, Any]]) -> None:
    chain = report.chain
    killed = _killed_numbers(chain)
    committed: dict[tuple[str, ...], int] = {}
    keys: dict[str, str] = {}
    outcomes: dict[str, tuple[str, int]] = {}
    intents: dict[str, int] = {}
    for stored in dump.entries:
        data = fields(stored.entry.data)
        kind = stored.entry.kind
        if kind == "crash.tick":
            committed[("tick", data["label"], str(data["n"]))] = data["run"]
        elif kind == "crash.intent":
            keys[data["label"]] = data["key"]
            intents[data["label"]] = data["run"]
        elif kind == "crash.effect":
            outcomes[data["label"]] = (data["status"], data["run"])
            if data["key"] != keys.get(data["label"]):
                report.fail(None, f"effect {data['label']} outcome key differs from its intent")
    executions: dict[tuple[str, ...], list[int]] = defaultdict(list)
    unsafe: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in ledger:
        if line["effect"] == "tick":
            executions[("tick", line["label"], str(line["n"]))].append(line["run"])
        else:
            unsafe[line["label"]].append(line)
    in_progress: Counter[tuple[str, int]] = Counter()
    for key, origin in committed.items():
        runs = executions.get(key, [])
        if not runs:
            report.fail(None, f"safe effect {key} committed but never executed")
            continue
        if runs != sorted(set(runs)):
            report.fail(None, f"safe effect {key} ran twice in one run: runs {runs}")
        if runs[-1] != origin:
            report.fail(
                None, f"safe effect {key}: last ran in run {runs[-1]}, committed in {origin}"
            )
        for number in runs[:-1]:
            if number not in killed:
                report.fail(None, f"safe effect {key} re-ran after run {number}, not killed")
            in_progress[(key[1], number)] += 1
        report.safe_repeats += len(runs) - 1
    for key in set(executions) - set(committed):
        report.fail(None, f"safe effect {key} ran ({executions[key]}) but never committed")
    for (label, number), count in in_progress.items():
        if count > 1:
            report.fail(
                chain.runs[number - 1],
                f"{count} ticks of {label} were in progress at one kill (max 1)",
            )
    for label, (status, origin) in outcomes.items():
        lines = unsafe.get(label, [])
        report.unsafe_executions += len(lines)
        if len(lines) > 1:
            report.fail(None, f"DUPLICATE unsafe effect {label}: ran {len(lines)} times {lines}")
        if any(line["key"] != keys.get(label) for line in lines):
            report.fail(None, f"unsafe effect {label} ran with a key other than its memo: {lines}")
        intent = intents.get(label)
        if status == "applied":
            if [line["run"] for line in lines] != [origin] or intent != origin:
                report.fail(
                    None,
                    f"applied effect {label}: intent in run {intent}, effect runs "
                    f"{[line['run'] for line in lines]}, outcome in run {origin}",
                )
        else:
            if intent not in killed or origin <= (intent or 0):
                report.fail(
                    None,
                    f"effect {label} interrupted (run {origin}) without a kill after its "
                    f"intent (run {intent})",
                )
            if any(line["run"] != intent for line in lines):
                report.fail(None, f"interrupted effect {label} ran outside its intent run: {lines}")
            says = [
                i for i in chain.runs[origin - 1].payloads("interrupted") if i["label"] == label
            ]
            if not says:
                report.fail(chain.runs[origin - 1], f"effect {label} interrupted silently")
    for label in set(unsafe) - set(outcomes):
        report.fail(None, f"unsafe effect {label} ran but has no outcome")
