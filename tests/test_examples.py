"""Every runnable example in ``pi_durable_tui.examples`` runs offline and shows what it claims."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from functools import cache

import pytest


@cache
def run_example(name: str) -> str:
    """Run an example once per test session and return its output."""
    result = subprocess.run(
        [sys.executable, "-m", f"pi_durable_tui.examples.{name}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_documents_example_reads_a_rewindable_document_now_and_as_of_an_entry() -> None:
    out = run_example("documents")
    assert "now:        {'title': 'Groceries for Sunday', 'lines': ['milk', 'bread']}" in out
    assert "as of first: {'title': 'Groceries', 'lines': ['milk']}" in out


def test_the_forks_example_copies_each_document_by_its_fork_policy() -> None:
    out = run_example("forks")
    assert "child entries: ['outline']" in out
    assert "plan (asOf):    {'steps': ['outline']}" in out
    assert "budget (current): {'left': 40}" in out
    assert "scratch (initial): None" in out


def test_the_watches_example_streams_text_as_append_operations() -> None:
    out = run_example("watches")
    assert "frame -> [{'op': 'append', 'path': ['text'], 'text': 'streams '}]" in out
    assert "late joiner starts from: {'text': 'Durable streams cost their new bytes.'}" in out


def test_the_tasks_example_completes_a_parent_after_its_child() -> None:
    out = run_example("tasks")
    assert "outcome: {'status': 'completed', 'result': {'child': {'words': 5}}}" in out
    assert "example.report#3 waiting" in out


@pytest.mark.timeout(120)
def test_the_recovery_example_resumes_a_killed_task_at_its_last_tick_with_one_effect() -> None:
    out = run_example("recovery")
    assert "worker 1 was killed with SIGKILL" in out
    lines = out.splitlines()
    reopened = next(line for line in lines if line.startswith("worker 2: reopened:"))
    # The kill lands while tick 3 (or, on a slow machine, a later tick) is running.
    tick = int(reopened.rsplit("'tick': ", 1)[1].rstrip("}"))
    assert tick >= 3
    assert "is pending at {'phase': 'tick'" in reopened
    assert lines[lines.index(reopened) + 1] == f"worker 2: tick {tick}"
    assert "worker 2: outcome: {'status': 'completed', 'result': {'ticks': 8}}" in out
    ledger = next(line for line in out.splitlines() if line.startswith("ledger:"))
    assert ledger.count("copied") == 1


def block_after(out: str, heading: str) -> list[str]:
    """The indented lines that follow the line ``heading`` in an example's output."""
    lines = out.splitlines()
    block: list[str] = []
    for line in lines[lines.index(heading) + 1 :]:
        if not line.startswith(" "):
            break
        block.append(line)
    return block


def depth(line: str) -> int:
    """How deep a line of a printed task tree is (the tree itself is indented once)."""
    return (len(line) - len(line.lstrip(" "))) // 2 - 1


STREAMED = re.compile(r"  streamed: '(.*)' \(this commit (appended '(.*)'|set the message)\)")


def test_the_chat_example_streams_the_answer_as_appends_in_commits_then_reports_usage_r85() -> None:
    out = run_example("chat")
    lines = out.splitlines()
    answers = [line for line in lines if line.startswith("pi.assistant: ")]
    assert len(answers) == 2
    first_answer = answers[0].removeprefix("pi.assistant: ").removesuffix(" (done)")
    first_turn = [STREAMED.fullmatch(line) for line in lines[: lines.index(answers[0])]]
    partials = [(m[1], m[3]) for m in first_turn if m is not None]
    # Several commits came before the answer; after the first, each carried only its new text.
    assert len(partials) >= 2
    assert all(appended is not None for _, appended in partials[1:])
    for (before, _), (text, appended) in itertools.pairwise(partials):
        assert text == before + appended
    assert first_answer.startswith(partials[-1][0])
    assert out.count("pi.live after the turn: {}") == 2
    assert "pi.usage[faux/faux-1]: 160 tokens" in out  # R115
    assert "session usage: 120 input + 40 output tokens, $0.000960" in out  # R116


def test_the_inbox_example_steers_after_the_tool_round_and_follows_up_after_the_run_r61() -> None:
    out = run_example("inbox")
    assert "reject: Conversation 1 is busy" in out  # R59
    assert "inbox: [('steer', 'Also check lint'), ('follow_up', 'Then write a summary')]" in out
    assert block_after(out, "transcript:") == [
        "  pi.user: Run the tests",
        "  pi.assistant: bash({'command': 'sleep 0.5; echo 12 passed'})",
        "  pi.tool-result: 12 passed",
        "  pi.user: Also check lint",
        "  pi.assistant: Tests pass (12) and lint is clean.",
        "  pi.user: Then write a summary",
        "  pi.assistant: Summary: 12 tests pass, lint clean.",
    ]


def test_the_inbox_example_keeps_a_queued_write_through_abort_and_places_it_later_r67() -> None:
    out = run_example("inbox")
    assert "queued input after abort: unanswered/aborted" in out
    assert "queued write after abort: queued" in out
    assert "inbox after abort: ['write']" in out
    assert "queued write after the next input: done" in out
    # The write is placed before the next input, in the same boundary (R62).
    assert block_after(out, "transcript since the benchmarks:")[2:] == [
        "  pi.tool-result: <harness> [error] Tool bash was aborted </harness>",
        "  example.note: {'text': 'benchmarks were started by hand'}",
        "  pi.user: Anything new?",
        "  pi.assistant: Noted.",
    ]


