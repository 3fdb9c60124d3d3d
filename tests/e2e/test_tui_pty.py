"""``pidurable`` end to end in a real terminal: type, watch, ``kill -9``, ``--continue`` (issue 8).

The real app (``python -m pi_durable_tui``) runs in tmux (``tui_terminal``) on
the faux provider with a scripted model, real tools and a real SQLite store.
Each scenario types a prompt, waits for a moment on the screen, captures the
screen and SIGKILLs the process, reads the store the dead process left
(``tui_store``), runs ``pidurable --continue`` in the same terminal and waits
for the recovery to show; after the last kill it lets the work finish and leaves
with Ctrl+D. The checks, from the screen and from the store:

- the screen shows only committed state (R2): every marker token on the screen
  just before a kill is in the store the kill left;
- committed text is never lost: a kill mid-stream leaves the partial, which the
  resume turns into exactly one ``aborted`` message (R84, R85), and everything
  the store held at a kill is still there at the end;
- nothing is placed twice: user texts, request IDs, answers, tool results;
- an interrupted ``bash`` is reported (``interrupted`` in the store, R95;
  ``[interrupted]`` and the recovery report on the screen) and never runs again
  (an effect ledger file the commands append to);
- a background subagent survives kills and Esc (R57) and its report arrives
  once; ``PRAGMA integrity_check`` is ``ok`` after every kill (R129).

The scenarios run at the same time in their own terminals (a module fixture
starts the ones the selected tests name with ``pytest.mark.scenario``), so the
file costs about as long as its slowest scenario. Kill points are drawn from a
fixed seed; the default run has 11 kill-and-continue cycles (reliability.md 15,
K1 in the terminal).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.tui_store import StoreSnapshot, read_store, tokens
from tests.e2e.tui_terminal import ScreenTest, Terminal, contains, flat, require_tmux

SEED = 20_261_201
LEDGER = "ledger.txt"
SEPARATOR = "─ resumed ─"
STREAM_KILLS, BASH_KILLS, BACKGROUND_KILLS = 5, 3, 3
STREAM_WORDS = 200

# -- scripts --------------------------------------------------------------------


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _bash(letter: str, lines: int) -> dict[str, Any]:
    """A replay-unsafe command: it notes its start in the ledger, then prints slowly."""
    command = (
        f"echo {letter} >> {LEDGER}; "
        f"for i in $(seq -f {letter}%03g 1 {lines}); do echo $i; sleep 0.1; done"
    )
    return {"type": "tool_call", "name": "bash", "arguments": {"command": command}}


def _background(task: str) -> dict[str, Any]:
    arguments = {"task": task, "background": True}
    return {"type": "tool_call", "name": "subagent", "arguments": arguments}


def _words(letter: str, count: int) -> str:
    return " ".join(f"{letter}{n:03d}" for n in range(1, count + 1))


STREAM_ANSWER = f"Stream begins. {_words('w', STREAM_WORDS)} END-STREAM"
STREAM_SCRIPT = {"tokens_per_second": 80, "responses": [{"content": [_text(STREAM_ANSWER)]}]}

BASH_LETTERS = ("a", "b", "c")
BASH_SCRIPT = {
    "tokens_per_second": 400,
    "responses": [
        *({"content": [_text(f"Step {x}."), _bash(x, 80)]} for x in BASH_LETTERS),
        {"content": [_text("All steps done. END-BASH")]},
    ],
}

SUB_LETTERS = ("p", "q", "r")
BACKGROUND_SCRIPT = {
    "tokens_per_second": 400,
    "responses": [
        {"content": [_text("Starting a reviewer."), _background("[bg] review slowly")]},
        {"content": [_text("Main turn done, m001.")]},
        {"match": {"user": "report]"}, "content": [_text("Report received. END-MAIN")]},
        *(
            {"match": {"user": "[bg]"}, "content": [_text(f"Sub step {x}."), _bash(x, 80)]}
            for x in SUB_LETTERS
        ),
        {"match": {"user": "[bg]"}, "content": [_text("Review: r001 BG-DONE")]},
    ],
}

ESC_SCRIPT = {
    "tokens_per_second": 60,
    "responses": [
        {"content": [_text("Starting a reviewer."), _background("[bg] review slowly")]},
        {"content": [_text(f"Chatting meanwhile: {_words('w', STREAM_WORDS)} END-CHAT")]},
        {"match": {"user": "report]"}, "content": [_text("Report received. END-ESC")]},
        {"match": {"user": "[bg]"}, "content": [_text("Sub step e."), _bash("e", 50)]},
        {"match": {"user": "[bg]"}, "content": [_text("Review: r002 BG-DONE")]},
    ],
}


# -- driving ----------------------------------------------------------------------


@dataclass(slots=True)
class Kill:
    """One kill-and-continue cycle."""

    what: str
    screen: str
    """The screen captured just before the SIGKILL."""
    store: StoreSnapshot
    """The store as the dead process left it."""
    resumed: str
    """The screen once ``--continue`` showed its recovery."""


@dataclass(slots=True)
class Run:
    """A scenario from the first start to the clean exit."""

    terminal: Terminal
    kills: list[Kill] = field(default_factory=list)
    screens: dict[str, str] = field(default_factory=dict)
    """Screens the scenario kept by name (``final``: when the work was done)."""
    streaming: list[str] = field(default_factory=list)
    """Every distinct screen from the first paint to the first kill."""
    exit_status: str = ""
    store: StoreSnapshot | None = None
    ledger: list[str] = field(default_factory=list)

    @property
    def final(self) -> StoreSnapshot:
        assert self.store is not None
        return self.store


def _start(terminal: Terminal, prompt: str, *, burst: bool = False) -> None:
    terminal.start("--model", "faux/faux-1")
    terminal.wait_for(contains("Ask anything"), "the first paint")
    terminal.submit(prompt, burst=burst)


def _ledger(terminal: Terminal) -> list[str]:
    path = terminal.work / LEDGER
    return path.read_text().split() if path.exists() else []


def _kill_and_continue(run: Run, during: ScreenTest, what: str, recovered: ScreenTest) -> None:
    terminal = run.terminal
    terminal.wait_for(during, what)
    screen = terminal.kill()
    store = read_store(terminal.store())
    terminal.start("--continue")
    resumed = terminal.wait_for(recovered, f"the recovery after the kill {what}")
    run.kills.append(Kill(what, screen, store, resumed))


def _finish(run: Run, done: ScreenTest, what: str) -> Run:
    terminal = run.terminal
    run.screens["final"] = terminal.wait_for(done, what)
    terminal.press("C-d")
    run.exit_status = terminal.wait_dead()
    run.store = read_store(terminal.store())
    run.ledger = _ledger(terminal)
    return run


def _after_last(marker: str, screen: str) -> str:
    return screen.rsplit(marker, 1)[-1]


def _live_answer_shows(text: str) -> ScreenTest:
    """A screen test: the answer streaming now shows ``text``.

    The live answer is below the partials earlier kills left, each folded to one
    line that starts with ``[interrupted]`` (issue 12).
    """
    return lambda screen: text in _after_last("[interrupted]", screen)


def _subagent_runs(terminal: Terminal, letter: str) -> ScreenTest:
    """A screen test: the subagent runs command ``letter``.

    Its output is not on the main screen: its command in the task tree and its
    start in the ledger say it runs.
    """
    return lambda screen: f"bash: echo {letter} >>" in screen and letter in _ledger(terminal)


def _recovered(pattern: str) -> ScreenTest:
    """A screen test: what follows the newest ``resumed`` separator matches ``pattern``.

    REMINDER: a recovery wait must test everything the checks later read from its
    screen: tmux may capture a frame Textual is still drawing.
    """
    compiled = re.compile(pattern)
    return lambda screen: compiled.search(flat(_after_last(SEPARATOR, screen))) is not None


STREAM_RECOVERED = _recovered(
    r"The turn in the main conversation resumes .*\[interrupted\] answer cut off when pidurable "
    r"stopped \(\d+ lines?, ctrl\+o to expand\)"
)
BACKGROUND_RECOVERED = _recovered(
    r"Background task \d+ \(subagent: \[bg\] review slowly\) is still running; /tasks lists it\."
)


def reported(token: str) -> ScreenTest:
    """A screen test: the subagent's report (with ``token``) arrived in the transcript."""
    pattern = re.compile(r"\[background task \d+ report\] Review: " + token)
    return lambda screen: pattern.search(flat(screen)) is not None


