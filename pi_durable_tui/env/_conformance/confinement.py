"""Conformance tests of confined writes: ``write_file(..., beneath=cwd)`` (issue 13, R119).

Every route out of the working directory the issue found is a case: a path
outside, a dangling link out, a link to a directory or a file outside, a
relative link climbing out, and a link swapped back and forth (by a shell loop
inside the environment, at least ``SWAPS`` times) while writes and
read-modify-writes run. Each ends in ``permission_denied`` naming the path,
nothing outside changes, and no temp file stays anywhere. Links inside that
point inside keep working.
"""

from __future__ import annotations

import asyncio

import pytest

from pi_durable_tui.env._conformance.base import EnvConformanceBase
from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._protocol import ExecutionEnv

SWAPS = 200
"""How many times the racing case swaps a link, at least, while it writes."""

SWAP_LOOP = """
out="$1"; i=0
while [ ! -e stop ]; do
  ln -s "$out" sub.new && mv -Tf sub.new sub
  ln -s inside sub.new && mv -Tf sub.new sub
  ln -s "$out/real.txt" file.new && mv -Tf file.new file.txt
  ln -s inside/real.txt file.new && mv -Tf file.new file.txt
  i=$((i+2)); echo "$i" > count.new && mv -f count.new count
done
"""
"""Swaps ``sub`` (a directory link) and ``file.txt`` (a file link) between inside and out."""


async def refusal(env: ExecutionEnv, path: str, content: str = "x") -> FileError:
    """The error of a confined write of ``path`` that must be refused."""
    with pytest.raises(FileError) as caught:
        await env.write_file(path, content, beneath=env.cwd)
    return caught.value


