"""Parent side of the agent crash tests: start ``pidurable -p``, SIGKILL it, start it again.

Reliability.md 11.1 and 15 (rows K1, K3, K4, S1, X1), applied to the real
product rather than to a kernel workload (``crash_runner`` does that):

- ``Trial`` is one scripted session in its own directory: the workspace (the
  agent's cwd), ``$PIDURABLE_HOME``, ``$TMPDIR`` (spill files), the faux
  script, the bash ledger and the logs of every process.
- ``launch`` starts ``python -m pi_durable_tui ... --mode json`` and reads its
  JSON lines (the acknowledgement stream: every line is derived from a commit
  that was published) while ``select`` also waits on the trial's
  ``EffectWatch``. It sends SIGKILL at a time after the spawn, or right after
  the effect of a chosen tool call shows (a ledger line, a rename, an open:
  inside that call's effect window), or not at all. A ``bash`` call killed in
  its window is held there by files the runner creates (``agent_scenario``):
  it goes on once its first line was acknowledged, and ends once the agent is
  dead, so no machine is too slow for the kill to land.
- A process that prints nothing, shows no effect and burns (almost) no CPU for
  ``SILENCE_TIMEOUT`` seconds is hung: it gets SIGUSR1 (``pi_durable_tui.stack_dump``: the stacks
  of its threads and asyncio tasks go to its stderr, which the failure shows),
  then SIGKILL.
- ``run_chain`` restarts the agent after every kill until a run completes. The
  first process sends the prompt with ``-p PROMPT --request-id ID``; a restart
  continues with ``-c -p``, except that it sends the prompt again with the same
  request ID (``-c -p PROMPT --request-id ID``) while no run has acknowledged
  the prompt's entry, and always in a ``resubmit`` trial (S1: a resubmitted
  request must create no duplicate). After every process the trial's files are
  scanned for the canary key (X1), before anything can checkpoint the WAL away.

Chains run on worker threads (``agent_campaign``); each process is a separate
child, and the threads only wait on them.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_durable_tui import stack_dump
from pi_durable_tui.app._wire import MAX_HOST_MESSAGE, Mirror, WireError, decode
from pi_durable_tui.storage.failpoints import ENV_VAR as FAILPOINT_ENV
from tests.e2e.agent_effects import Effect, EffectWatch, read_ledger
from tests.e2e.agent_scenario import (
    ACKED,
    CANARY,
    CANARY_ENV,
    LEDGER,
    PROMPT,
    RELEASED,
    REQUEST_ID,
    SLOW_DIR,
    Scenario,
)
from tests.e2e.crash_runner import KILLED
from tests.wire_lines import entries, is_streamed

SILENCE_TIMEOUT = 120.0
"""Seconds a process may go without progress before it counts as hung.