def bash_cut(letter: str) -> ScreenTest:
    """A screen test: command ``letter``'s card says ``[interrupted]`` and the recovery
    report says it was cut and does not run again."""
    card = re.compile(rf"seq -f {letter}%03g .*\[interrupted\]")
    report = _recovered(
        rf"bash `echo {letter} >> .* was cut by the crash while running; "
        r"it is not replay-safe, so it does not run again"
    )
    return lambda screen: card.search(screen) is not None and report(screen)


def drive_stream(terminal: Terminal) -> Run:
    """Kill during the streamed answer, again and again, at words drawn from the seed."""
    run = Run(terminal)
    rng = random.Random(SEED)
    _start(terminal, "u001 stream a long answer")
    for number in range(STREAM_KILLS):
        # The first kill comes late enough to watch the typed prompt's answer grow.
        word = f"w{rng.randint(45, 70) if number == 0 else rng.randint(8, 60):03d}"
        what = f"{number + 1} during the stream at {word}"
        _kill_and_continue(run, _live_answer_shows(word), what, STREAM_RECOVERED)
        if number == 0:
            run.streaming = list(terminal.screens)
    return _finish(run, _live_answer_shows("END-STREAM"), "the whole answer")


def drive_bash(terminal: Terminal) -> Run:
    """Kill during each of three slow, replay-unsafe ``bash`` commands."""
    run = Run(terminal)
    rng = random.Random(SEED + 1)
    _start(terminal, "u002 run three slow steps")
    for letter in BASH_LETTERS:
        line = f"{letter}{rng.randint(3, 25):03d}"
        _kill_and_continue(run, contains(line), f"during bash {letter} at {line}", bash_cut(letter))
    return _finish(run, contains("END-BASH"), "the last answer")


