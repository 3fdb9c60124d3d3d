"""Invariants checked after every agent crash chain (reliability.md 15: K1, K3, K4, S1, X1).

``check_agent_chain`` reads the store once every process is dead and compares
it with what the processes printed, with the effect counts and with the
scripted session:

- **Runs**: no run hung or printed a line that is not JSON; every run but the
  last was killed; the last exited 0 with nothing on stderr but the recovery report
  (``RECOVERY``: print mode says what ``--continue`` found); a session needed at
  most ``MAX_RESTARTS`` restarts.
- **Storage**: exactly one session store; ``PRAGMA integrity_check`` ok and
  ``foreign_key_check`` empty (reliability.md 9.5).
- **No acknowledged entry lost** (R2): every entry a ``commit`` line
  carried that any process printed, killed ones included, names an
  entry the store holds, identical.
- **Idempotent prompt** (S1, R59): the root conversation holds one submission
  with the request ID, done, and one user entry with the prompt, however many
  times a restart sent it again.
- **Transcript**: the root's normal answers make exactly the scripted tool
  calls in order and end with the scripted final text; every partial kept by a
  kill mid-stream (an ``aborted`` entry, R92) is a prefix of the answer that
  replaced it.
- **Tool calls** (R95, R100): every scripted call has exactly one result entry,
  in its conversation; replay-safe calls are never ``interrupted``; unsafe calls
  ran at most once (ledger, renames) and exactly once unless ``interrupted``;
  every rerun of a safe call follows a kill. A kill inside the effect window of
  a slowed ``bash`` call ends it ``interrupted`` with the output it had
  committed (K3); for the other tools the kill follows the effect within
  microseconds, and the figures count how often it also beat the result commit.
- **Rounds**: every call's result precedes the next assistant entry of its
  conversation: the model saw every result, ``interrupted`` ones included,
  before it answered again (R90).
- **Tasks**: none is live once the session completed.
- **Secrets** (X1): the ``bash`` call that echoes ``$OPENAI_API_KEY`` saw it
  empty (the environment scrubbed it); the one that cats ``secret.txt`` (the
  canary key value) shows it redacted in its result; files holding the canary
  are counted by place (the store, its WAL, the logs, the spill files).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from pi_durable_tui.storage import StoredEntry
from tests.e2e.agent_runner import AgentChain, AgentRun
from tests.e2e.agent_scenario import (
    CANARY,
    ENV_ECHO,
    FINAL_TEXT,
    PROMPT,
    REQUEST_ID,
    ROOT,
    SECRET_LINE,
    Scenario,
)
from tests.e2e.agent_store import (
    ROOT_CONVERSATION,
    SessionDump,
    Transcript,
    call_ids,
    diagnostic_codes,
    message,
    read_session,
    text_of,
)
from tests.e2e.crash_store import sqlite_health

MAX_RESTARTS = 5


RECOVERY = re.compile(
    r"pidurable: (The turn in .* resumes \(task \d+, phase \w+\)\."
    r"|.* was cut by the crash( while running)?; .*"
    r"|Background task \d+ .* is still running; /tasks lists it\."
    r"|A compaction of .* resumes \(task \d+\)\.)$"
)
"""The lines of the recovery report a continued ``-p`` run prints on stderr first."""


@dataclass(slots=True)
class AgentReport:
    """What one chain showed: problems (must be empty) and figures for the totals."""

    chain: AgentChain
    problems: list[str] = field(default_factory=list)
    lost_acked: int = 0
    repeated_unsafe: int = 0
    duplicate_prompts: int = 0
    admission_killed: bool = False
    """A kill fell between the prompt's admission commit and its acknowledgement, and a
    restart sent the prompt again (S1)."""
    integrity_failures: int = 0
    interrupted: list[str] = field(default_factory=list)
    safe_reruns: int = 0
    unacked: int = 0
    """Root entries committed but never acknowledged (a kill beat the printing)."""
    partials: int = 0
    """Partials a kill mid-stream left, kept as ``aborted`` entries (R92)."""
    window_kills: Counter[str] = field(default_factory=Counter)
    """Effect-window kills by tool."""
    window_landed: Counter[str] = field(default_factory=Counter)
    """Effect-window kills whose call then ended interrupted (unsafe) or ran again (safe)."""
    sequential_rounds: int = 0
    parallel_rounds: int = 0
    canary_files: set[str] = field(default_factory=set)
    scrubbed: bool | None = None
    """Whether the ``bash`` call saw ``$OPENAI_API_KEY`` empty (``None``: interrupted)."""
    redacted: bool | None = None
    """Whether the result of the ``bash`` call that cats the canary hides it."""

    def fail(self, run: AgentRun | None, message: str) -> None:
        self.problems.append(f"{self.chain.describe(run)}: {message}")


def check_agent_chain(chain: AgentChain, scenario: Scenario) -> AgentReport:
    """Check every invariant of the module docstring; problems go to ``report.problems``.

    When there is any, the last problem says where the evidence is and how to replay.
    """
    report = AgentReport(chain)
    for run in chain.runs:
        report.canary_files.update(run.canary)
    dump = _check_runs_and_store(report)
    if dump is not None:
        transcript = Transcript(dump)
        _check_acks(report, dump)
        _check_prompt(report, dump, transcript)
        _check_transcript(report, transcript, scenario)
        _check_calls(report, transcript, scenario)
        _check_rounds_settle(report, transcript)
        _count_rounds(report, dump, transcript)
        live = [t for t in dump.tasks if t.is_live]
        if live:
            report.fail(None, f"{len(live)} tasks are still live: {[t.kind for t in live]}")
    if report.problems:
        report.problems.append(
            f"evidence in {chain.trial.directory}; replay: {chain.replay_command()}"
        )
    return report


def _check_runs_and_store(report: AgentReport) -> SessionDump | None:
    chain = report.chain
    if chain.overflowed:
        report.fail(None, "the inotify queue overflowed: effect counts are incomplete")
    for run in chain.runs:
        if run.hung:
            report.fail(run, f"the process hung; its stacks and stderr:\n{run.stderr[-8000:]}")
        for line in run.garbled:
            report.fail(run, f"printed a line that is not JSON: {line[:200]!r}")
    *early, last = chain.runs
    for run in early:
        if not run.killed:
            report.fail(run, f"ended before its kill: {run.stderr[-1500:]}")
    if last.killed or last.returncode != 0:
        report.fail(last, f"the last run did not complete: {last.stderr[-1500:]}")
        return None
    unexpected = [line for line in last.stderr.splitlines() if not RECOVERY.match(line)]
    if any(line.strip() for line in unexpected):
        report.fail(last, f"the completing run wrote to stderr: {last.stderr[-1500:]}")
    if len(chain.runs) - 1 > MAX_RESTARTS:
        report.fail(None, f"{len(chain.runs) - 1} restarts (at most {MAX_RESTARTS})")
    stores = chain.trial.stores()
    if len(stores) != 1:
        report.fail(None, f"expected one session store, found {stores}")
        return None
    health = sqlite_health(stores[0])
    report.integrity_failures += len(health)
    for problem in health:
        report.fail(None, problem)
    try:
        return read_session(stores[0])
    except Exception as error:  # a store that does not reopen is the finding
        report.fail(None, f"the store does not reopen: {error!r}")
        report.integrity_failures += 1
        return None


def _check_acks(report: AgentReport, dump: SessionDump) -> None:
    stored = {s.entry.id: s.entry.to_json() for s in dump.entries}
    acked: set[int] = set()
    for run in report.chain.runs:
        for ack in run.acks:
            if ack["id"] in acked:
                report.fail(run, f"entry {ack['id']} was acknowledged twice (K4)")
            acked.add(ack["id"])
            found = stored.get(ack["id"])
            if found is None:
                report.lost_acked += 1
                report.fail(run, f"LOST acknowledged entry {ack['id']} ({ack['kind']})")
            elif found != ack:
                report.lost_acked += 1
                report.fail(run, f"acknowledged entry {ack} but the store holds {found}")
    root = {s.entry.id for s in dump.entries if s.entry.conversation_id == ROOT_CONVERSATION}
    report.unacked = len(root - acked)


def _check_prompt(report: AgentReport, dump: SessionDump, transcript: Transcript) -> None:
    inputs = [s for s in dump.submissions if s.type == "input"]
    keyed = [s for s in inputs if s.request_id == REQUEST_ID]
    users = transcript.of_kind(ROOT, "pi.user")
    prompts = [s for s in users if text_of(s) == PROMPT]
    if len(keyed) != 1 or len(inputs) != 1 or len(prompts) != 1 or len(users) != 1:
        report.duplicate_prompts += max(len(keyed), len(prompts), 1) - 1
        report.fail(
            None,
            f"DUPLICATE or lost prompt: {len(keyed)} submissions with request ID "
            f"{REQUEST_ID} ({len(inputs)} inputs), {len(prompts)} prompt entries "
            f"({len(users)} user entries); expected one of each",
        )
    elif keyed[0].status != "done":
        report.fail(None, f"the prompt's submission is {keyed[0].status}: {keyed[0].reason}")
    runs = report.chain.runs
    acked = {ack["id"] for run in runs for ack in run.acks}
    resent = any(run.resubmitted for run in runs[1:])
    report.admission_killed = resent and any(s.entry.id not in acked for s in prompts)


def _check_transcript(report: AgentReport, transcript: Transcript, scenario: Scenario) -> None:
    answers = transcript.answers(ROOT)
    made = [call_id for stored in answers for call_id in call_ids(stored)]
    expected = scenario.root_call_ids()
    if made != expected:
        extra = [c for c in made if c not in expected] or [c for c in expected if c not in made]
        report.fail(
            None,
            f"the root answers made {len(made)} calls, expected {len(expected)}: "
            f"first difference around {extra[:3] or made[:3]}",
        )
    if not answers or text_of(answers[-1]) != FINAL_TEXT:
        last = text_of(answers[-1]) if answers else None
        report.fail(None, f"the final answer is {last!r}, expected {FINAL_TEXT!r}")
    for label in transcript.entries:
        for partial, replaced_by in transcript.partials(label):
            report.partials += 1
            for kind in ("thinking", "text"):
                kept = text_of(partial, kind)
                full = text_of(replaced_by, kind) if replaced_by is not None else ""
                if not full.startswith(kept):
                    report.fail(
                        None,
                        f"kept partial {partial.entry.id} of {label} ({kind} {kept[-60:]!r}) is "
                        f"not a prefix of the answer that replaced it ({full[:80]!r})",
                    )


def _check_calls(report: AgentReport, transcript: Transcript, scenario: Scenario) -> None:
    chain = report.chain
    results = transcript.results()
    ledger = Counter(chain.ledger)
    executions: dict[str, int] = dict(ledger)
    for kind in ("write", "edit"):
        executions.update({c: n for (k, c), n in chain.effects.items() if k == kind})
    executions.update(chain.read_executions())
    known = {call.call_id for call in scenario.calls}
    for call_id in sorted(set(executions) - known):
        report.fail(None, f"an effect of unknown call {call_id}")
    for call in scenario.calls:
        found = results.get(call.call_id, [])
        if len(found) != 1 or found[0][0] != call.conversation:
            where = [label for label, _ in found]
            report.fail(
                None,
                f"call {call.call_id} of {call.conversation} has {len(found)} result entries "
                f"(in {where}); expected exactly one",
            )
            continue
        stored = found[0][1]
        interrupted = "interrupted" in diagnostic_codes(stored)
        ran = executions.get(call.call_id, 0)
        if interrupted:
            report.interrupted.append(call.call_id)
        if call.safe:
            if interrupted:
                report.fail(None, f"replay-safe call {call.call_id} ended interrupted")
            if call.tool == "read":
                if ran < 1:
                    report.fail(None, f"read {call.call_id} has a result but never ran")
                report.safe_reruns += max(0, ran - 1)
        elif ran > 1 or (ran != 1 and not interrupted):
            report.repeated_unsafe += max(0, ran - 1)
            report.fail(
                None,
                f"{'DUPLICATE' if ran > 1 else 'MISSING'} unsafe effect: {call.tool} "
                f"{call.call_id} ran {ran} times ({'interrupted' if interrupted else 'completed'})",
            )
        if not interrupted:
            _check_result_text(report, call.call_id, call.tool, stored)
    for call in scenario.calls:
        if call.tool != "read":
            continue
        runs = [run for run in chain.runs if ("read", call.call_id) in run.effects]
        for run in runs[:-1]:
            if not run.killed:
                report.fail(run, f"read {call.call_id} ran again after a run that was not killed")
    _check_window_kills(report, results, executions)


def _check_result_text(report: AgentReport, call_id: str, tool: str, stored: StoredEntry) -> None:
    text = text_of(stored)
    failed = bool(message(stored).get("is_error"))
    expected = {
        "read": f"note 1 of {call_id}",
        "bash": f"done {call_id}",
        "subagent": "Step 3 of SUBTASK-",
    }.get(tool, "")
    if failed or expected not in text:
        report.fail(None, f"{tool} {call_id} result is wrong (error {failed}): {text[:300]!r}")
    if ENV_ECHO in text:
        report.scrubbed = f"{ENV_ECHO}]" in text
        if not report.scrubbed:
            report.fail(None, f"the bash call {call_id} saw $OPENAI_API_KEY: {text[:200]!r}")
    if SECRET_LINE in text:
        report.redacted = CANARY not in text


def _check_window_kills(
    report: AgentReport,
    results: dict[str, list[tuple[str, StoredEntry]]],
    executions: dict[str, int],
) -> None:
    for run in report.chain.kills:
        if run.kill is None or run.kill.effect is None:
            continue
        call_id, tool = run.kill.effect, run.kill.effect_tool or "?"
        report.window_kills[tool] += 1
        found = results.get(call_id, [])
        stored = found[0][1] if len(found) == 1 else None
        if stored is None:
            continue  # reported by _check_calls
        interrupted = "interrupted" in diagnostic_codes(stored)
        if tool in ("read", "subagent"):
            landed = executions.get(call_id, 2) >= 2
        else:
            landed = interrupted
        report.window_landed[tool] += landed
        if tool == "bash":
            if not interrupted:
                report.fail(run, f"the kill inside {call_id}'s effect window did not interrupt it")
            elif f"start {call_id}" not in text_of(stored):
                report.fail(
                    run,
                    f"interrupted {call_id} lost the output it had committed: "
                    f"{text_of(stored)[:200]!r}",
                )


def _check_rounds_settle(report: AgentReport, transcript: Transcript) -> None:
    """Every call's result precedes the conversation's next assistant entry (R90, R98)."""
    for label, entries in transcript.entries.items():
        waiting: set[str] = set()
        for stored in entries:
            if stored.entry.kind == "pi.assistant":
                if waiting:
                    report.fail(
                        None,
                        f"{label}: assistant entry {stored.entry.id} came before the results "
                        f"of {sorted(waiting)}",
                    )
                kept_partial = message(stored).get("stop_reason") in ("aborted", "error")
                waiting = set() if kept_partial else set(call_ids(stored))
            elif stored.entry.kind == "pi.tool-result":
                waiting.discard(str(message(stored).get("tool_call_id")))


def _count_rounds(report: AgentReport, dump: SessionDump, transcript: Transcript) -> None:
    """Count multi-call root rounds run one call at a time and all at once (R89, R90)."""
    tasks = {
        (t.input.get("assistant"), t.input.get("call_id")): t.id
        for t in dump.tasks
        if t.kind == "pi.tool" and isinstance(t.input, dict)
    }
    results = {call_id: found[0][1].entry.id for call_id, found in transcript.results().items()}
    for stored in transcript.answers(ROOT):
        calls = call_ids(stored)
        if len(calls) < 2:
            continue
        ids = [tasks.get((stored.entry.id, call_id)) for call_id in calls]
        if None in ids:
            continue
        first_result = min(results.get(call_id, 0) for call_id in calls)
        if max(i for i in ids if i is not None) > first_result:
            report.sequential_rounds += 1
        else:
            report.parallel_rounds += 1