Progress is a JSON line, a tool effect or ``WORKING_CPU`` seconds of CPU time:
not run time, since a whole session takes about 12 s on an idle machine and
several minutes beside other heavy work (issue 12), start-up included (twenty
processes importing at once); a process stuck waiting prints nothing and burns
no CPU.
"""
WORKING_CPU = 0.5
"""CPU seconds within a silence that count as progress (an idle wait uses a few ms)."""
RUN_TIMEOUT = 900.0
"""Seconds a process may run in all, printing or not (a loop that never ends)."""
DUMP_WAIT = 10.0
"""Seconds a hung process gets to write its stacks (SIGUSR1) before SIGKILL."""
MODEL = "faux/faux-1"


@dataclass(frozen=True, slots=True)
class Trial:
    """One scripted session in its own directory.

    Attributes:
        name: Used in every failure message.
        directory: A fresh directory for everything the trial writes.
        resubmit: Every restart sends the prompt again with its request ID (S1).
    """

    name: str
    directory: Path
    resubmit: bool = False

    @property
    def workspace(self) -> Path:
        return self.directory / "work"

    @property
    def home(self) -> Path:
        return self.directory / "home"

    @property
    def tmp(self) -> Path:
        return self.directory / "tmp"

    @property
    def ledger(self) -> Path:
        return self.directory / LEDGER

    @property
    def script(self) -> Path:
        return self.directory / "script.json"

    def install(self, scenario: Scenario) -> None:
        """Create the directories and the scenario's files."""
        for path in (self.workspace, self.home, self.tmp):
            path.mkdir(parents=True, exist_ok=True)
        scenario.install(self.workspace, self.script)

    def stores(self) -> list[Path]:
        """The session stores under ``$PIDURABLE_HOME`` (one, once a process created it)."""
        return sorted(self.home.glob("sessions/*/*/session.sqlite"))

    def environment(self, failpoint: str | None = None) -> dict[str, str]:
        """The process environment: the trial's home and temp dir, the canary key."""
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.pop(FAILPOINT_ENV, None)
        if failpoint is not None:
            env[FAILPOINT_ENV] = failpoint
        env.update(PIDURABLE_HOME=str(self.home), TMPDIR=str(self.tmp))
        env[CANARY_ENV] = CANARY
        env[stack_dump.ENV_VAR] = "1"  # a hung process shows where it waits
        return env

    def command(self, *, resume: bool, prompt: bool) -> list[str]:
        """The ``pidurable`` command line of one process."""
        command = [sys.executable, "-m", "pi_durable_tui"]
        command += ["-c", "-p"] if resume else ["-p"]
        if prompt:
            command += [PROMPT, "--request-id", REQUEST_ID]
        if not resume:
            command += ["--model", MODEL]
        # The campaign measures durability, not approvals: its commands run unasked.
        command += ["--permission-mode", "auto"]
        return [*command, "--mode", "json", "--faux-script", str(self.script)]

    def canary_files(self) -> list[str]:
        """Files under the home, the temp dir and the logs that hold the canary's bytes."""
        needle = CANARY.encode()
        found: list[str] = []
        places = [self.home, self.tmp, *self.directory.glob("run*.std*")]
        for place in places:
            for path in _files_under(place):
                try:
                    data = path.read_bytes()
                except OSError:
                    continue  # a file removed while scanning
                if needle in data:
                    found.append(str(path.relative_to(self.directory)))
        return found


def _files_under(place: Path) -> list[Path]:
    """The files at or under ``place``, skipping directories removed while walking.

    The reaper of a killed process removes its spill directory on its own
    schedule, so a directory listed a moment ago may be gone when it is opened
    (``os.walk`` drops such errors, where ``Path.rglob`` raises).
    """
    if place.is_file():
        return [place]
    return [Path(root, name) for root, _dirs, names in os.walk(place) for name in names]


@dataclass(frozen=True, slots=True)
class Kill:
    """When to kill one process: at a time, at a tool call's effect, mid-stream, or at a failpoint.

    Attributes:
        after: Seconds after the spawn, or after the first line when ``from_first_line``.
        from_first_line: Count ``after`` from the process's first JSON line (its
            work has begun) instead of from its spawn (start-up and recovery).
        effect: A tool call ID: SIGKILL as soon as that call's effect shows.
        effect_tool: The call's tool (set by ``run_chain``).
        failpoint: A ``PIDURABLE_FAILPOINT`` value: the process kills itself
            there (``sqlite.after_commit:2``: right after its second COMMIT).
        updates: SIGKILL right after the process printed this many
            streamed ``commit`` lines: a streamed partial is committed (every
            line derives from a commit), so recovery keeps it aborted (R92).
    """

    after: float | None = None
    from_first_line: bool = False
    effect: str | None = None
    effect_tool: str | None = None
    failpoint: str | None = None
    updates: int | None = None

    def describe(self) -> str:
        if self.effect is not None:
            return f"kill inside the effect window of {self.effect}"
        if self.failpoint is not None:
            return f"die at failpoint {self.failpoint}"
        if self.updates is not None:
            return f"kill after {self.updates} streamed updates"
        since = "the first line" if self.from_first_line else "spawn"
        return f"kill {self.after:.3f} s after {since}"

    def token(self) -> str:
        """This kill in ``--kills`` form: ``1.2``, ``+1.2``, ``~3``, a call ID or a failpoint."""
        if self.effect is not None or self.failpoint is not None:
            return self.effect or self.failpoint or ""
        if self.updates is not None:
            return f"~{self.updates}"
        return f"{'+' if self.from_first_line else ''}{self.after:.3f}"

    @classmethod
    def parse(cls, token: str) -> Kill:
        """The kill a ``token()`` string names."""
        if ":" in token:
            return cls(failpoint=token)
        if token.startswith("~"):
            return cls(updates=int(token[1:]))
        try:
            return cls(after=abs(float(token)), from_first_line=token.startswith("+"))
        except ValueError:
            return cls(effect=token)