def drive_background(terminal: Terminal) -> Run:
    """Kill while a background subagent runs each of its slow commands."""
    run = Run(terminal)
    _start(terminal, "u003 review in the background")
    for letter in SUB_LETTERS:
        _kill_and_continue(
            run,
            _subagent_runs(terminal, letter),
            f"during the subagent's bash {letter}",
            BACKGROUND_RECOVERED,
        )
    return _finish(
        run,
        lambda s: "END-MAIN" in s and reported("r001")(s),
        "the report and the main answer to it",
    )


def drive_escape(terminal: Terminal) -> Run:
    """Esc during the main answer while a background subagent works; no kill."""
    run = Run(terminal)
    # The prompt arrives in one burst with its Enter (the editor keeps typing order).
    _start(terminal, "u004 chat while reviewing", burst=True)
    terminal.wait_for(
        lambda s: "w010" in s and "subagent:" in s, "the answer streaming beside the subagent"
    )
    terminal.press("Escape")
    run.screens["escaped"] = terminal.wait_for(
        lambda s: "[aborted]" in s and "subagent:" in _after_last("─Tasks", s),
        "the aborted answer, the subagent still in the task tree",
    )
    return _finish(
        run, lambda s: "END-ESC" in s and reported("r002")(s), "the report and the answer to it"
    )


SCENARIOS: dict[str, tuple[dict[str, Any], Callable[[Terminal], Run]]] = {
    "stream": (STREAM_SCRIPT, drive_stream),
    "bash": (BASH_SCRIPT, drive_bash),
    "background": (BACKGROUND_SCRIPT, drive_background),
    "escape": (ESC_SCRIPT, drive_escape),
}


