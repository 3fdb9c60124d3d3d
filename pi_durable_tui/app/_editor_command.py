"""Which program edits the draft (Ctrl+G), and the environment it runs with.

The program is ``$VISUAL``, else ``$EDITOR``, else ``vi``, as in Pi and Claude
Code (tui-anchors.md sections 1 and 2). A value is split as a shell splits a
word list, so ``EDITOR="code --wait"`` works; an empty value counts as unset.
The program must be on ``PATH`` (or be a path): one that is not is refused
before the screen is suspended, with a line that says what to set.

The editor inherits pidurable's environment without the variables that look
like secrets (``env.scrub_environment``), like every other child pidurable
starts: the API keys pidurable runs with are not the editor's business.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from pi_durable_tui.env import scrub_environment

DEFAULT_EDITOR = "vi"
"""The editor when neither ``VISUAL`` nor ``EDITOR`` is set."""


class EditorUnavailable(ValueError):
    """No editor can be started; the message says which one and what to set."""


@dataclass(frozen=True, slots=True)
class EditorCommand:
    """A resolved editor.

    Attributes:
        argv: The program's full path and its arguments; the file to edit goes last.
        label: How a notice names it: ``$EDITOR (nano)``, or ``vi`` for the default.
        environment: What the program runs with (secrets left out).
    """

    argv: tuple[str, ...]
    label: str
    environment: dict[str, str]


def editor_command(environ: Mapping[str, str] | None = None) -> EditorCommand:
    """Resolve the user's editor.

    Args:
        environ: The environment to read (``os.environ`` when omitted).

    Returns:
        The command to run, with the file to edit appended.

    Raises:
        EditorUnavailable: The value cannot be split, or its program is not found.
    """
    environ = os.environ if environ is None else environ
    name, value = next(
        ((name, environ[name]) for name in ("VISUAL", "EDITOR") if environ.get(name, "").strip()),
        ("", DEFAULT_EDITOR),
    )
    label = f"${name} ({value})" if name else value
    try:
        words = shlex.split(value)
    except ValueError as error:
        raise EditorUnavailable(f"{label} cannot be read ({error}): set VISUAL or EDITOR") from None
    program = shutil.which(words[0], path=environ.get("PATH", os.defpath)) if words else None
    if program is None:
        raise EditorUnavailable(f"{label} not found: set VISUAL or EDITOR")
    return EditorCommand((program, *words[1:]), label, scrub_environment(environ))
