"""``AgentApp``: opening and closing a session leave the store closed on every path."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

import pytest

from pi_durable_tui.app import (
    AgentApp,
    AppOptions,
    ModelChoiceError,
    SessionUnavailable,
    list_sessions,
    sessions_dir,
)
from pi_durable_tui.storage import SqliteStorage, StoreLocked
from tests.app.support import FAUX, text, write_script
from tests.deadlines import WAIT


async def assert_closed(store: Path) -> None:
    """The store's lock is free and the store opens (when it was created at all)."""
    if store.exists():
        storage = await SqliteStorage.open(store)
        await storage.close()


def open_files_of(store: Path) -> list[str]:
    """The files of ``store`` this process holds open (a connection nobody closed holds them)."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(str(store)):
                held.append(target)
    return held


async def test_a_cancellation_anywhere_in_opening_closes_what_was_opened(
    home: Path, project: Path
) -> None:
    script = str(write_script(project, text("x")))
    spins = 0
    while True:
        store = project / f"cancelled-after-{spins}.sqlite"
        options = AppOptions(cwd=str(project), session=str(store), model=FAUX, faux_script=script)
        opening = asyncio.ensure_future(AgentApp.open(options))
        for _ in range(spins):
            await asyncio.sleep(0)
        if opening.done():  # opened before this cancel point: every earlier point was tried
            await opening.result().close()
            break
        opening.cancel()
        await asyncio.wait({opening}, timeout=WAIT)

        assert opening.cancelled(), f"cancel after {spins} loop turns"
        assert open_files_of(store) == [], f"cancel after {spins} loop turns"
        await assert_closed(store)
        spins = spins * 2 or 1
    assert spins >= 8  # several cancel points were tried


async def test_a_session_open_elsewhere_is_refused_naming_the_store(
    home: Path, project: Path
) -> None:
    store = project / "held.sqlite"
    holder = await SqliteStorage.open(store)
    try:
        with pytest.raises(SessionUnavailable) as caught:
            await AgentApp.open(AppOptions(cwd=str(project), session=str(store)))
    finally:
        await holder.close()

    assert caught.value.store == store
    assert isinstance(caught.value.cause, StoreLocked)


async def test_closing_twice_closes_once_and_leaves_the_store_free(
    home: Path, project: Path
) -> None:
    store = project / "s.sqlite"
    app = await AgentApp.open(AppOptions(cwd=str(project), session=str(store)))

    await asyncio.gather(app.close(), app.close())
    await app.close()

    await assert_closed(store)


async def test_a_damaged_store_is_refused_and_left_as_it_was(home: Path, project: Path) -> None:
    store = project / "damaged.sqlite"
    store.write_bytes(b"not a database " * 100)

    with pytest.raises(SessionUnavailable, match="is damaged or not a SQLite database"):
        await AgentApp.open(AppOptions(cwd=str(project), session=str(store)))

    assert store.read_bytes() == b"not a database " * 100


async def test_a_new_session_that_cannot_start_leaves_no_directory_behind(
    home: Path, project: Path
) -> None:
    with pytest.raises(ModelChoiceError):
        await AgentApp.open(AppOptions(cwd=str(project), model="openai/nope"))

    assert list_sessions(project) == []
    assert not sessions_dir(project).exists()  # nor the empty directories above it


async def test_a_new_session_of_a_continued_faux_session_keeps_its_remembered_script(
    home: Path, project: Path
) -> None:
    """Issue 12: ``/new`` in a faux session failed with "no provider 'faux'"."""
    script = str(write_script(project, text("scripted answer")))
    first = await AgentApp.open(AppOptions(cwd=str(project), model=FAUX, faux_script=script))
    await first.close()
    continued = await AgentApp.open(AppOptions(cwd=str(project), continue_session=True))
    try:
        assert continued.options is not None
        assert continued.options.faux_script is None
        fresh = await continued.open_another(None, model=FAUX)
        try:
            assert fresh.store != continued.store
            assert fresh.models.get(FAUX) is not None
        finally:
            await fresh.close()
    finally:
        await continued.close()
