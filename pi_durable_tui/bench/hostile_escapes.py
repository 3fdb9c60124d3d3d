"""The hostile escape sequences, written once (issue 13: "The screen renders no escape sequence").

What a hostile model (or a file, a command's output, a path) puts into the text
pidurable shows, to take over the user's terminal: OSC 52 writes the clipboard
(``CLIPBOARD``, the base64 of ``hacked``), OSC 0 retitles the window (``TITLE``),
CSI 2J clears the screen. ``EVIL`` holds the three; ``PRINTS_EVIL`` is a shell
command that prints them while its own text holds none (a command's output is
a channel of its own). ``escapes_script`` is the faux script that carries
``EVIL`` into every rendered channel, and ``hostile_sequences`` counts the ones
that reached a terminal's bytes.

One definition for everything that sends them through the product, so the
bench (``hostile_routes``) and the tests that hold the same line
(``tests/e2e/test_tui_escapes.py``, the terminal-safety tests of ``app`` and
``tui``, ``-p`` into a terminal, the HTML export) cannot drift apart: a
sequence added here is tried everywhere.
"""

from __future__ import annotations

from typing import Any

CLIPBOARD = "aGFja2Vk"
"""The base64 of ``hacked``: what OSC 52 would put on the clipboard."""
TITLE = "pwned"
"""What OSC 0 would make the window's title."""
EVIL = f"\x1b]52;c;{CLIPBOARD}\x07\x1b]0;{TITLE}\x07\x1b[2J"
"""Writes the clipboard, retitles the window, clears the screen (BEL-terminated OSCs)."""
PRINTS_EVIL = f"printf '\\033]52;c;{CLIPBOARD}\\007\\033]0;{TITLE}\\007\\033[2J'"
"""A shell command whose output is ``EVIL`` (the command text holds no control byte)."""

MARKS = (
    "THINK-MARK",
    "PREVIEW-MARK",
    "PATH-MARK",
    "CMD-MARK",
    "BASH-DONE",
    "ERROR-MARK",
    "DIFF-MARK",
    "ANSWER-MARK",
)
"""Text beside the sequences in each channel of ``escapes_script``: each must be painted."""


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "arguments": arguments}


def _round(*content: dict[str, Any]) -> dict[str, Any]:
    return {"content": list(content), "stop_reason": "toolUse"}


def escapes_script(evil: str, done: str) -> dict[str, Any]:
    """A faux script putting ``evil`` into every rendered channel, then answering ``done``.

    The channels: thinking, an answer, a ``write`` preview and a ``write`` path,
    a ``bash`` command and what it prints (``PRINTS_EVIL``), a tool error (``read``
    of a missing path), an ``edit`` diff, the last answer. Each carries one of
    ``MARKS`` beside ``evil``.

    Args:
        evil: The sequences (``EVIL``); empty for a clean baseline of the same run,
            whose command then prints nothing hostile either.
        done: Text of the last answer, after which the run can end.
    """
    prints = PRINTS_EVIL if evil else "echo clean"
    diff = [{"oldText": "hello", "newText": f"DIFF-MARK {evil}"}]
    return {
        "responses": [
            _round(
                {"type": "thinking", "text": f"THINK-MARK {evil} thought"},
                {"type": "text", "text": f"Working {evil} on it."},
                _call("write", path="a.txt", content=f"hello PREVIEW-MARK {evil}\n"),
                _call("write", path=f"PATH-MARK{evil}.txt", content="x\n"),
                _call("bash", command=f"{prints}; echo 'CMD-MARK {evil}'; echo BASH-DONE"),
                _call("read", path=f"ERROR-MARK{evil}.txt"),
            ),
            _round(_call("edit", path="a.txt", edits=diff)),
            {"content": [{"type": "text", "text": f"ANSWER-MARK {evil} {done}"}]},
        ]
    }


def hostile_sequences(hostile: bytes, clean: bytes) -> int:
    """The sequences of ``EVIL`` in a terminal's bytes ``hostile``.

    The OSC payloads are counted where they appear; CSI 2J only beyond the
    clears of ``clean`` (the same run without ``EVIL``), since the app may clear
    its own screen.
    """
    clears = hostile.count(b"\x1b[2J") - clean.count(b"\x1b[2J")
    osc = hostile.count(f"\x1b]52;c;{CLIPBOARD}".encode()) + hostile.count(
        f"\x1b]0;{TITLE}".encode()
    )
    return osc + max(clears, 0)