def _play(name: str, root: Path) -> Run:
    script, drive = SCENARIOS[name]
    path = root / "script.json"
    path.write_text(json.dumps(script))
    terminal = Terminal(root, path)
    try:
        return drive(terminal)
    finally:
        terminal.close()


@pytest.fixture(scope="module")
def runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Run]]]:
    require_tmux()
    marks = (item.get_closest_marker("scenario") for item in request.session.items)
    wanted = sorted({mark.args[0] for mark in marks if mark is not None})
    with ThreadPoolExecutor(max_workers=len(wanted) or 1) as pool:
        yield {
            name: pool.submit(_play, name, tmp_path_factory.mktemp(f"tui-{name}"))
            for name in wanted
        }


# -- checks ------------------------------------------------------------------------


def _checked(future: Future[Run], kills: int, prompt: str) -> Run:
    """A kill scenario's run, once the checks every such scenario shares have passed."""
    run = future.result()
    assert len(run.kills) == kills
    _check_every_kill(run)
    _check_end(run, prompt)
    return run


def _check_every_kill(run: Run) -> None:
    """Shown only what was committed (R2); a healthy store at every kill (R129)."""
    print(f"{len(run.kills)} kills: " + "; ".join(kill.what for kill in run.kills))
    for kill in run.kills:
        shown = tokens(kill.screen)
        assert shown, f"kill {kill.what}: no marker on the screen\n{kill.screen}"
        missing = shown - kill.store.tokens()
        assert not missing, f"kill {kill.what}: shown but not committed: {sorted(missing)}"
        assert kill.store.health == [], f"kill {kill.what}: {kill.store.health}"
        lost = kill.store.tokens() - run.final.tokens()
        assert not lost, f"kill {kill.what}: committed, then lost by recovery: {sorted(lost)}"
        assert kill.store.duplicates() == [], f"kill {kill.what}"
        assert SEPARATOR in kill.resumed, kill.resumed


def _check_end(run: Run, prompt: str) -> None:
    assert run.exit_status == "status 0", run.screens["final"]
    assert run.final.health == []
    assert run.final.duplicates() == []
    prompts = [s for s in run.final.of_kind("pi.user") if prompt in json.dumps(s.entry.model)]
    assert len(prompts) == 1, f"the prompt {prompt!r} is stored {len(prompts)} times"


def _max_word(screen: str) -> int:
    numbers = [int(t[1:]) for t in tokens(screen) if t.startswith("w")]
    return max(numbers, default=0)


@pytest.mark.scenario("stream")
def test_a_typed_prompt_streams_onto_the_screen_word_by_word_R85(
    runs: dict[str, Future[Run]],
) -> None:
    run = runs["stream"].result()
    first = run.kills[0].screen
    assert first.index("u001 stream a long answer") < first.index("Stream begins.")
    progress = [_max_word(s) for s in run.streaming]
    steps = sorted(set(progress) - {0})
    assert len(steps) >= 3, f"the answer appeared in {len(steps)} paints: {progress}"
    assert progress.index(steps[0]) < progress.index(steps[-1])


