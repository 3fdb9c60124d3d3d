"""Conformance tests of reading: file facts, listings, text, bytes, readers, line scans (R119)."""

from __future__ import annotations

import time
from collections.abc import Awaitable

import pytest

from pi_durable_tui.env._conformance.base import EnvConformanceBase
from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._protocol import ExecutionEnv
from pi_durable_tui.env._types import DirEntry


async def code_of(operation: Awaitable[object]) -> str:
    """The ``FileError`` code ``operation`` fails with (the test fails if it succeeds)."""
    with pytest.raises(FileError) as caught:
        await operation
    return caught.value.code


class FileFactRules(EnvConformanceBase):
    """``file_info``, ``exists``, ``list_dir`` and ``open_dir_reader`` (R119)."""

    async def test_r119_file_info_gives_kind_size_and_mtime(self, env: ExecutionEnv) -> None:
        await env.write_file("a.txt", "hello")
        await env.create_dir("d")
        info = await env.file_info("a.txt")
        assert (info.kind, info.size) == ("file", 5)
        assert abs(info.mtime_ms - time.time() * 1000) < 600_000
        assert (await env.file_info("d")).kind == "directory"

    async def test_r119_file_info_never_follows_a_final_symlink(self, env: ExecutionEnv) -> None:
        await env.write_file("target.txt", "0123456789")
        await env.exec(["ln", "-s", "target.txt", "link"])
        await env.exec(["ln", "-s", "nowhere", "dangling"])
        assert (await env.file_info("link")).kind == "symlink"
        assert (await env.file_info("dangling")).kind == "symlink"
        assert await env.exists("dangling")

    async def test_r119_file_info_errors_name_the_reason(self, env: ExecutionEnv) -> None:
        await env.write_file("plain.txt", "x")
        assert await code_of(env.file_info("missing")) == "not_found"
        assert await code_of(env.file_info("plain.txt/inner")) == "not_directory"
        with pytest.raises(FileError) as caught:
            await env.file_info("missing")
        assert caught.value.path == env.absolute_path("missing")
        assert "missing" in str(caught.value)

    async def test_r119_exists_is_false_for_missing_paths(self, env: ExecutionEnv) -> None:
        await env.write_file("here.txt", "")
        assert await env.exists("here.txt")
        assert not await env.exists("gone.txt")
        assert not await env.exists("here.txt/below")

    async def test_r119_list_dir_gives_sorted_entries_with_kinds(self, env: ExecutionEnv) -> None:
        await env.write_file("b.txt", "")
        await env.create_dir("a")
        await env.exec(["ln", "-s", "b.txt", "c"])
        assert await env.list_dir(".") == [
            DirEntry("a", "directory"),
            DirEntry("b.txt", "file"),
            DirEntry("c", "symlink"),
        ]
        assert await code_of(env.list_dir("b.txt")) == "not_directory"
        assert await code_of(env.list_dir("nope")) == "not_found"

    async def test_r119_a_dir_reader_pages_through_every_entry_once(
        self, env: ExecutionEnv
    ) -> None:
        names = {f"f{i:02}" for i in range(23)}
        for name in names:
            await env.write_file(f"big/{name}", "")
        seen: list[str] = []
        async with await env.open_dir_reader("big", page_size=5) as reader:
            while page := await reader.read_page():
                assert 1 <= len(page) <= 5
                seen.extend(entry.name for entry in page)
        assert sorted(seen) == sorted(names)
        assert await code_of(env.open_dir_reader("absent")) == "not_found"


class ReadRules(EnvConformanceBase):
    """Text, line and byte reads (R119)."""

    async def test_r119_read_text_file_decodes_utf8(self, env: ExecutionEnv) -> None:
        await env.write_file("u.txt", "h\u00e9llo \u2603\n")
        assert await env.read_text_file("u.txt") == "h\u00e9llo \u2603\n"

    async def test_r119_invalid_utf8_fails_strict_and_is_replaced_on_request(
        self, env: ExecutionEnv
    ) -> None:
        await env.write_file("bad.txt", b"ok\xffok")
        with pytest.raises(FileError) as caught:
            await env.read_text_file("bad.txt")
        assert caught.value.code == "invalid"
        assert "UTF-8" in str(caught.value)
        assert await env.read_text_file("bad.txt", errors="replace") == "ok\ufffdok"

    async def test_r119_reading_a_directory_or_nothing_fails_with_its_code(
        self, env: ExecutionEnv
    ) -> None:
        await env.create_dir("d")
        assert await code_of(env.read_text_file("d")) == "is_directory"
        assert await code_of(env.read_binary_file("d")) == "is_directory"
        assert await code_of(env.read_text_file("none.txt")) == "not_found"

    async def test_r119_read_text_lines_stops_after_max_lines(self, env: ExecutionEnv) -> None:
        await env.write_file("l.txt", "one\ntwo\nthree\nfour\n")
        assert await env.read_text_lines("l.txt", max_lines=2) == ["one", "two"]
        assert await env.read_text_lines("l.txt", max_lines=10) == [
            "one",
            "two",
            "three",
            "four",
        ]
        await env.write_file("open.txt", "a\nb")
        assert await env.read_text_lines("open.txt", max_lines=5) == ["a", "b"]
        assert await env.read_text_lines("open.txt", max_lines=0) == []

    async def test_r119_read_binary_file_reads_all_or_the_first_bytes(
        self, env: ExecutionEnv
    ) -> None:
        data = bytes(range(256)) * 10
        await env.write_file("b.bin", data)
        assert await env.read_binary_file("b.bin") == data
        assert await env.read_binary_file("b.bin", max_bytes=8) == data[:8]
        assert await env.read_binary_file("b.bin", max_bytes=10_000) == data


