"""What only ``LocalEnv`` can show: the real home, umask, FIFOs, shells, SIGKILL, secrets.

The conformance suite (``test_conformance.py``) covers the protocol; these tests
check the local choices documented in ``pi_durable_tui/env/_local.py``,
``_files.py``, ``_groups.py`` and ``_secrets.py``.
"""

from __future__ import annotations

import asyncio
import gc
import os
import stat
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.env import FileError, LocalEnv, OutputWindow, SpillPolicy
from pi_durable_tui.env._local import find_shell
from pi_durable_tui.env._spill import SpillFile
from pi_durable_tui.env.conformance import Captured


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[LocalEnv]:
    environment = LocalEnv(str(tmp_path), kill_grace=0.1)
    yield environment
    await environment.cleanup()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def child_variable_names(env: LocalEnv) -> set[str]:
    captured = Captured()
    await env.exec(["env"], on_output=captured)
    return {line.split("=", 1)[0] for line in captured.text().splitlines()}


async def test_r119_tilde_is_the_users_home_unless_given(tmp_path: Path) -> None:
    assert LocalEnv(str(tmp_path)).absolute_path("~/x") == os.path.expanduser("~/x")
    assert LocalEnv(str(tmp_path), home="/srv/home").absolute_path("~") == "/srv/home"


async def test_r119_a_relative_cwd_resolves_against_the_process_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert LocalEnv("project").cwd == str(tmp_path / "project")


async def test_r119_a_new_file_gets_the_umask_mode_and_a_replaced_one_keeps_its_mode(
    env: LocalEnv, tmp_path: Path
) -> None:
    umask = os.umask(0o022)
    try:
        await env.write_file("new.txt", "x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644
    (tmp_path / "kept.sh").write_text("old")
    (tmp_path / "kept.sh").chmod(0o4751)
    await env.write_file("kept.sh", "new")
    assert stat.S_IMODE((tmp_path / "kept.sh").stat().st_mode) == 0o4751


async def test_r119_reading_a_fifo_is_refused_instead_of_blocking(
    env: LocalEnv, tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(FileError) as caught:
        await env.read_text_file("pipe")
    assert caught.value.code == "not_supported"
    assert (await env.file_info("pipe")).kind == "other"


def test_r120_without_bash_a_string_runs_through_sh_on_path(tmp_path: Path) -> None:
    (tmp_path / "sh").symlink_to("/bin/sh")
    assert find_shell(str(tmp_path), candidates=()) == [str(tmp_path / "sh"), "-c"]
    assert find_shell(None)[0].endswith("bash")


def test_r120_with_no_shell_at_all_exec_says_shell_unavailable(tmp_path: Path) -> None:
    with pytest.raises(FileError) as caught:
        find_shell(str(tmp_path), candidates=())
    assert caught.value.code == "shell_unavailable"


async def test_r120_a_group_that_ignores_sigterm_is_killed_after_the_grace(
    env: LocalEnv,
) -> None:
    captured = Captured()
    with pytest.raises(FileError) as caught:
        await env.exec("trap '' TERM; sleep 30 & echo $!; wait", timeout=0.2, on_output=captured)
    assert caught.value.code == "timeout"
    assert not alive(int(captured.first_line()))


async def test_r120_finished_commands_leave_no_popen_warnings(env: LocalEnv) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            await env.exec(["true"])
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


async def test_r120_cleanup_twice_is_harmless(env: LocalEnv) -> None:
    await env.exec("sleep 30 &")
    await env.cleanup()
    await env.cleanup()


async def test_inherited_secrets_are_scrubbed_and_plain_variables_kept(
    env: LocalEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_PLAIN", "visible")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp")
    names = await child_variable_names(env)
    assert "LOCAL_PLAIN" in names
    assert "PATH" in names
    assert names.isdisjoint({"OPENAI_API_KEY", "GITHUB_TOKEN"})


async def test_allow_env_lets_named_and_globbed_secrets_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp")
    monkeypatch.setenv("GITLAB_TOKEN", "glp")
    monkeypatch.setenv("NPM_TOKEN", "npm")
    env = LocalEnv(str(tmp_path), allow_env=["GITHUB_TOKEN", "GITLAB_*"])
    names = await child_variable_names(env)
    assert {"GITHUB_TOKEN", "GITLAB_TOKEN"} <= names
    assert "NPM_TOKEN" not in names


async def test_an_explicit_environ_replaces_the_process_environment(tmp_path: Path) -> None:
    env = LocalEnv(str(tmp_path), environ={"ONLY": "1", "SOME_SECRET": "s", "PATH": "/bin"})
    assert env.child_environment({"EXTRA": "2"}) == {"ONLY": "1", "PATH": "/bin", "EXTRA": "2"}
    assert env.child_environment(inherit_env=False) == {}


async def test_r120_a_finished_background_process_is_reaped_by_the_next_command(
    tmp_path: Path,
) -> None:
    captured = Captured()
    await LocalEnv(str(tmp_path)).exec("sleep 0.2 >/dev/null 2>&1 & echo $!", on_output=captured)
    pid = int(captured.first_line())
    while (
        os.path.exists(f"/proc/{pid}") and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    ):
        await asyncio.sleep(0.01)
    await LocalEnv(str(tmp_path)).exec(["true"])
    assert not alive(pid)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"window": OutputWindow(-1, 10)}, "OutputWindow.max_bytes must be at least 0"),
        ({"spill": SpillPolicy(10, -1)}, "SpillPolicy thresholds must be at least 0"),
        ({"command": []}, "Cannot run an empty argv"),
    ],
)
async def test_r120_bad_exec_options_fail_before_anything_runs(
    env: LocalEnv, tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    command = options.pop("command", "echo ran > ran.txt")
    with pytest.raises(FileError, match=message) as caught:
        await env.exec(command, **options)
    assert caught.value.code == "invalid"
    assert not (tmp_path / "ran.txt").exists()


async def test_a_spill_file_never_holds_a_secret_of_this_process(
    tmp_path: Path,
) -> None:
    canary = "sk-canary-0123456789abcdef"
    env = LocalEnv(str(tmp_path), environ={"PATH": os.environ["PATH"], "MY_API_KEY": canary})
    (tmp_path / "out.txt").write_text(("x" * 4093 + canary + "\n") * 64)
    result = await env.exec("cat out.txt", spill=SpillPolicy(after_bytes=100, after_lines=5))
    assert result.spill_path is not None
    spilled = Path(result.spill_path).read_bytes()
    assert canary.encode() not in spilled
    assert spilled.count(b"[redacted]") == 64


def test_a_secret_cut_by_a_chunk_boundary_is_still_redacted_in_the_spill_file(
    tmp_path: Path,
) -> None:
    secret = b"sk-canary-0123456789abcdef"
    spill = SpillFile(SpillPolicy(after_bytes=0, after_lines=0), str(tmp_path), [secret])
    for cut in range(1, len(secret)):
        spill.feed(b"<" + secret[:cut], 0)
        spill.feed(secret[cut:] + b">\n", 1)
    spill.close()
    assert spill.path is not None
    written = Path(spill.path).read_bytes()
    assert written == b"<[redacted]>\n" * (len(secret) - 1)
