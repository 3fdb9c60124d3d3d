"""Conformance tests of large output: spill files and tail windows (R120, R105)."""

from __future__ import annotations

import pytest

from pi_durable_tui.env._conformance.base import Captured, EnvConformanceBase
from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._protocol import ExecutionEnv
from pi_durable_tui.env._types import OutputWindow, SpillPolicy


def numbers(count: int) -> str:
    """An awk program printing ``count`` numbered lines."""
    return f"awk 'BEGIN {{ for (i = 0; i < {count}; i++) print i }}'"


def expected_numbers(count: int) -> bytes:
    """What ``numbers(count)`` prints, in order."""
    return "".join(f"{i}\n" for i in range(count)).encode()


class SpillRules(EnvConformanceBase):
    """The complete output goes to a ``pi-output-`` file once it crosses a threshold (R120)."""

    async def test_r120_output_past_the_byte_threshold_spills_whole(
        self, env: ExecutionEnv
    ) -> None:
        result = await env.exec(numbers(5000), spill=SpillPolicy(1000, 1_000_000))
        assert result.spill_path is not None
        assert result.spill_path.rsplit("/", 1)[1].startswith("pi-output-")
        assert await env.read_binary_file(result.spill_path) == expected_numbers(5000)
        await env.remove(result.spill_path)

    async def test_r120_output_past_the_line_threshold_spills(self, env: ExecutionEnv) -> None:
        below = await env.exec("printf 'a\\nb\\nc'", spill=SpillPolicy(1000, 3))
        assert below.spill_path is None
        above = await env.exec("printf 'a\\nb\\nc\\nd'", spill=SpillPolicy(1000, 3))
        assert above.spill_path is not None
        assert await env.read_text_file(above.spill_path) == "a\nb\nc\nd"
        await env.remove(above.spill_path)

    async def test_r120_the_spill_file_interleaves_both_streams_and_callbacks_still_run(
        self, env: ExecutionEnv
    ) -> None:
        captured = Captured()
        result = await env.exec(
            "echo out; sleep 0.05; echo err >&2; sleep 0.05; echo out2",
            spill=SpillPolicy(0, 0),
            on_output=captured,
        )
        assert result.spill_path is not None
        assert await env.read_text_file(result.spill_path) == "out\nerr\nout2\n"
        assert captured.text("stdout") == "out\nout2\n"
        await env.remove(result.spill_path)

    async def test_r120_a_timed_out_command_reports_its_spill_file(self, env: ExecutionEnv) -> None:
        with pytest.raises(FileError) as caught:
            await env.exec(numbers(3000) + "; sleep 30", timeout=0.3, spill=SpillPolicy(100, 10))
        assert caught.value.code == "timeout"
        assert caught.value.spill_path is not None
        assert await env.read_binary_file(caught.value.spill_path) == expected_numbers(3000)
        await env.remove(caught.value.spill_path)


class WindowRules(EnvConformanceBase):
    """A tail window skips output the tail cannot keep, with exact totals (R105)."""

    async def test_r105_skipped_and_delivered_output_add_up_to_every_byte_and_line(
        self, env: ExecutionEnv
    ) -> None:
        count = 200_000
        captured = Captured()
        window = OutputWindow(max_bytes=1000, max_lines=10, min_interval_ms=50)
        result = await env.exec(numbers(count), window=window, on_output=captured)
        assert result.exit_code == 0
        expected = expected_numbers(count)
        delivered = sum(len(chunk) for _, chunk, _ in captured.chunks)
        skipped_bytes = sum(s.byte_count for _, _, s in captured.chunks if s is not None)
        skipped_lines = sum(s.line_count for _, _, s in captured.chunks if s is not None)
        delivered_lines = sum(chunk.count(b"\n") for _, chunk, _ in captured.chunks)
        assert delivered + skipped_bytes == len(expected)
        assert delivered_lines + skipped_lines == count
        assert delivered < len(expected) // 10, "the window skipped nothing"
        last_skip = max(i for i, (_, _, s) in enumerate(captured.chunks) if s is not None)
        since_skip = b"".join(chunk for _, chunk, _ in captured.chunks[last_skip:])
        assert since_skip.split(b"\n")[-11:] == expected.split(b"\n")[-11:]

    async def test_r105_small_output_under_a_window_arrives_whole(self, env: ExecutionEnv) -> None:
        captured = Captured()
        window = OutputWindow(max_bytes=1000, max_lines=10)
        await env.exec("echo one; echo two >&2", window=window, on_output=captured)
        assert captured.text() in ("one\ntwo\n", "two\none\n")
        assert all(skipped is None for _, _, skipped in captured.chunks)
