"""Settings files: user and project merged key by key, validated, re-read when they change (R34)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_durable_tui.app import SettingsError, SettingsFiles, load_settings
from tests.app.support import trust_settings, write_settings


@pytest.fixture
def user_file(home: Path) -> Path:
    return home / "settings.json"


@pytest.fixture
def project_file(project: Path) -> Path:
    return project / ".pidurable" / "settings.json"


def test_no_settings_files_give_the_reference_defaults(home: Path, project: Path) -> None:
    settings = load_settings(project)

    assert settings.model is None
    assert settings.retry.max_retries == 3
    assert settings.harness_settings().compaction.keep_recent_tokens == 20000


def test_the_project_file_overrides_the_user_file_key_by_key_and_objects_merge(
    user_file: Path, project_file: Path, project: Path
) -> None:
    write_settings(
        user_file,
        {
            "model": "faux/faux-1",
            "env_allow": ["GITHUB_TOKEN"],
            "retry": {"max_retries": 5, "base_delay_ms": 100},
        },
    )
    write_settings(project_file, {"env_allow": ["NPM_TOKEN"], "retry": {"max_retries": 1}})
    trust_settings(project)  # env_allow widens powers: the user confirmed this content

    settings = load_settings(project)

    assert settings.model == "faux/faux-1"  # only the user file sets it
    assert settings.env_allow == ["NPM_TOKEN"]  # a list replaces
    assert (settings.retry.max_retries, settings.retry.base_delay_ms) == (1, 100)  # objects merge


DEEP = "[" * 100_000 + "]" * 100_000
"""JSON nested 100,000 deep: past Python's recursion limit (issue 12)."""


@pytest.mark.parametrize(
    ("which", "content", "expected"),
    [
        ("project", {"retry": {"max_retries": "often"}}, "retry.max_retries: expected a whole"),
        ("user", {"tool_execution": "sideways"}, "tool_execution: Input should be"),
        ("project", {"modle": "faux/faux-1"}, "modle: not a setting (check its spelling"),
        (
            "user",
            '{"model": "faux/faux-1",\n}',
            "settings.json: is not valid JSON: line 2 column 1: Expecting property name",
        ),
        ("project", "[1, 2]", "the top level must be an object"),
        # Strict: JSON has the types, nothing is coerced (issue 12).
        (
            "project",
            {"allow_outside_cwd": "false"},
            'allow_outside_cwd: expected true or false, got string "false"',
        ),
        ("user", {"retry": {"max_retries": "3"}}, 'expected a whole number, got string "3"'),
        ("user", {"retry": {"enabled": 1}}, "retry.enabled: expected true or false, got number 1"),
        ("project", {"env_allow": "*"}, 'env_allow: expected an array, got string "*"'),
        ("project", {"env_allow": [1]}, "env_allow[0]: expected a string, got number 1"),
        ("user", {"retry": []}, "retry: expected an object, got an array"),
        ("project", {"model": None, "theme": 7}, "theme: expected a string, got number 7"),
        (
            "project",
            {"providers": [{"name": "x", "api": "openai-completions", "models": []}]},
            "providers[0].base_url: required, and missing",
        ),
        # Bytes json cannot take (issue 12): one line each, no traceback.
        ("project", b"\xff\xfe\x00\x9b garbage", "is not UTF-8 text (byte 0 is not valid)"),
        ("user", DEEP, "the JSON nests more than 32 levels deep"),
        ("project", '{"a":' * 40 + "1" + "}" * 40, "nests more than 32 levels deep"),
        ("user", '{"retry": {"max_retries": NaN}}', "NaN is not a JSON value"),
        ("project", '{"theme": "' + "x" * 1024 * 1024 + '"}', "is larger than 1024 KiB"),
        # A key holding an escape sequence is shown escaped (never sent to the terminal).
        ("project", {"\x1b]0;pwned\x07": 1}, "\\u001b]0;pwned\\u0007: not a setting"),
    ],
)
def test_a_malformed_settings_file_is_refused_naming_the_file_and_the_key(
    user_file: Path,
    project_file: Path,
    project: Path,
    which: str,
    content: object,
    expected: str,
) -> None:
    write_settings(user_file, {"retry": {"base_delay_ms": 10}})
    write_settings(project_file, {"model": "faux/faux-1"})
    bad = project_file if which == "project" else user_file
    write_settings(bad, content)

    with pytest.raises(SettingsError) as caught:
        load_settings(project)

    assert str(caught.value).startswith(f"{bad}: ")
    assert expected in str(caught.value)


def test_a_malformed_edit_while_running_keeps_the_last_good_settings_and_says_why(
    project_file: Path, project: Path
) -> None:
    write_settings(project_file, {"retry": {"max_retries": 2}})
    files = SettingsFiles(project)
    assert files.current().retry.max_retries == 2

    write_settings(project_file, {"retry": {"max_retries": -1}})
    os.utime(project_file, ns=(1, 1))  # a different modification time, whatever the clock

    assert files.current().retry.max_retries == 2
    assert files.error is not None
    assert "retry.max_retries: Input should be greater than or equal to 0" in str(files.error)

    write_settings(project_file, {"retry": {"max_retries": 4}})
    os.utime(project_file, ns=(2, 2))

    assert files.harness().retry.max_retries == 4
    assert files.error is None


def test_settings_are_read_again_only_when_a_file_changes_its_modification_time(
    project_file: Path, user_file: Path, project: Path
) -> None:
    write_settings(project_file, {"retry": {"max_retries": 1}})
    files = SettingsFiles(project)
    assert files.current().retry.max_retries == 1
    stamp = project_file.stat()

    write_settings(project_file, {"retry": {"max_retries": 7}})  # same size
    os.utime(project_file, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert files.current().retry.max_retries == 1  # not read again

    write_settings(user_file, {"model": "faux/faux-1"})  # a new file changes the stamps
    assert files.current().retry.max_retries == 7
    assert files.current().model == "faux/faux-1"


def test_a_malformed_file_at_the_first_read_is_an_error_not_a_silent_default(
    project_file: Path, project: Path
) -> None:
    write_settings(project_file, {"retry": {"max_retries": "x"}})

    with pytest.raises(SettingsError, match=r"retry\.max_retries"):
        SettingsFiles(project).current()


@pytest.mark.parametrize(
    "bad",
    [b"\xff\xfe garbage", DEEP.encode(), b'{"allow_outside_cwd": "true"}'],
    ids=["binary", "deep", "wrong-type"],
)
def test_a_bad_edit_while_running_is_reported_once_and_the_last_good_settings_stay(
    project_file: Path, project: Path, bad: bytes
) -> None:
    write_settings(project_file, {"retry": {"max_retries": 2}})
    files = SettingsFiles(project)
    seen: list[str] = []
    files.on_error(lambda error: seen.append(str(error)))
    assert files.current().retry.max_retries == 2

    write_settings(project_file, bad)
    os.utime(project_file, ns=(1, 1))
    first = files.current()
    write_settings(project_file, bad + b" ")  # another stamp, the same problem
    second = files.current()

    assert (first.retry.max_retries, second.retry.max_retries) == (2, 2)
    assert not second.allow_outside_cwd
    assert len(seen) == 1
    assert seen[0].startswith(f"{project_file}: ")