@pytest.mark.scenario("stream")
def test_kills_mid_stream_keep_each_shown_partial_as_one_aborted_message_and_the_answer_completes_once_R2_R84(  # noqa: E501
    runs: dict[str, Future[Run]],
) -> None:
    run = _checked(runs["stream"], STREAM_KILLS, "u001")
    for kill in run.kills:
        assert not any("END-STREAM" in t for t in kill.store.assistant(aborted=False)), (
            f"kill {kill.what} landed after the answer was complete"
        )
        assert STREAM_RECOVERED(kill.resumed), kill.resumed
        # The partial is one folded line: its words show once, in the answer below (issue 12).
        report = _after_last(SEPARATOR, kill.resumed).split("[interrupted]")[0]
        assert not {t for t in tokens(report) if t[0] == "w"}, kill.resumed
    partials = run.final.assistant(aborted=True)
    assert len(partials) == STREAM_KILLS, partials
    for kill, partial in zip(run.kills, partials, strict=True):
        shown = {t for t in tokens(_after_last("[interrupted]", kill.screen)) if t[0] == "w"}
        lost = shown - tokens(partial)
        assert not lost, f"kill {kill.what}: the partial lost {sorted(lost)}"
        assert STREAM_ANSWER.startswith(partial), partial
    assert run.final.assistant(aborted=False) == [STREAM_ANSWER]
    assert "END-STREAM" in run.screens["final"]


@pytest.mark.scenario("bash")
def test_kills_during_slow_bash_commands_report_each_interrupted_with_its_output_and_never_rerun_it_R95(  # noqa: E501
    runs: dict[str, Future[Run]],
) -> None:
    run = _checked(runs["bash"], BASH_KILLS, "u002")
    assert run.ledger == list(BASH_LETTERS), "a replay-unsafe command ran again"
    results = run.final.tool_results()
    assert ["interrupted" in r["codes"] for r in results.values()] == [True] * BASH_KILLS
    for letter, kill, result in zip(BASH_LETTERS, run.kills, results.values(), strict=True):
        shown = {t for t in tokens(kill.screen) if t[0] == letter}
        assert shown, kill.screen
        assert shown <= tokens(result["text"]), f"kill {kill.what}: output lost"
        assert bash_cut(letter)(kill.resumed), kill.resumed
    assert run.final.assistant(aborted=False)[-1] == "All steps done. END-BASH"


@pytest.mark.scenario("background")
def test_kills_during_a_background_subagent_leave_it_running_and_its_report_arrives_once_R57(
    runs: dict[str, Future[Run]],
) -> None:
    run = _checked(runs["background"], BACKGROUND_KILLS, "u003")
    for kill in run.kills:
        live = [t for t in kill.store.live_tasks() if t.kind == "pi.subagent"]
        assert live, f"kill {kill.what} landed after the subagent finished"
        assert BACKGROUND_RECOVERED(kill.resumed), kill.resumed
    assert run.ledger == list(SUB_LETTERS), "a replay-unsafe command ran again"
    results = run.final.tool_results().values()
    interrupted = [r for r in results if "interrupted" in r["codes"]]
    assert len(interrupted) == BACKGROUND_KILLS, results
    _check_report(run, "r001")
    assert "END-MAIN" in run.screens["final"]


def _check_report(run: Run, token: str) -> None:
    tasks = [t for t in run.final.tasks if t.kind == "pi.subagent"]
    assert [t.state.get("outcome", {}).get("status") for t in tasks] == ["completed"]
    reports = [s for s in run.final.of_kind("pi.user") if "report]" in json.dumps(s.entry.model)]
    assert len(reports) == 1, f"{len(reports)} reports"
    assert token in json.dumps(reports[0].entry.model)
    request = f"subagent-report:{tasks[0].id}"
    submissions = [s for s in run.final.submissions if s.request_id == request]
    assert [s.status for s in submissions] == ["done"]
    assert reported(token)(run.screens["final"])


@pytest.mark.scenario("escape")
def test_esc_aborts_the_answer_and_leaves_the_background_subagent_running_until_its_report_R57(
    runs: dict[str, Future[Run]],
) -> None:
    run = runs["escape"].result()
    escaped = run.screens["escaped"]
    tree = _after_last("─Tasks", escaped)
    assert "subagent:" in tree, escaped
    assert "[background]" in tree, escaped
    _check_end(run, "u004")
    assert run.ledger == ["e"]
    (partial,) = run.final.assistant(aborted=True)
    assert partial.startswith("Chatting meanwhile: w001")
    assert "w010" in partial
    _check_report(run, "r002")
    assert "END-ESC" in run.screens["final"]