def test_the_foreground_subagent_example_answers_the_tool_call_from_a_child_conversation() -> None:
    out = run_example("subagent_foreground")
    tree = block_after(out, "task graph while the subagent's command runs:")
    # The child conversation hangs under the subagent call, its own command under it (R126).
    assert [(depth(line), line.split("#")[0].split()[0]) for line in tree] == [
        (0, "conversation"),
        (1, "pi.generation"),
        (2, "pi.tool"),
        (3, "conversation"),
        (4, "pi.generation"),
        (5, "pi.tool"),
    ]
    assert tree[2].endswith("running (execute)")
    assert tree[5].endswith("running (execute)")
    child = tree[3].strip()
    assert "  pi.tool-result: notes.txt has 3 lines." in block_after(
        out, "main conversation (done):"
    )
    assert "  pi.tool-result: 3" in block_after(out, f"subagent {child}:")
    assert block_after(out, "task graph after the answer:") == ["  (no live tasks)"]


def test_the_background_subagent_example_survives_esc_and_reports_as_a_follow_up_r57() -> None:
    out = run_example("subagent_background")
    before = block_after(out, "task graph before Esc:")
    after = block_after(out, "task graph after Esc:")
    assert [line.split("#")[0].strip() for line in before if depth(line) == 1] == [
        "pi.generation",
        "pi.subagent",
    ]
    assert "Esc: the main turn is aborted" in out
    # Esc ended the main turn; the background task and its child's command kept running.
    [survivor] = [line.strip() for line in after if depth(line) == 1]
    assert survivor.startswith("pi.subagent#")
    assert survivor.endswith("[background]")
    assert after[-1].strip().startswith("pi.tool#")
    assert after[-1].endswith("running (execute)")
    assert f"{survivor.split()[0]} completed" in out
    transcript = block_after(out, "main conversation:")
    assert "  pi.tool-result: <harness> [error] Tool bash was aborted </harness>" in transcript
    task_id = survivor.split()[0].removeprefix("pi.subagent#")
    assert transcript[-2] == (
        f"  pi.user: [background task {task_id} report] "
        "Found 3 sources: a paper, a talk and a blog post."
    )
    assert transcript[-1] == "  pi.assistant: The subagent's report is in: three sources found."


def test_the_compaction_example_summarizes_by_hand_and_at_the_threshold_r108_r112() -> None:
    out = run_example("compaction")
    lines = out.splitlines()
    summary = "    user: The conversation history before this point was compacted"
    manual = next(i for i, line in enumerate(lines) if "data {'reason': 'manual'" in line)
    automatic = next(i for i, line in enumerate(lines) if "data {'reason': 'threshold'" in line)
    assert manual < automatic
    assert "active context before compact(): 6 messages" in out
    assert block_after(out, "active context after compact(): 4 messages")[0].startswith(summary)
    assert "this one would pass 420 - 150 = 270: compacted first" in out
    before = next(line for line in lines if line.startswith("active context just before it:"))
    after = next(line for line in lines if line.startswith("active context after the automatic"))
    assert block_after(out, before)[0].startswith(summary)  # the manual one
    assert block_after(out, after)[0].startswith(summary)  # the automatic one
    assert len(block_after(out, after)) < len(block_after(out, before))


def test_the_tool_override_example_shows_the_model_a_refused_and_a_blocked_call_r31_r93() -> None:
    out = run_example("tool_override")
    refused = "  bash result (error): Refused: rm -rf is not allowed here. Remove files one by one."
    blocked = "  read result (error): <harness> [error] Tool call blocked: read may not touch .env"
    assert refused in out
    assert blocked + " </harness>" in out
    assert "  bash result: removed build" in out
    assert "build exists: False" in out
    assert ".env untouched: True" in out


@pytest.mark.timeout(120)
def test_the_kill_and_continue_example_reports_the_killed_command_as_interrupted_once_r95() -> None:
    out = run_example("kill_and_continue")
    lines = out.splitlines()
    assert "worker 1 was killed with SIGKILL" in out
    reopened = next(line for line in lines if line.startswith("worker 2: reopened"))
    assert "('pi.tool', 'pending')" in reopened
    # Resubmitting the request ID found the first worker's submission (R59).
    submissions = [line.split(":", 1)[1] for line in lines if "for request build-1" in line]
    assert len(submissions) == 2
    assert submissions[0] == submissions[1]
    committed = [
        line.removeprefix("worker 1: committed output: ")
        for line in lines
        if line.startswith("worker 1: committed output: ")
    ]
    given = [line.removeprefix("worker 2:   ") for line in lines if line.startswith("worker 2:   ")]
    # The model got the output committed before the kill, then the interruption.
    assert committed
    assert given[: len(committed)] == committed
    assert "[error] Tool bash was interrupted and may have partially run" in given
    assert "worker 2: answer (done): The build was interrupted" in out
    assert "ledger: ['started']" in out