@dataclass(slots=True)
class AgentRun:
    """One process of a chain and what it printed."""

    number: int
    command: list[str]
    kill: Kill | None
    returncode: int
    sent: float | None
    """Seconds after spawn at which SIGKILL was sent (``None``: it was not)."""
    trigger: str | None
    events: list[dict[str, Any]]
    garbled: list[str]
    stderr: str
    hung: bool
    duration: float
    effects: Counter[tuple[str, str]] = field(default_factory=Counter)
    """The effect events seen while this process ran, by ``(kind, call id)``."""
    canary: list[str] = field(default_factory=list)

    @property
    def killed(self) -> bool:
        """Died by SIGKILL as planned: sent by the runner, or by the armed failpoint."""
        planned = self.sent is not None or (self.kill is not None and bool(self.kill.failpoint))
        return self.returncode == KILLED and planned

    @property
    def acks(self) -> list[dict[str, Any]]:
        """The entries this process acknowledged: the committed entries its JSON lines carried.

        ``--mode json`` prints the wire's messages (issue 15); an entry arrives in
        the ``entries`` of its commit's ``commit`` message (a snapshot's window
        holds what earlier processes committed, and acknowledged).
        """
        return entries(self.events, snapshots=False)

    @property
    def resubmitted(self) -> bool:
        return "-c" in self.command and REQUEST_ID in self.command

    def describe(self) -> str:
        how = "not killed" if self.kill is None else self.kill.describe()
        if self.sent is not None:
            how += f" (sent at {self.sent:.3f} s: {self.trigger})"
        elif self.kill is not None and not self.killed:
            how += " (it ended first)"
        return (
            f"run {self.number} `{' '.join(self.command[3:-4])}` ({how}, exit {self.returncode}, "
            f"{len(self.acks)} acks, {self.duration:.2f} s)"
        )


@dataclass(slots=True)
class AgentChain:
    """The processes of one trial, from the first to the one that completed."""

    trial: Trial
    seed: int | None
    runs: list[AgentRun] = field(default_factory=list)
    effects: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Effect events by ``(kind, call id)`` (``EffectWatch.counts``)."""
    ledger: list[str] = field(default_factory=list)
    overflowed: bool = False

    @property
    def kills(self) -> list[AgentRun]:
        return [run for run in self.runs if run.killed]

    def read_executions(self) -> dict[str, int]:
        """Executions per ``read`` call: the processes that opened its file."""
        found: Counter[str] = Counter()
        for run in self.runs:
            found.update({call for kind, call in run.effects if kind == "read"})
        return dict(found)

    def replay_command(self) -> str:
        """The command that replays this chain's kills (``agent_campaign.main``)."""
        items = [run.kill.token() for run in self.kills if run.kill is not None]
        resubmit = " --resubmit" if self.trial.resubmit else ""
        return f"python -m tests.e2e.agent_campaign --kills {','.join(items) or '-'}{resubmit}"

    def describe(self, run: AgentRun | None = None) -> str:
        where = f"trial {self.trial.name} [seed {self.seed}, {self.trial.directory}]"
        if run is not None:
            return f"{where} {run.describe()}"
        return f"{where} runs: " + "; ".join(r.describe() for r in self.runs)


def _parse(raw: bytes) -> tuple[list[dict[str, Any]], list[str]]:
    """Decode the wire's lines; a torn last line (no newline: the kill cut it) is dropped."""
    events: list[dict[str, Any]] = []
    garbled: list[str] = []
    *complete, _torn = raw.split(b"\n")
    for line in complete:
        try:
            events.append(decode(line, limit=MAX_HOST_MESSAGE))
        except WireError:
            garbled.append(line.decode(errors="replace"))
    return events, garbled


