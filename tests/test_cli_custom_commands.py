"""``pidurable -p "/review calc.py"``: the real command sends a custom command's filled-in text."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli import pidurable, project, stored_messages

__all__ = ["project"]  # the fixture, shared with the command-line tests


def test_print_mode_sends_a_custom_commands_text_with_its_arguments(project: Path) -> None:
    commands = project / ".pidurable" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(
        "---\ndescription: Review a file\nmodel: faux/other\n---\n"
        "Review $ARGUMENTS for bugs; start with $1.\n"
    )
    script = project / "script.json"
    reviewed = {
        "match": {"user": "Review calc.py for bugs; start with calc.py."},
        "content": [{"type": "text", "text": "calc.py looks fine."}],
    }
    literal = {"content": [{"type": "text", "text": "I got the raw command."}]}
    script.write_text(json.dumps({"responses": [reviewed, literal]}))

    status, out, err = pidurable(
        project, "-p", "/review calc.py", "--model", "faux/faux-1", "--faux-script", str(script)
    )

    assert (status, out) == (0, "calc.py looks fine.\n")
    assert err == (
        "pidurable: /review: its model (faux/other) is not applied; pidurable has no "
        "per-message model (use /model to switch).\n"
    )
    [store] = list((project.parent / "home" / "sessions").glob("*/*/session.sqlite"))
    assert ("user", "Review calc.py for bugs; start with calc.py.\n") in stored_messages(store)
