"""``write`` and ``edit`` stay inside the workspace, even while a link is swapped (issue 13).

The tools run through a real harness on ``LocalEnv``; a thread swaps links
(``sub``: a directory link, ``file.txt``: a file link) between a target inside
and one outside for as long as the calls run, at least ``SWAPS`` times. Every
call either changes a file inside or is refused naming its path; nothing
outside changes and no temp file is left anywhere.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.harness import TOOL_RESULT
from pi_durable_tui.tools import CodingTools
from tests.harness.run_support import RigFactory, message, within

SWAPS = 200
CALLS_PER_ROUND = 25


class Swapper(threading.Thread):
    """Swaps ``link`` between two targets with an atomic rename until stopped."""

    def __init__(self, links: dict[Path, tuple[str, str]]) -> None:
        super().__init__(daemon=True)
        self.links = links
        self.swaps = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            for link, targets in self.links.items():
                for target in targets:
                    spare = link.with_name(link.name + ".new")
                    os.symlink(target, spare)
                    os.replace(spare, link)
            self.swaps += 2


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "real.txt").write_text("outside\n")
    return directory


@pytest.fixture
def swapper(workdir: Path, outside: Path) -> Iterator[Swapper]:
    (workdir / "inside").mkdir()
    (workdir / "inside" / "real.txt").write_text("inside\n")
    thread = Swapper(
        {
            workdir / "sub": ("inside", str(outside)),
            workdir / "file.txt": ("inside/real.txt", str(outside / "real.txt")),
        }
    )
    thread.start()
    yield thread
    thread.stopped.set()
    thread.join()


def calls(round_: int) -> list[Any]:
    """One round: writes through both links and edits (there and back) through the file link.

    The edits match the inside and the outside file alike (``side``), so an edit that
    read through the link while it pointed out would write outside if it could.
    """
    made: list[Any] = []
    for n in range(CALLS_PER_ROUND):
        made.append(faux_tool_call("write", {"path": "sub/f.txt", "content": f"{round_}.{n}\n"}))
        made.append(faux_tool_call("write", {"path": "file.txt", "content": "inside\n"}))
        for old, new in (("side", "SIDE"), ("SIDE", "side")):
            edit = {"path": "file.txt", "edits": [{"oldText": old, "newText": new}]}
            made.append(faux_tool_call("edit", edit))
    return made


async def test_a_swapped_link_never_lets_a_write_or_an_edit_land_outside(
    open_rig: RigFactory, workdir: Path, outside: Path, swapper: Swapper
) -> None:
    rounds = SWAPS // CALLS_PER_ROUND
    responses = [faux_response(*calls(r)) for r in range(rounds)]
    rig = await open_rig(
        *responses, faux_response("done"), extensions=[CodingTools], workdir=workdir
    )
    handle = await within(rig.root.submit("go"))
    record = await within(handle.wait())
    assert record.status == "done"
    swapper.stopped.set()
    swapper.join()
    assert swapper.swaps >= SWAPS
    results = [message(e) for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert len(results) == 4 * rounds * CALLS_PER_ROUND
    for failed in (r for r in results if r["is_error"]):
        text = failed["content"][0]["text"]
        # a refusal naming the path, or an edit whose text the swap had just changed
        assert "Refusing to" in text or "Could not find the exact text" in text, text
    assert any(not r["is_error"] for r in results)
    assert sorted(p.name for p in outside.iterdir()) == ["real.txt"]
    assert (outside / "real.txt").read_text() == "outside\n"
    assert [str(p) for root in (workdir, outside) for p in root.rglob("*.tmp")] == []