class BinaryReaderRules(EnvConformanceBase):
    """``open_binary_reader``: positional reads, ``info``, ``scan_lines``, ``no_follow``."""

    async def test_r119_a_binary_reader_reads_at_offsets(self, env: ExecutionEnv) -> None:
        await env.write_file("r.bin", b"0123456789")
        async with await env.open_binary_reader("r.bin") as reader:
            assert reader.path == env.absolute_path("r.bin")
            assert await reader.read(3, 4) == b"3456"
            assert await reader.read(8, 10) == b"89"
            assert await reader.read(50, 10) == b""
            info = await reader.info()
            assert (info.kind, info.size) == ("file", 10)
        with pytest.raises(FileError) as caught:
            await reader.read(0, 1)
        assert caught.value.code == "invalid"

    async def test_r119_a_reader_keeps_reading_the_file_it_opened(self, env: ExecutionEnv) -> None:
        await env.write_file("swap.txt", "old content")
        async with await env.open_binary_reader("swap.txt") as reader:
            await env.write_file("swap.txt", "new")
            assert await reader.read(0, 100) == b"old content"

    async def test_r119_no_follow_refuses_a_final_symlink(self, env: ExecutionEnv) -> None:
        await env.write_file("t.txt", "x")
        await env.exec(["ln", "-s", "t.txt", "l.txt"])
        async with await env.open_binary_reader("l.txt") as reader:
            assert await reader.read(0, 1) == b"x"
        with pytest.raises(FileError) as caught:
            await env.open_binary_reader("l.txt", no_follow=True)
        assert caught.value.code == "invalid"
        assert await code_of(env.open_binary_reader(".")) == "is_directory"
        assert await code_of(env.open_binary_reader("none")) == "not_found"

    async def test_r119_scan_lines_selects_a_range_and_counts_every_line(
        self, env: ExecutionEnv
    ) -> None:
        await env.write_file("n.txt", "".join(f"line {i}\n" for i in range(1000)))
        async with await env.open_binary_reader("n.txt") as reader:
            scan = await reader.scan_lines(start_line=10, max_lines=3)
            assert scan.lines == [b"line 10", b"line 11", b"line 12"]
            assert (scan.start_line, scan.total_lines, scan.stopped) == (10, 1001, "lines")
            whole = await reader.scan_lines()
            assert len(whole.lines) == 1001
            assert whole.lines[-1] == b""
            assert whole.stopped == "end"
            beyond = await reader.scan_lines(start_line=5000)
            assert (beyond.lines, beyond.total_lines, beyond.stopped) == ([], 1001, "end")

    async def test_r119_scan_lines_stops_before_a_line_past_max_bytes(
        self, env: ExecutionEnv
    ) -> None:
        await env.write_file("w.txt", "aaaa\nbbbb\ncccc\n")
        async with await env.open_binary_reader("w.txt") as reader:
            scan = await reader.scan_lines(max_bytes=10)
            assert scan.lines == [b"aaaa", b"bbbb"]
            assert scan.stopped == "bytes"
            exact = await reader.scan_lines(max_bytes=9)
            assert exact.lines == [b"aaaa", b"bbbb"]

    async def test_r119_scan_lines_cuts_a_long_first_line_on_a_character(
        self, env: ExecutionEnv
    ) -> None:
        line = "\u00e9" * 100  # two bytes each
        await env.write_file("long.txt", line + "\nnext\n")
        async with await env.open_binary_reader("long.txt") as reader:
            scan = await reader.scan_lines(start_line=0, max_bytes=51)
            assert scan.lines == ["\u00e9".encode() * 25]
            assert scan.first_line_bytes == 200
            assert scan.stopped == "bytes"
            assert scan.total_lines == 3
