"""Conformance tests of path resolution (R119): ``~``, ``file://``, relative, canonical."""

from __future__ import annotations

import pytest

from pi_durable_tui.env._conformance.base import EnvConformanceBase
from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._protocol import ExecutionEnv


class PathRules(EnvConformanceBase):
    """How every operation resolves the paths it is given (R119)."""

    async def test_r119_relative_paths_resolve_against_cwd(self, env: ExecutionEnv) -> None:
        assert env.absolute_path("a/b.txt") == env.join_path(env.cwd, "a", "b.txt")
        assert env.absolute_path("a/../c") == env.join_path(env.cwd, "c")
        assert env.absolute_path(".") == env.cwd
        await env.write_file("rel.txt", "x")
        assert await env.read_text_file(env.join_path(env.cwd, "rel.txt")) == "x"

    async def test_r119_absolute_paths_are_normalized_not_moved(self, env: ExecutionEnv) -> None:
        assert env.absolute_path("/x/./y//z/../w") == "/x/y/w"

    async def test_r119_tilde_means_the_home_directory(self, env: ExecutionEnv) -> None:
        home = env.absolute_path("~")
        assert home.startswith("/")
        assert home != env.cwd
        assert env.absolute_path("~/notes/a.md") == env.join_path(home, "notes", "a.md")
        assert env.absolute_path("~other") == env.join_path(env.cwd, "~other")

    async def test_r119_file_urls_resolve_to_their_decoded_path(self, env: ExecutionEnv) -> None:
        target = env.join_path(env.cwd, "with space.txt")
        await env.write_file(target, "url")
        url = "file://" + target.replace(" ", "%20")
        assert env.absolute_path(url) == target
        assert env.absolute_path("file://localhost" + target) == target
        assert await env.read_text_file(url) == "url"

    async def test_r119_bad_paths_fail_with_invalid(self, env: ExecutionEnv) -> None:
        with pytest.raises(FileError) as caught:
            await env.read_text_file("a\0b")
        assert caught.value.code == "invalid"
        with pytest.raises(FileError) as caught:
            env.absolute_path("file://elsewhere/etc/passwd")
        assert caught.value.code == "invalid"

    async def test_r119_canonical_path_resolves_symlinks_and_needs_the_file(
        self, env: ExecutionEnv
    ) -> None:
        await env.write_file("real/file.txt", "x")
        await env.exec(["ln", "-s", "real", "link"])
        canonical = await env.canonical_path("link/file.txt")
        assert canonical == await env.canonical_path("real/file.txt")
        assert canonical.endswith("/real/file.txt")
        with pytest.raises(FileError) as caught:
            await env.canonical_path("missing.txt")
        assert caught.value.code == "not_found"

    async def test_r121_env_id_is_a_stable_nonempty_string(self, env: ExecutionEnv) -> None:
        assert isinstance(env.id, str)
        assert env.id
        assert env.id == env.id