class ConfinementRules(EnvConformanceBase):
    """``write_file(beneath=...)``: one operation that no link leads out of (issue 13)."""

    @pytest.fixture
    async def outside(self, env: ExecutionEnv) -> str:
        """A directory outside the working directory holding ``real.txt`` (``outside``)."""
        directory = await env.create_temp_dir("outside-")
        await env.write_file(env.join_path(directory, "real.txt"), "outside")
        return directory

    async def names_below(self, env: ExecutionEnv, directory: str) -> list[str]:
        """Every path under ``directory`` (``find``), relative to it, sorted."""
        script = 'cd "$1" && find . -mindepth 1 | sort'
        code, out, _ = await self.run(env, ["sh", "-c", script, "sh", directory])
        assert code == 0
        return [line.removeprefix("./") for line in out.splitlines()]

    async def assert_outside_untouched(self, env: ExecutionEnv, outside: str) -> None:
        """Nothing but ``real.txt`` with its first content is outside; no temp file here."""
        assert await self.names_below(env, outside) == ["real.txt"]
        assert await env.read_text_file(env.join_path(outside, "real.txt")) == "outside"
        assert [
            name for name in await self.names_below(env, env.cwd) if name.endswith(".tmp")
        ] == []

    async def test_a_path_outside_the_root_is_refused_naming_it(
        self, env: ExecutionEnv, outside: str
    ) -> None:
        target = env.join_path(outside, "new", "f.txt")
        error = await refusal(env, target)
        assert (error.code, error.path) == ("permission_denied", target)
        assert target in error.message
        await refusal(env, "../" + outside.rsplit("/", 1)[1] + "/real.txt")
        await self.assert_outside_untouched(env, outside)

    async def test_a_dangling_link_out_is_refused_and_creates_nothing(
        self, env: ExecutionEnv, outside: str
    ) -> None:
        await env.exec(["ln", "-s", env.join_path(outside, "made", "new.txt"), "dangling"])
        error = await refusal(env, "dangling")
        assert error.code == "permission_denied"
        assert env.absolute_path("dangling") in error.message
        await self.assert_outside_untouched(env, outside)

    async def test_a_link_to_a_directory_or_file_outside_is_refused(
        self, env: ExecutionEnv, outside: str
    ) -> None:
        await env.exec(["ln", "-s", outside, "out"])
        await env.exec(["ln", "-s", env.join_path(outside, "real.txt"), "file.txt"])
        for path in ("out/f.txt", "out/deep/er/f.txt", "out/real.txt", "file.txt"):
            assert (await refusal(env, path)).code == "permission_denied"
        await self.assert_outside_untouched(env, outside)

    async def test_a_relative_link_climbing_out_is_refused(
        self, env: ExecutionEnv, outside: str
    ) -> None:
        await env.create_dir("a")
        up = "../" * (env.cwd.count("/") + 1) + outside.lstrip("/")
        await env.exec(["ln", "-s", up, "a/up"])
        await env.exec(["ln", "-s", "../..", "a/above"])
        assert (await refusal(env, "a/up/real.txt")).code == "permission_denied"
        assert (await refusal(env, "a/above/x.txt")).code == "permission_denied"
        await self.assert_outside_untouched(env, outside)

    async def test_links_inside_pointing_inside_stay_usable(self, env: ExecutionEnv) -> None:
        await env.write_file("real/f.txt", "old")
        await env.exec(["ln", "-s", "real", "rel"])
        await env.exec(["ln", "-s", env.join_path(env.cwd, "real"), "abs"])
        await env.exec(["ln", "-s", "real/f.txt", "flink"])
        await env.exec(["ln", "-s", "made.txt", "pending"])
        await env.write_file("rel/a/b.txt", "one", beneath=env.cwd)
        await env.write_file("abs/c.txt", "two", beneath=env.cwd)
        await env.write_file("flink", "new", beneath=env.cwd)
        await env.write_file("pending", "three", beneath=env.cwd)
        await env.write_file("rel/../real/d.txt", "four", beneath=env.cwd)
        assert await env.read_text_file("real/a/b.txt") == "one"
        assert await env.read_text_file("real/c.txt") == "two"
        assert await env.read_text_file("real/f.txt") == "new"
        assert (await env.file_info("flink")).kind == "symlink"
        assert await env.read_text_file("made.txt") == "three"
        assert await env.read_text_file("real/d.txt") == "four"

    async def test_confined_writes_keep_the_rules_of_ordinary_writes(
        self, env: ExecutionEnv
    ) -> None:
        await env.write_file("deep/er/f.txt", "first", beneath=env.cwd)
        await env.exec(["chmod", "750", "deep/er/f.txt"])
        await env.write_file("deep/er/f.txt", "second", beneath=env.cwd)
        assert await env.read_text_file("deep/er/f.txt") == "second"
        code, out, _ = await self.run(env, ["find", "deep/er/f.txt", "-perm", "750"])
        assert (code, out) == (0, "deep/er/f.txt\n"), (
            code,
            out,
            await self.run(env, ["ls", "-la", "deep/er"]),
        )
        assert [e.name for e in await env.list_dir("deep/er")] == ["f.txt"]
        assert (await refusal(env, "deep")).code == "is_directory"
        assert (await refusal(env, ".")).code == "is_directory"
        assert (await refusal(env, "deep/er/f.txt/x")).code == "not_directory"

    async def test_a_link_swapped_during_writes_never_lets_one_land_outside(
        self, env: ExecutionEnv, outside: str
    ) -> None:
        await env.write_file("inside/real.txt", "inside")
        await env.exec(["ln", "-s", "inside", "sub"])
        await env.exec(["ln", "-s", "inside/real.txt", "file.txt"])
        swapper = asyncio.create_task(env.exec(["sh", "-c", SWAP_LOOP, "sh", outside]))
        codes: list[str] = []
        written = refused = rounds = 0
        swaps = 0
        try:
            while swaps < SWAPS or rounds < SWAPS:
                rounds += 1
                for path in ("sub/f.txt", "file.txt"):
                    try:
                        await env.write_file(path, f"w{rounds}", beneath=env.cwd)
                        written += 1
                    except FileError as error:
                        codes.append(error.code)
                        refused += 1
                try:  # a read-modify-write, as ``edit`` does it
                    old = await env.read_text_file("inside/real.txt")
                    await env.write_file("file.txt", old + "+", beneath=env.cwd)
                    written += 1
                except FileError as error:
                    codes.append(error.code)
                    refused += 1
                if await env.exists("count"):
                    swaps = int((await env.read_text_file("count")).strip() or 0)
        finally:
            await env.write_file("stop", "")
            await asyncio.wait_for(swapper, 60)
        assert swaps >= SWAPS
        assert set(codes) <= {"permission_denied"}, codes
        assert written > 0
        await self.assert_outside_untouched(env, outside)
