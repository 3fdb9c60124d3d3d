"""The controller's side of settings: problems become notices, trust answers apply (issues 12, 13).

A real session behind the controller: a malformed edit while it runs is one
notice naming the file and the key, and the old settings stay; a project settings
content that widens powers is a ``trust_question`` of the view model until the
user answers it; an answer about a content that is no longer the one waiting does
nothing; a trust that cannot be remembered still applies to this session.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.app.screen_support import ScreenFactory, ScreenRig


def edit(rig: ScreenRig, content: bytes, stamp: int) -> Path:
    """Rewrite the project's settings file with a modification time of its own."""
    path = rig.workdir / ".pidurable" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(content)
    os.utime(path, ns=(stamp, stamp))
    return path


def notice_texts(rig: ScreenRig) -> list[str]:
    return [notice.text for notice in rig.model.notices]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"\xff\xfe garbage", "is not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "nests more than 32 levels deep"),
        (b'{"retry": {"max_retries": "5"}}', "retry.max_retries: expected a whole number"),
    ],
    ids=["binary", "deep", "wrong-type"],
)
async def test_a_bad_settings_edit_while_the_session_runs_is_one_notice_and_the_old_settings_stay(
    open_screen: ScreenFactory, content: bytes, problem: str
) -> None:
    rig = await open_screen(settings={"retry": {"max_retries": 2}})
    path = edit(rig, content, 1)

    rig.controller.refresh_settings()
    rig.controller.refresh_settings()  # the same problem is told once
    await rig.until(lambda: any(problem in text for text in notice_texts(rig)), "the notice")

    [text] = [text for text in notice_texts(rig) if problem in text]
    assert text.startswith(f"{path}: ")
    assert text.endswith("the settings from before stay in force until it is fixed")
    assert rig.app.settings.current().retry.max_retries == 2


async def test_a_widening_content_is_the_trust_question_until_answered(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(settings={"allow_outside_cwd": True})
    question = rig.model.trust_question
    assert question is not None
    assert question.keys == (("allow_outside_cwd", "true"),)

    await rig.controller.answer_trust(question.id, False)

    assert rig.model.trust_question is None
    assert not rig.app.settings.current().allow_outside_cwd
    assert any(text.startswith("Not trusted: allow_outside_cwd") for text in notice_texts(rig))


async def test_an_answer_about_a_content_no_longer_waiting_does_nothing(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(settings={"allow_outside_cwd": True})
    shown = rig.model.trust_question
    assert shown is not None
    edit(rig, json.dumps({"allow_outside_cwd": True, "env_allow": ["*"]}).encode(), 1)
    rig.controller.refresh_settings()

    await rig.controller.answer_trust(shown.id, True)

    newer = rig.model.trust_question
    assert newer is not None
    assert newer.id != shown.id
    assert not rig.app.settings.current().allow_outside_cwd


async def test_a_trust_that_cannot_be_remembered_still_applies_to_this_session(
    open_screen: ScreenFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = await open_screen(settings={"allow_outside_cwd": True})
    question = rig.model.trust_question
    assert question is not None
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("PIDURABLE_HOME", str(blocker / "home"))  # cannot be created

    await rig.controller.answer_trust(question.id, True)

    assert rig.app.settings.current().allow_outside_cwd
    assert any(text.startswith("Trusted for this session only") for text in notice_texts(rig))
