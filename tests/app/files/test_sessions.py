"""Where sessions live and how they are found (DESIGN.md section 5)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from pi_durable_tui.app import (
    NoSession,
    list_sessions,
    new_session_path,
    newest_session,
    sessions_dir,
)
from pi_durable_tui.app.files._sessions import write_title


def make_session(cwd: Path, name: str, store_bytes: bytes = b"x") -> Path:
    """A session directory with a chosen name (its timestamp decides the order)."""
    directory = sessions_dir(cwd) / name
    directory.mkdir(parents=True)
    store = directory / "session.sqlite"
    store.write_bytes(store_bytes)
    return store


def test_a_new_session_is_stored_under_the_hash_of_the_real_cwd_and_a_timestamped_name(
    home: Path, project: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link"
    link.symlink_to(project)

    store = new_session_path(link)

    key = hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:24]
    assert store.name == "session.sqlite"
    assert store.parent.parent == home / "sessions" / key
    assert re.fullmatch(r"\d{13}-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", store.parent.name)
    assert store.parent.is_dir()
    assert not store.exists()
    assert new_session_path(project).parent.parent == store.parent.parent  # same directory


def test_the_newest_session_is_the_latest_timestamp_among_directories_holding_a_store(
    home: Path, project: Path
) -> None:
    make_session(project, "1700000000000-00000000-0000-4000-8000-000000000001")
    newest = make_session(project, "1700000000002-00000000-0000-4000-8000-000000000002")
    make_session(project, "1700000000001-00000000-0000-4000-8000-000000000003")
    empty = newest.parent.parent / "1700000000009-00000000-0000-4000-8000-000000000004"
    empty.mkdir()  # killed before its store was created
    (newest.parent.parent / "notes").mkdir()  # not a session directory

    assert newest_session(project) == newest


def test_continuing_where_no_session_exists_names_the_real_directory(
    home: Path, project: Path, tmp_path: Path
) -> None:
    link = tmp_path / "elsewhere"
    link.symlink_to(project)

    with pytest.raises(NoSession) as caught:
        newest_session(link)

    assert str(caught.value) == f"No session exists for {project.resolve()}"


def test_the_listing_gives_each_session_newest_first_with_its_title_size_and_times(
    home: Path, project: Path
) -> None:
    older = make_session(project, "1700000000000-00000000-0000-4000-8000-000000000001", b"a" * 10)
    newer = make_session(project, "1700000000005-00000000-0000-4000-8000-000000000002", b"b" * 100)
    (newer.parent / "session.sqlite-wal").write_bytes(b"w" * 50)
    write_title(newer, "fix   the\nfailing test")
    write_title(newer, "a later prompt does not retitle it")
    os.utime(older, (1_700_000_100, 1_700_000_100))

    listed = list_sessions(project)

    assert [s.path for s in listed] == [newer, older]
    assert [s.title for s in listed] == ["fix the failing test", ""]
    assert listed[0].size_bytes == 100 + 50 + len("fix the failing test\n")
    assert listed[1].size_bytes == 10
    assert [s.created_ms for s in listed] == [1700000000005, 1700000000000]
    assert listed[1].last_activity_ms == 1_700_000_100_000


def test_sessions_of_other_directories_are_not_listed(home: Path, project: Path) -> None:
    other = project / "sub"
    other.mkdir()
    make_session(other, "1700000000000-00000000-0000-4000-8000-000000000001")

    assert list_sessions(project) == []