def _effect_hit(kill: Kill, effects: list[Effect], trial: Trial, ledger_before: int) -> str | None:
    if kill.effect is None:
        return None
    if kill.effect_tool == "bash":
        wrote = any(e.kind == "ledger" for e in effects)
        if wrote and read_ledger(trial.ledger).count(kill.effect) > ledger_before:
            return f"ledger line of {kill.effect}"
        return None
    for effect in effects:
        if effect.call_id == kill.effect:
            return f"{effect.kind} of {effect.name}"
    return None


def _acked_output(mirror: Mirror, events: list[dict[str, Any]], call_id: str) -> str:
    """The committed output of ``call_id`` once ``mirror`` applied ``events`` (or "")."""
    for event in events:
        mirror.apply(event)
    slots = (mirror.docs.get("pi.live") or {}).get("tools") or []
    return next((str(s.get("output") or "") for s in slots if s.get("call_id") == call_id), "")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a live process (Linux ``/proc``); 0 once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _due(kill: Kill | None, first_line: float | None) -> float | None:
    """Seconds after spawn at which a timed kill is due (``None``: not yet known, or never)."""
    if kill is None or kill.after is None:
        return None
    if not kill.from_first_line:
        return kill.after
    return None if first_line is None else first_line + kill.after


def launch(
    trial: Trial, number: int, command: list[str], kill: Kill | None, watch: EffectWatch
) -> AgentRun:
    """Run one process; kill it as ``kill`` says (see the module docstring)."""
    ledger_before = read_ledger(trial.ledger).count(kill.effect) if kill and kill.effect else 0
    slowed: Path | None = None  # the marker of a bash call held inside its effect window
    if kill is not None and kill.effect_tool == "bash" and kill.effect is not None:
        slowed = trial.directory / SLOW_DIR / kill.effect
        slowed.touch()
    acked = Mirror()  # what this process acknowledged, as a client of the wire holds it
    err_path = trial.directory / f"run{number}.stderr"
    out = bytearray()
    seen: Counter[tuple[str, str]] = Counter()
    sent: float | None = None
    trigger: str | None = None
    with err_path.open("wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(
            command,
            cwd=trial.workspace,
            env=trial.environment(kill.failpoint if kill is not None else None),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
        )
        assert proc.stdout is not None
        stdout = proc.stdout.fileno()

        def send(reason: str) -> None:
            nonlocal sent, trigger
            if sent is None:
                proc.send_signal(signal.SIGKILL)
                sent, trigger = time.monotonic() - start, reason

        first_line: float | None = None
        progress = 0.0  # seconds after spawn of the last line, effect or working spell
        cpu_at_progress = 0.0
        dump_asked: float | None = None
        updates = 0
        scanned = 0  # bytes of ``out`` already split into lines
        while True:
            elapsed = time.monotonic() - start
            due = _due(kill, first_line)
            if sent is None and due is not None and elapsed >= due:
                send("time")
            stuck_at = min(progress + SILENCE_TIMEOUT, RUN_TIMEOUT)
            if sent is None and dump_asked is None and progress + SILENCE_TIMEOUT < elapsed:
                cpu = cpu_seconds(proc.pid)
                if cpu - cpu_at_progress >= WORKING_CPU:  # silent, but working
                    progress, cpu_at_progress = elapsed, cpu
                    stuck_at = min(progress + SILENCE_TIMEOUT, RUN_TIMEOUT)
            if sent is None and dump_asked is None and elapsed > stuck_at:
                # Hung: its stacks first (stack_dump), then SIGKILL.
                proc.send_signal(stack_dump.SIGNAL)
                dump_asked = elapsed
            if dump_asked is not None and sent is None:
                dumped = stack_dump.END_MARKER in err_path.read_text(errors="replace")
                if dumped or elapsed > dump_asked + DUMP_WAIT:
                    send(f"hung (no progress for {elapsed - progress:.0f} s)")
            if sent is not None and elapsed > sent + 10:
                trigger = "hung"  # dead, yet its stdout stays open: a leaked descriptor
                break
            wake = stuck_at if sent is None else sent + 10
            if dump_asked is not None and sent is None:
                wake = elapsed + 0.2  # polls stderr for the end of the dump
            if sent is None and due is not None:
                wake = min(wake, due)
            fds = [stdout, watch.fileno()]
            ready, _, _ = select.select(fds, [], [], max(0.0, wake - elapsed))
            if ready:
                progress, cpu_at_progress = time.monotonic() - start, cpu_seconds(proc.pid)
            if watch.fileno() in ready:
                effects = watch.drain()
                seen.update((e.kind, e.call_id) for e in effects)
                hit = _effect_hit(kill, effects, trial, ledger_before) if kill else None
                if hit is not None:
                    send(hit)
            if stdout in ready:
                chunk = os.read(stdout, 1 << 16)
                if not chunk:
                    break
                out += chunk
                if first_line is None and b"\n" in out:
                    first_line = time.monotonic() - start
                end = out.rfind(b"\n") + 1
                watching = (kill is not None and kill.updates is not None) or slowed is not None
                if watching and sent is None and end > scanned:
                    lines, _ = _parse(bytes(out[scanned:end]))
                    scanned = end
                    updates += sum(1 for e in lines if is_streamed(e))
                    if slowed is not None:
                        acked_output = _acked_output(acked, lines, slowed.name)
                        if f"start {slowed.name}" in acked_output:
                            slowed.with_name(f"{slowed.name}.{ACKED}").touch()
                wanted = kill.updates if kill is not None else None
                if wanted is not None and sent is None and updates >= wanted:
                    send(f"streamed update {updates}")
        proc.stdout.close()
        returncode = proc.wait()
        duration = time.monotonic() - start
    if slowed is not None:  # the agent is dead: the slowed command may end
        slowed.with_name(f"{slowed.name}.{RELEASED}").touch()
    seen.update((e.kind, e.call_id) for e in watch.drain())
    events, garbled = _parse(bytes(out))
    (trial.directory / f"run{number}.stdout").write_bytes(out)
    return AgentRun(
        number=number,
        command=command,
        kill=kill,
        returncode=returncode,
        sent=sent if returncode == KILLED else None,
        trigger=trigger,
        events=events,
        garbled=garbled,
        stderr=err_path.read_text(errors="replace"),
        hung=trigger is not None and trigger.startswith("hung"),
        duration=duration,
        effects=seen,
        canary=trial.canary_files(),
    )


