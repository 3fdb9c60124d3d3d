"""``scan_lines`` and ``scan_bytes`` select exactly what splitting the whole file would (R119, 3.1).

Compared with ``bytes.split(b"\\n")`` over random files, including files larger
than one read block, so selections that cross block boundaries are covered.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui.env import FileError, LineScan, LocalEnv, scan_bytes
from pi_durable_tui.env._files import READ_BLOCK
from pi_durable_tui.env._readers import cut_at_character


def reference_scan(
    data: bytes, start: int, max_lines: int | None, max_bytes: int | None
) -> tuple[list[bytes], str, int]:
    pieces = data.split(b"\n")
    selected: list[bytes] = []
    used = 0
    stopped = "end"
    first = 0
    for index, line in enumerate(pieces[start:]):
        if max_lines is not None and len(selected) == max_lines:
            stopped = "lines"
            break
        if not selected:
            first = len(line)
            if max_bytes is not None and len(line) > max_bytes:
                selected.append(cut_at_character(line, max_bytes))
                stopped = "bytes"
                break
            selected.append(line)
            used = len(line)
            continue
        if max_bytes is not None and used + 1 + len(line) > max_bytes:
            stopped = "bytes"
            break
        selected.append(line)
        used += 1 + len(line)
        del index
    return selected, stopped, first


def check(scan: LineScan, data: bytes, start: int, lines: int | None, size: int | None) -> None:
    selected, stopped, first = reference_scan(data, start, lines, size)
    assert scan.lines == selected
    assert scan.stopped == stopped
    assert scan.total_lines == data.count(b"\n") + 1
    assert scan.first_line_bytes == first


pieces = st.sampled_from([b"a", b"xyz", b"\n", "\u00e9".encode(), "\u20ac".encode(), b"q" * 30])


# Random files and selections, shared by the reader's scan and the in-memory one.
random_scans = given(
    parts=st.lists(pieces, max_size=60),
    start=st.integers(0, 12),
    max_lines=st.none() | st.integers(0, 8),
    max_bytes=st.none() | st.integers(0, 80),
)


@settings(max_examples=150, deadline=None)
@random_scans
async def test_r119_scan_lines_matches_splitting_the_whole_file(
    tmp_path_factory: pytest.TempPathFactory,
    parts: list[bytes],
    start: int,
    max_lines: int | None,
    max_bytes: int | None,
) -> None:
    data = b"".join(parts)
    path = tmp_path_factory.mktemp("scan") / "f"
    path.write_bytes(data)
    async with await LocalEnv(str(path.parent)).open_binary_reader("f") as reader:
        scan = await reader.scan_lines(start_line=start, max_lines=max_lines, max_bytes=max_bytes)
    check(scan, data, start, max_lines, max_bytes)


@settings(max_examples=150, deadline=None)
@random_scans
def test_scan_bytes_of_a_whole_file_matches_splitting_it(
    parts: list[bytes], start: int, max_lines: int | None, max_bytes: int | None
) -> None:
    data = b"".join(parts)

    scan = scan_bytes(data, start_line=start, max_lines=max_lines, max_bytes=max_bytes)

    check(scan, data, start, max_lines, max_bytes)


def test_scan_bytes_refuses_negative_limits() -> None:
    with pytest.raises(FileError, match="max_lines must be at least 0"):
        scan_bytes(b"x", max_lines=-1)


@pytest.mark.parametrize("start", [0, 3, 40_000])
async def test_r119_scan_lines_crosses_read_blocks(tmp_path: Path, start: int) -> None:
    line = b"0123456789abcdef" * 3 + b"\n"
    data = line * (2 * READ_BLOCK // len(line) + 7)
    (tmp_path / "big").write_bytes(data)
    async with await LocalEnv(str(tmp_path)).open_binary_reader("big") as reader:
        scan = await reader.scan_lines(start_line=start, max_lines=5000, max_bytes=200_000)
    check(scan, data, start, 5000, 200_000)


async def test_r119_scan_lines_refuses_negative_limits(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    async with await LocalEnv(str(tmp_path)).open_binary_reader("f") as reader:
        with pytest.raises(FileError, match="start_line must be at least 0"):
            await reader.scan_lines(start_line=-1)
