"""The ``read`` tool through the harness (reference 3.1)."""

from __future__ import annotations

import asyncio
import base64
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.tools.tool_run import RunTool

TEN = "".join(f"line {n}\n" for n in range(1, 11))
PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f"
    b"\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00"
    b"\x00IEND\xaeB`\x82"
)


async def test_read_numbers_the_lines_it_shows(run_tool: RunTool, workdir: Path) -> None:
    (workdir / "f.txt").write_text(TEN)

    outcome = await run_tool("read", {"path": "f.txt"})

    assert outcome.text.splitlines()[0] == " 1\tline 1"
    assert outcome.text.splitlines()[9] == "10\tline 10"
    assert outcome.diagnostics == []
    assert outcome.details == {
        "path": "f.txt",
        "first_line": 1,
        "shown_lines": 11,
        "total_lines": 11,
    }


async def test_read_shows_a_range_and_says_how_to_continue(
    run_tool: RunTool, workdir: Path
) -> None:
    (workdir / "f.txt").write_text(TEN)

    outcome = await run_tool("read", {"path": "f.txt", "offset": 3, "limit": 2})

    assert outcome.text == "3\tline 3\n4\tline 4"
    assert outcome.diagnostics == [
        {"severity": "info", "message": "7 more lines in file. Use offset=5 to continue."}
    ]


async def test_read_truncates_a_long_file_at_2000_lines_with_a_note(
    run_tool: RunTool, workdir: Path
) -> None:
    (workdir / "big.txt").write_text("".join(f"{n}\n" for n in range(1, 2501)))

    outcome = await run_tool("read", {"path": "big.txt"})

    assert len(outcome.text.splitlines()) == 2000
    assert outcome.diagnostics == [
        {
            "severity": "info",
            "message": "Showing lines 1-2000 of 2501. Use offset=2001 to continue.",
            "code": "truncated",
        }
    ]
    assert outcome.details["truncation"]["truncated_by"] == "lines"
    assert not outcome.is_error


async def test_read_refuses_an_offset_beyond_the_end(run_tool: RunTool, workdir: Path) -> None:
    (workdir / "f.txt").write_text(TEN)

    outcome = await run_tool("read", {"path": "f.txt", "offset": 20})

    assert outcome.errors == ["Offset 20 is beyond end of file (11 lines total)"]


async def test_read_returns_an_image_as_image_content(run_tool: RunTool, workdir: Path) -> None:
    (workdir / "dot.png").write_bytes(PNG)

    outcome = await run_tool("read", {"path": "dot.png"})

    assert outcome.message["content"] == [
        {"type": "text", "text": "Read image file dot.png [image/png]"},
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mime_type": "image/png"},
    ]
    assert not outcome.is_error


async def test_read_refuses_a_binary_file_and_says_what_to_use(
    run_tool: RunTool, workdir: Path
) -> None:
    (workdir / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)

    outcome = await run_tool("read", {"path": "blob.bin"})

    assert outcome.errors == [
        "blob.bin is a binary file (300B); read shows text only. "
        "Use bash to inspect it, for example: xxd blob.bin | head"
    ]


async def test_read_of_a_missing_file_says_so(run_tool: RunTool) -> None:
    outcome = await run_tool("read", {"path": "nope.txt"})

    assert outcome.is_error
    assert outcome.errors[0].startswith("Cannot read nope.txt:")


async def test_read_finds_a_file_under_its_curly_quote_spelling(
    run_tool: RunTool, workdir: Path
) -> None:
    (workdir / "it\u2019s.txt").write_text(TEN)

    outcome = await run_tool("read", {"path": "it's.txt"})

    assert not outcome.is_error
    assert outcome.text.splitlines()[0] == " 1\tline 1"


async def test_read_of_a_path_through_a_file_says_it_cannot_be_read(
    run_tool: RunTool, workdir: Path
) -> None:
    (workdir / "f.txt").write_text(TEN)

    outcome = await run_tool("read", {"path": "f.txt/inner.txt"})

    assert outcome.is_error
    assert outcome.errors[0].startswith("Cannot read f.txt/inner.txt:")


async def test_a_read_of_a_small_file_hops_to_a_thread_once(
    run_tool: RunTool, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workdir / "f.txt").write_text(TEN)
    hops: list[str] = []
    to_thread = asyncio.to_thread

    async def counted(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(function, "__name__", repr(function)))
        return await to_thread(function, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", counted)

    outcome = await run_tool("read", {"path": "f.txt"})

    assert not outcome.is_error
    # the head, which holds the whole file (no file_info, exists, open or scan)
    assert hops == ["read_bytes"]


@pytest.fixture(scope="module")
def huge_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 200 MB text file of 10 million 20-byte lines, written once for the module."""
    path = tmp_path_factory.mktemp("huge") / "huge.log"
    chunk = b"0123456789012345678\n" * 50_000  # 1 MB
    with path.open("wb") as file:
        for _ in range(200):
            file.write(chunk)
    return path


@pytest.mark.parametrize(("offset", "first"), [(1, "1\t"), (9_999_990, "9999990\t")])
async def test_read_of_a_200_mb_file_keeps_only_the_window_in_memory(
    run_tool: RunTool, huge_log: Path, offset: int, first: str
) -> None:
    tracemalloc.start()
    try:
        outcome = await run_tool("read", {"path": str(huge_log), "offset": offset, "limit": 5})
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert outcome.text.startswith(first)
    assert len(outcome.text.splitlines()) == 5
    assert outcome.diagnostics[-1]["message"].endswith(f"Use offset={offset + 5} to continue.")
    assert peak < 20 * 1024 * 1024