def next_command(trial: Trial, runs: list[AgentRun]) -> list[str]:
    """The command of the next process (see the module docstring)."""
    if not trial.stores():
        return trial.command(resume=False, prompt=True)
    acked = any(ack["kind"] == "pi.user" for run in runs for ack in run.acks)
    return trial.command(resume=True, prompt=trial.resubmit or not acked)


KillPlanner = Callable[[AgentChain], Kill | None]
"""Returns the kill for the next process of a chain, or ``None`` to let it complete."""


def run_chain(
    trial: Trial, scenario: Scenario, planner: KillPlanner, seed: int | None
) -> AgentChain:
    """Start the agent, kill it as ``planner`` says, restart it, until a run is not killed."""
    trial.install(scenario)
    chain = AgentChain(trial, seed)
    watch = EffectWatch(trial.workspace, trial.ledger)
    try:
        while True:
            kill = planner(chain)
            if kill is not None and kill.effect is not None:
                kill = Kill(effect=kill.effect, effect_tool=scenario.call(kill.effect).tool)
            number = len(chain.runs) + 1
            run = launch(trial, number, next_command(trial, chain.runs), kill, watch)
            chain.runs.append(run)
            if not run.killed or run.hung:
                break
        chain.effects = Counter(watch.counts)
        chain.overflowed = watch.overflowed
    finally:
        watch.close()
    chain.ledger = read_ledger(trial.ledger)
    return chain
