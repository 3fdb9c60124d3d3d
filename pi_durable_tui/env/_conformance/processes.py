"""Conformance tests of ``exec``: shells and argv, exit codes, tags, cwd, variables (R120)."""

from __future__ import annotations

import math

import pytest

from pi_durable_tui.env._conformance.base import EnvConformanceBase
from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._protocol import ExecutionEnv


class ExecRules(EnvConformanceBase):
    """What a finished command returns and how it was started (R120)."""

    async def test_r120_a_string_runs_through_the_shell(self, env: ExecutionEnv) -> None:
        assert await self.run(env, "echo $((6 * 7)) | tr 4 x") == (0, "x2\n", "")

    async def test_r120_an_argv_runs_without_a_shell(self, env: ExecutionEnv) -> None:
        code, out, _ = await self.run(env, ["printf", "%s|%s", "$HOME", "a b"])
        assert (code, out) == (0, "$HOME|a b")

    async def test_r120_the_exit_code_comes_back(self, env: ExecutionEnv) -> None:
        assert (await env.exec("exit 3")).exit_code == 3
        assert (await env.exec(["false"])).exit_code == 1

    async def test_r120_a_signal_death_reports_128_plus_the_signal(self, env: ExecutionEnv) -> None:
        assert (await env.exec(["sh", "-c", "kill -9 $$"])).exit_code == 137

    async def test_r120_output_chunks_are_tagged_by_stream(self, env: ExecutionEnv) -> None:
        code, out, err = await self.run(env, "echo to-out; echo to-err >&2; echo again")
        assert (code, out, err) == (0, "to-out\nagain\n", "to-err\n")

    async def test_r120_stdin_is_empty(self, env: ExecutionEnv) -> None:
        assert await self.run(env, "cat; echo done") == (0, "done\n", "")

    async def test_r120_commands_run_in_cwd_or_the_given_directory(self, env: ExecutionEnv) -> None:
        await env.create_dir("sub")
        code, out, _ = await self.run(env, "pwd -P")
        assert (code, out.strip()) == (0, await env.canonical_path(env.cwd))
        code, out, _ = await self.run(env, "pwd -P", cwd="sub")
        assert (code, out.strip()) == (0, await env.canonical_path("sub"))

    async def test_r120_a_missing_working_directory_is_not_found(self, env: ExecutionEnv) -> None:
        with pytest.raises(FileError) as caught:
            await env.exec("true", cwd="nowhere")
        assert caught.value.code == "not_found"
        assert "nowhere" in str(caught.value)

    async def test_r120_a_missing_program_is_not_found(self, env: ExecutionEnv) -> None:
        with pytest.raises(FileError) as caught:
            await env.exec(["no-such-program-anywhere"])
        assert caught.value.code == "not_found"

    async def test_r120_explicit_variables_are_set_and_inheritance_can_be_off(
        self, env: ExecutionEnv
    ) -> None:
        script = 'printf "%s|%s" "$GREETING" "${HOME:-no home}"'
        code, out, _ = await self.run(env, ["sh", "-c", script], variables={"GREETING": "hi"})
        assert (code, out[:3]) == (0, "hi|")
        code, out, _ = await self.run(
            env, ["/bin/sh", "-c", script], variables={"GREETING": "hi"}, inherit_env=False
        )
        assert (code, out) == (0, "hi|no home")

    @pytest.mark.parametrize(
        ("timeout", "message"),
        [
            (math.inf, "Invalid timeout: must be a finite number of seconds"),
            (math.nan, "Invalid timeout: must be a finite number of seconds"),
            (2147483.648, "Invalid timeout: maximum is 2147483.647 seconds"),
        ],
    )
    async def test_r120_invalid_timeouts_are_refused(
        self, env: ExecutionEnv, timeout: float, message: str
    ) -> None:
        with pytest.raises(FileError) as caught:
            await env.exec("echo ran > ran.txt", timeout=timeout)
        assert (caught.value.code, str(caught.value)) == ("invalid", message)
        assert not await env.exists("ran.txt")
