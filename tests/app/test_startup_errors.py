"""Problems that stop the app from starting are one line saying what is wrong and what to do."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from pi_durable_tui.ai import FauxScriptError
from pi_durable_tui.app import (
    ModelChoiceError,
    NoSession,
    SessionUnavailable,
    SettingsError,
    describe_startup_error,
)
from pi_durable_tui.kernel import SessionFailed
from pi_durable_tui.storage import StorageCorrupted, StoreLocked, UnsupportedSchema


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "session.sqlite"


def test_a_locked_store_names_the_store_and_the_pid_its_lock_file_holds(store: Path) -> None:
    store.with_name("session.sqlite.lock").write_text("4242\n")
    error = SessionUnavailable(store, StoreLocked(f"Session is already open: {store}"))

    assert describe_startup_error(error) == (
        f"the session {store} is open in process 4242; close that pidurable first, "
        "or start a new session (run without -c and --session)"
    )


def test_a_locked_store_without_a_readable_pid_says_another_process(store: Path) -> None:
    error = SessionUnavailable(store, StoreLocked("locked"))

    assert f"the session {store} is open in another process;" in str(describe_startup_error(error))


def test_a_damaged_store_message_names_the_store_and_how_to_go_on(store: Path) -> None:
    error = SessionUnavailable(store, StorageCorrupted("Durable SQLite metadata is missing"))

    assert describe_startup_error(error) == (
        f"the session store {store} is damaged: Durable SQLite metadata is missing; "
        "move it aside and start a new session, or restore it from a backup"
    )


def test_a_damaged_store_message_that_already_says_everything_is_kept_as_it_is(
    store: Path,
) -> None:
    text = f"SQLite store {store} is damaged (x); move it aside and start a new session"

    assert describe_startup_error(SessionUnavailable(store, StorageCorrupted(text))) == text


def test_another_storage_problem_names_the_store(store: Path) -> None:
    error = SessionUnavailable(store, UnsupportedSchema("written by a newer pidurable"))

    assert describe_startup_error(error) == (
        f"cannot open the session store {store}: written by a newer pidurable"
    )


@pytest.mark.parametrize(
    "error",
    [
        SettingsError("/p/.pidurable/settings.json: retry: bad"),
        FauxScriptError("s.json", "responses[0]", "expected an object"),
        ModelChoiceError("Unknown model a/b"),
    ],
)
def test_settings_script_and_model_problems_are_their_own_message(error: Exception) -> None:
    assert describe_startup_error(error) == str(error)


def test_no_session_to_continue_says_how_to_start_one() -> None:
    error = NoSession(f"No session exists for {os.getcwd()}")

    assert describe_startup_error(error) == f'{error}; start one with: pidurable -p "..."'


@pytest.mark.parametrize("error", [ValueError("a bug"), RuntimeError("another"), KeyError("k")])
def test_anything_else_is_a_bug_that_keeps_its_traceback(error: Exception) -> None:
    assert describe_startup_error(error) is None


def test_a_store_that_failed_under_a_screen_for_another_reason_names_the_innermost_error(
    store: Path,
) -> None:
    from pi_durable_tui.app._startup_errors import describe_store_failure

    error = SessionFailed(sqlite3.DatabaseError("disk I/O error"))

    assert describe_store_failure(error, store, str(store), "pidurable -c") == (
        f"writing the session store {store} failed (DatabaseError: disk I/O error); nothing "
        "committed was lost: quit, then `pidurable -c` continues the session"
    )
