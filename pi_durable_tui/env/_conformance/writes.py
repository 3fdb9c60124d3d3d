"""Conformance tests of writing: atomic replace, append, truncate, rename, dirs, removal (R119)."""

from __future__ import annotations

import pytest

from pi_durable_tui.env._conformance.base import EnvConformanceBase
from pi_durable_tui.env._conformance.reads import code_of
from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._protocol import ExecutionEnv


class WriteRules(EnvConformanceBase):
    """``write_file``, ``append_file``, ``truncate_file``, ``flush_file``, ``rename_file``."""

    async def test_r119_write_file_creates_parents_and_replaces_content(
        self, env: ExecutionEnv
    ) -> None:
        await env.write_file("deep/er/f.txt", "first version, longer")
        await env.write_file("deep/er/f.txt", b"second")
        assert await env.read_text_file("deep/er/f.txt") == "second"

    async def test_r119_write_file_replaces_atomically_leaving_no_temp_files(
        self, env: ExecutionEnv
    ) -> None:
        for round_ in range(3):
            await env.write_file("a/f.txt", f"v{round_}")
        assert [entry.name for entry in await env.list_dir("a")] == ["f.txt"]

    async def test_r119_write_file_keeps_the_mode_of_an_existing_file(
        self, env: ExecutionEnv
    ) -> None:
        await env.write_file("run.sh", "#!/bin/sh\necho one\n")
        await env.exec(["chmod", "750", "run.sh"])
        await env.write_file("run.sh", "#!/bin/sh\necho two\n")
        code, out, _ = await self.run(env, ["find", "run.sh", "-perm", "750"])
        assert (code, out) == (0, "run.sh\n")
        code, out, _ = await self.run(env, ["./run.sh"])
        assert (code, out) == (0, "two\n")

    async def test_r119_write_file_through_a_symlink_keeps_the_link(
        self, env: ExecutionEnv
    ) -> None:
        await env.write_file("real.txt", "old")
        await env.exec(["ln", "-s", "real.txt", "link.txt"])
        await env.write_file("link.txt", "new")
        assert (await env.file_info("link.txt")).kind == "symlink"
        assert await env.read_text_file("real.txt") == "new"

    async def test_r119_write_file_refuses_a_directory(self, env: ExecutionEnv) -> None:
        await env.create_dir("d")
        assert await code_of(env.write_file("d", "x")) == "is_directory"
        await env.write_file("file", "x")
        assert await code_of(env.write_file("file/below.txt", "x")) == "not_directory"

    async def test_r119_append_file_creates_and_appends(self, env: ExecutionEnv) -> None:
        await env.append_file("logs/a.log", "one\n")
        await env.append_file("logs/a.log", b"two\n")
        assert await env.read_text_file("logs/a.log") == "one\ntwo\n"

    async def test_r119_truncate_file_cuts_and_extends_but_never_creates(
        self, env: ExecutionEnv
    ) -> None:
        await env.write_file("t.bin", b"abcdef")
        await env.truncate_file("t.bin", 2)
        assert await env.read_binary_file("t.bin") == b"ab"
        await env.truncate_file("t.bin", 4)
        assert await env.read_binary_file("t.bin") == b"ab\0\0"
        assert await code_of(env.truncate_file("new.bin", 0)) == "not_found"
        assert not await env.exists("new.bin")
        assert await code_of(env.truncate_file("t.bin", -1)) == "invalid"

    async def test_r119_flush_file_needs_an_existing_file(self, env: ExecutionEnv) -> None:
        await env.write_file("f.txt", "x")
        await env.flush_file("f.txt")
        assert await code_of(env.flush_file("none.txt")) == "not_found"

    async def test_r119_rename_file_replaces_the_target_and_names_the_source_on_failure(
        self, env: ExecutionEnv
    ) -> None:
        await env.write_file("from.txt", "moved")
        await env.write_file("to.txt", "replaced")
        await env.rename_file("from.txt", "to.txt")
        assert await env.read_text_file("to.txt") == "moved"
        assert not await env.exists("from.txt")
        with pytest.raises(FileError) as caught:
            await env.rename_file("ghost.txt", "to.txt")
        assert caught.value.code == "not_found"
        assert caught.value.path == env.absolute_path("ghost.txt")


class DirectoryRules(EnvConformanceBase):
    """``create_dir``, ``remove``, ``create_temp_dir`` and ``create_temp_file`` (R119)."""

    async def test_r119_create_dir_plain_and_recursive(self, env: ExecutionEnv) -> None:
        await env.create_dir("one")
        assert await code_of(env.create_dir("one")) == "already_exists"
        assert await code_of(env.create_dir("x/y")) == "not_found"
        await env.create_dir("x/y/z", recursive=True)
        await env.create_dir("x/y/z", recursive=True)
        assert (await env.file_info("x/y/z")).kind == "directory"

    async def test_r119_remove_files_links_and_directories(self, env: ExecutionEnv) -> None:
        await env.write_file("keep/target.txt", "x")
        await env.exec(["ln", "-s", "keep", "link"])
        await env.remove("link")
        assert await env.read_text_file("keep/target.txt") == "x"
        await env.create_dir("empty")
        await env.remove("empty")
        assert await code_of(env.remove("keep")) == "not_empty"
        await env.remove("keep", recursive=True)
        assert await env.list_dir(".") == []

    async def test_r119_remove_of_a_missing_path_fails_unless_forced(
        self, env: ExecutionEnv
    ) -> None:
        assert await code_of(env.remove("nothing")) == "not_found"
        await env.remove("nothing", force=True)
        await env.remove("no/such/tree", recursive=True, force=True)

    async def test_r119_temp_dirs_and_files_are_fresh_and_named_by_prefix(
        self, env: ExecutionEnv
    ) -> None:
        first = await env.create_temp_dir("conf-")
        second = await env.create_temp_dir("conf-")
        assert first != second
        assert first.rsplit("/", 1)[1].startswith("conf-")
        assert (await env.file_info(first)).kind == "directory"
        path = await env.create_temp_file(prefix="conf-", suffix=".txt")
        name = path.rsplit("/", 1)[1]
        assert name.startswith("conf-")
        assert name.endswith(".txt")
        assert (await env.file_info(path)).size == 0
        await env.remove(first)
        await env.remove(second)
        await env.remove(path)
