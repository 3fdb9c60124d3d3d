"""The ``edit`` tool through the harness (reference 3.3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.tools.patch_support import apply_unified_patch
from tests.tools.tool_run import RunTool

SOURCE = "def f():\n    return 1\n\ndef g():\n    return 1\n"


def edits(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"oldText": old, "newText": new} for old, new in pairs]


async def test_edit_replaces_unique_text_and_puts_a_diff_and_patch_in_the_details(
    run_tool: RunTool, workdir: Path
) -> None:
    (workdir / "m.py").write_text(SOURCE)

    outcome = await run_tool(
        "edit",
        {"path": "m.py", "edits": edits(("def f():\n    return 1", "def f():\n    return 2"))},
    )

    after = "def f():\n    return 2\n\ndef g():\n    return 1\n"
    assert outcome.text == "Successfully replaced 1 block(s) in m.py."
    assert (workdir / "m.py").read_text() == after
    details = outcome.details
    assert details["diff"].splitlines()[:3] == [" 1 def f():", "-2     return 1", "+2     return 2"]
    assert apply_unified_patch(SOURCE, details["patch"]) == after
    assert details["first_changed_line"] == 2


async def test_several_edits_match_the_original_file(run_tool: RunTool, workdir: Path) -> None:
    (workdir / "m.py").write_text(SOURCE)

    outcome = await run_tool(
        "edit", {"path": "m.py", "edits": edits(("def f", "def first"), ("def g", "def second"))}
    )

    assert outcome.text == "Successfully replaced 2 block(s) in m.py."
    assert (workdir / "m.py").read_text() == SOURCE.replace("def f", "def first").replace(
        "def g", "def second"
    )


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            edits(("missing", "x")),
            "Could not find the exact text in m.py. The old text must match exactly including "
            "all whitespace and newlines.",
        ),
        (
            edits(("return 1", "return 2")),
            "Found 2 occurrences of the text in m.py. The text must be unique. Please provide "
            "more context to make it unique.",
        ),
        (
            edits(("def f", "def h"), ("return 1", "return 2")),
            "Found 2 occurrences of edits[1] in m.py. Each oldText must be unique. Please provide "
            "more context to make it unique.",
        ),
        (
            edits(("def f", "def f")),
            "No changes made to m.py. The replacement produced identical content. This might "
            "indicate an issue with special characters or the text not existing as expected.",
        ),
        ([], "Edit tool input is invalid. edits must contain at least one replacement."),
    ],
    ids=["not-found", "duplicate", "duplicate-of-several", "no-change", "empty"],
)
async def test_edit_errors_say_exactly_what_was_wrong(
    run_tool: RunTool, workdir: Path, given: list[dict[str, str]], message: str
) -> None:
    (workdir / "m.py").write_text(SOURCE)

    outcome = await run_tool("edit", {"path": "m.py", "edits": given})

    assert outcome.errors == [message]
    assert (workdir / "m.py").read_text() == SOURCE


async def test_edit_of_a_missing_file_names_the_error_code(run_tool: RunTool) -> None:
    outcome = await run_tool("edit", {"path": "nope.py", "edits": edits(("a", "b"))})

    assert outcome.errors == ["Could not edit file: nope.py. Error code: not_found."]


async def test_edit_keeps_crlf_line_endings_and_a_bom(run_tool: RunTool, workdir: Path) -> None:
    (workdir / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")

    await run_tool("edit", {"path": "w.txt", "edits": edits(("one\ntwo", "uno\ndos"))})

    assert (workdir / "w.txt").read_bytes() == b"\xef\xbb\xbfuno\r\ndos\r\nthree\r\n"


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "m.py", "edits": json.dumps(edits(("def f", "def h")))},
        {"path": "m.py", "edits": {"oldText": "def f", "newText": "def h"}},
        {"path": "m.py", "oldText": "def f", "newText": "def h"},
    ],
    ids=["json-string", "single-object", "top-level"],
)
async def test_edit_repairs_common_argument_mistakes_and_stores_the_call_as_sent(
    run_tool: RunTool, workdir: Path, arguments: dict[str, Any]
) -> None:
    (workdir / "m.py").write_text(SOURCE)

    outcome = await run_tool("edit", arguments)

    assert not outcome.is_error, outcome.errors
    assert (workdir / "m.py").read_text().startswith("def h():")
    call = next(e for e in await outcome.rig.transcript() if e.kind == "pi.assistant")
    assert call.model[0]["content"][0]["arguments"] == arguments  # type: ignore[call-overload, index]
