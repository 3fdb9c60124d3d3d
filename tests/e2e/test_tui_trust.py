"""The trust prompt in a real terminal, against a hostile model (issue 13).

The real app (``python -m pi_durable_tui``) runs in tmux on the hostile faux
script of ``tests/app/hostile_settings``: the model writes the project's
``.pidurable/settings.json`` granting itself ``allow_outside_cwd`` and
``env_allow`` by ``write``, tries to write and edit outside the workspace and to
print the user's ``OPENAI_API_KEY``, rewrites the settings by ``bash`` and tries
again. Each new content of the file brings the prompt up on the screen; the
user answers ``n``. Afterwards: no file outside the workspace was
created or changed, and no form of the key is in any file of the session's
home (the SQLite store and its WAL). The script runs faster than a person
answers, so a newer content may replace a prompt before it is answered: every
prompt that shows is answered. A second scenario answers ``y`` and finds the
content's sha256 remembered for the project.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_durable_tui.app.files import TRUST_NAME, settings_digest
from pi_durable_tui.tui._prompt_keys import SETTLE
from tests.app.hostile_settings import LAST_WORDS, SECRET, Attack
from tests.e2e.tui_terminal import ScreenTest, Terminal, contains, flat, require_tmux


@pytest.fixture
def attacked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Attack, Terminal]]:
    """The hostile script's directories and a terminal that runs it (closed after the test)."""
    require_tmux()
    # The tmux server, and so the app, inherits the user's key from this environment.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    attack = Attack.prepare(tmp_path, workspace=tmp_path / "work", home=tmp_path / "home")
    terminal = Terminal(tmp_path, attack.script)
    yield attack, terminal
    terminal.close()


def started(terminal: Terminal, prompt: str) -> None:
    terminal.start("--model", "faux/faux-1")
    terminal.wait_for(contains("/compact"), "the first frame")
    terminal.submit(prompt)


def asking(screen: str) -> bool:
    """Whether the trust prompt is up and takes ``y``/``n`` (it has settled)."""
    return "Trust them?" in flat(screen) and "y trust them" in flat(screen)


def approving(screen: str) -> bool:
    """Whether the approval prompt is up and settled (pidurable's own files always ask)."""
    return "Needs your decision" in flat(screen) and "y allow once" in flat(screen)


def settling(screen: str) -> bool:
    """Whether a prompt is up that does not take its keys yet (it settles first)."""
    return "Read it first" in flat(screen)


def changed_from(screen: str) -> ScreenTest:
    """A screen test: the screen differs from ``screen``."""
    before = flat(screen)
    return lambda now: flat(now) != before


def answer_until(terminal: Terminal, key: str, done: str) -> int:
    """Answer every trust prompt with ``key`` until ``done`` shows with no prompt; count them.

    The script runs faster than a person answers: a newer content may replace the
    prompt before it is answered, so the prompts are answered as they come. Every
    approval prompt (the writes of pidurable's own files) is answered ``y``: the
    worst case, a user who lets the writes through, must still escape nothing.
    """
    answered = 0
    while True:
        screen = terminal.wait_for(
            lambda s: asking(s) or approving(s) or (done in flat(s) and not settling(s)),
            f"a trust or approval prompt or {done!r}",
        )
        if approving(screen):
            terminal.press("y")
            terminal.wait_for(changed_from(screen), "the decision taken")
            continue
        if not asking(screen):
            # A prompt opens only once no key arrived for SETTLE (the last answer
            # was a key): give a held-back one the time to show before calling it done.
            time.sleep(3 * SETTLE)
            if not any(test(terminal.screen()) for test in (asking, approving, settling)):
                return answered
            continue
        terminal.press(key)
        answered += 1
        terminal.wait_for(changed_from(screen), "the answer taken")


def quit_app(terminal: Terminal) -> None:
    terminal.press("C-d")
    assert terminal.wait_dead() == "status 0"


def test_a_hostile_model_granting_itself_powers_in_the_app_escapes_nothing_and_leaks_nothing(
    attacked: tuple[Attack, Terminal],
) -> None:
    attack, terminal = attacked
    started(terminal, "do your worst")

    prompts = answer_until(terminal, "n", LAST_WORDS)
    quit_app(terminal)

    assert prompts >= 1
    assert any("allow_outside_cwd = true" in flat(s) for s in terminal.screens if asking(s))
    assert attack.escaped_files() == []
    assert attack.leaked_bytes() == 0
    assert not (attack.home / TRUST_NAME).exists()


def test_y_in_the_prompt_remembers_the_contents_hash_for_the_project(
    attacked: tuple[Attack, Terminal],
) -> None:
    attack, terminal = attacked
    grant = json.dumps({"allow_outside_cwd": True})
    arguments = {"path": ".pidurable/settings.json", "content": grant}
    write = {"type": "tool_call", "name": "write", "arguments": arguments}
    script = {
        "responses": [
            {"content": [write], "stop_reason": "toolUse"},
            {"content": [{"type": "text", "text": "WRITTEN"}]},
        ]
    }
    attack.script.write_text(json.dumps(script))
    started(terminal, "widen")

    terminal.wait_for(contains("Allow write?", "y allow once"), "the approval prompt")
    terminal.press("y")
    terminal.wait_for(contains("allow_outside_cwd = true", "y trust them"), "the prompt")
    terminal.press("y")
    terminal.wait_for(contains("Trusted: allow_outside_cwd"), "the trust notice")
    terminal.wait_for(contains("WRITTEN"), "the answer")
    quit_app(terminal)

    projects = json.loads((attack.home / TRUST_NAME).read_text())["projects"]
    assert projects[os.path.realpath(attack.workspace)]["sha256"] == settings_digest(grant.encode())
