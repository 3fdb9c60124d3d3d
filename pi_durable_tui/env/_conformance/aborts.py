"""Conformance tests of abort signals that are already set (R119): no effect, code ``aborted``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from pi_durable_tui.env._conformance.base import EnvConformanceBase
from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._protocol import ExecutionEnv

Operation = Callable[[ExecutionEnv, asyncio.Event], Awaitable[object]]

# Each operation targets files the test prepared: ``old.txt`` (content "old"), the
# directory ``dir`` with ``dir/inner.txt``; after the abort nothing may have changed.
OPERATIONS: dict[str, Operation] = {
    "canonical_path": lambda env, abort: env.canonical_path("old.txt", abort=abort),
    "file_info": lambda env, abort: env.file_info("old.txt", abort=abort),
    "exists": lambda env, abort: env.exists("old.txt", abort=abort),
    "list_dir": lambda env, abort: env.list_dir("dir", abort=abort),
    "open_dir_reader": lambda env, abort: env.open_dir_reader("dir", abort=abort),
    "read_text_file": lambda env, abort: env.read_text_file("old.txt", abort=abort),
    "read_text_lines": lambda env, abort: env.read_text_lines("old.txt", max_lines=1, abort=abort),
    "read_binary_file": lambda env, abort: env.read_binary_file("old.txt", abort=abort),
    "open_binary_reader": lambda env, abort: env.open_binary_reader("old.txt", abort=abort),
    "write_file": lambda env, abort: env.write_file("old.txt", "new", abort=abort),
    "write_file_new": lambda env, abort: env.write_file("new/x.txt", "new", abort=abort),
    "append_file": lambda env, abort: env.append_file("old.txt", "more", abort=abort),
    "truncate_file": lambda env, abort: env.truncate_file("old.txt", 0, abort=abort),
    "flush_file": lambda env, abort: env.flush_file("old.txt", abort=abort),
    "rename_file": lambda env, abort: env.rename_file("old.txt", "moved.txt", abort=abort),
    "create_dir": lambda env, abort: env.create_dir("made", abort=abort),
    "remove": lambda env, abort: env.remove("dir", recursive=True, abort=abort),
    "create_temp_dir": lambda env, abort: env.create_temp_dir(abort=abort),
    "create_temp_file": lambda env, abort: env.create_temp_file(abort=abort),
    "exec": lambda env, abort: env.exec("echo ran > ran.txt", abort=abort),
}


class AbortRules(EnvConformanceBase):
    """Every operation given a set abort signal raises ``aborted`` and changes nothing."""

    @pytest.mark.parametrize("name", sorted(OPERATIONS))
    async def test_r119_an_already_aborted_operation_fails_without_side_effects(
        self, env: ExecutionEnv, name: str
    ) -> None:
        await env.write_file("old.txt", "old")
        await env.write_file("dir/inner.txt", "inner")
        before = await env.list_dir(".")
        abort = asyncio.Event()
        abort.set()
        with pytest.raises(FileError) as caught:
            await OPERATIONS[name](env, abort)
        assert caught.value.code == "aborted"
        assert await env.list_dir(".") == before
        assert await env.read_text_file("old.txt") == "old"
        assert await env.list_dir("dir") != []
