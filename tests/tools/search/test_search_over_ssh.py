"""The search engines through ``SshEnv`` against a real ``sshd``: the same answers as locally."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.env import LocalEnv
from pi_durable_tui.env.ssh import SshEnv
from pi_durable_tui.tools.search import (
    AutoEngine,
    FileCollector,
    GrepQuery,
    LineCollector,
    RipgrepEngine,
    SearchEngine,
    WalkEngine,
    run_until_stopped,
)
from tests.env.sshd_server import Sshd


@pytest.mark.parametrize("engine", [RipgrepEngine(), WalkEngine()], ids=["rg", "walk"])
async def test_an_engine_over_ssh_answers_as_it_does_locally(
    ssh_client: Sshd, tmp_path: Path, engine: SearchEngine
) -> None:
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def a():\n    pass\n")
    (tmp_path / "x.log").write_text("def no():\n")
    if isinstance(engine, RipgrepEngine) and not await RipgrepEngine.available(
        LocalEnv(str(tmp_path))
    ):
        pytest.skip("rg is not installed")
    remote = await SshEnv.connect(ssh_client.url(str(tmp_path)))
    try:
        files = FileCollector(lambda _: True, 100)
        await run_until_stopped(engine.files(remote, str(tmp_path), files))
        lines = LineCollector(100, 0)
        await run_until_stopped(
            engine.grep(remote, GrepQuery(pattern="def", root=str(tmp_path)), lines)
        )
    finally:
        await remote.close()

    assert files.result().paths == (".gitignore", "src/a.py")
    assert [(line.path, line.number) for line in lines.result().lines] == [("src/a.py", 1)]


async def test_the_automatic_engine_asks_each_environment_once(tmp_path: Path) -> None:
    auto = AutoEngine()
    env = LocalEnv(str(tmp_path))

    first = await auto.choose(env)

    assert first is await auto.choose(env)
    assert first.name == ("rg" if await RipgrepEngine.available(env) else "walk")
