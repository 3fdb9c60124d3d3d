"""``last_answer``: which block ``/copy`` takes from a view model's blocks."""

from __future__ import annotations

from pi_durable_tui.app import Block, ToolCard, last_answer


def test_the_last_answer_is_the_newest_committed_assistant_text() -> None:
    blocks = [
        Block("e1", "assistant", 1, text="older answer"),
        Block("e2", "user", 2, text="and now?"),
        Block("e3", "assistant", 3, text="newest **answer**"),
        Block("e3/c", "tool", 3, tool=ToolCard("c", "read", "done", path="a.py")),
        Block("e4", "error", 4, text="Model error"),
        Block("e5", "user", 5, text="next question"),
    ]
    assert last_answer(blocks) == "newest **answer**"


def test_a_streaming_answer_a_partial_a_crash_cut_and_an_empty_text_are_passed_over() -> None:
    blocks = [
        Block("e1", "assistant", 1, text="the answer", mark="aborted"),
        Block("e2", "assistant", 2, text="cut by a cr", mark="interrupted"),
        Block("e3", "assistant", 3, text="  \n"),
        Block("live", "assistant", text="stream", streaming=True),
    ]
    assert last_answer(blocks) == "the answer"


def test_there_is_no_last_answer_before_the_first_one() -> None:
    assert last_answer([]) is None
    assert last_answer([Block("e1", "user", 1, text="hello")]) is None
