"""``terminal_safe``: no string from the model, a tool, a file or a path writes a control sequence.

A terminal obeys what it is sent. A model (or a file it read, or a command's
output) that gets ``ESC ] 52 ; c ; <base64> BEL`` onto the screen writes the
user's clipboard, ``ESC ] 0 ; ... BEL`` retitles the window, ``ESC [ 2 J``
clears the screen, and an unterminated OSC swallows what follows. Neither Rich
nor Textual removes ESC from text, so every string bound for the terminal goes
through this function (DESIGN.md section 7, issue 13):

- at the view-model boundary: every string field of the values in ``_view``
  (blocks, tool cards, thinking, notices, the footer, queue and task labels,
  session and model names) is made safe when the value is built;
- in the TUI: the text builders every widget uses (``tui/_terminal_text``: its
  ``Text``, ``Content`` and ``Markdown``) call it again, so a widget that builds
  text from some other string cannot forget.

What it removes: whole escape sequences (CSI ``ESC [`` ... final byte; the string
sequences OSC ``ESC ]``, DCS ``ESC P``, SOS ``ESC X``, PM ``ESC ^`` and APC
``ESC _`` up to their terminator BEL or ST, or up to the end of the line when
unterminated; two- and three-byte ``ESC`` sequences; their 8-bit C1 forms), then
every remaining control character: C0 other than newline and tab (so a lone
ESC, BEL, backspace and carriage return go), DEL and C1 (U+0080-U+009F).
Printable text, newlines and tabs are kept as they are, so colours a command
printed are lost but its words are not. Hyperlinks pidurable itself makes are
styles of the rendered text, not characters of it, and are unaffected.
"""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any

_STRING_INTRODUCER = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])"
_SEQUENCE = re.compile(
    # CSI: parameters, intermediates, one final byte.
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    # OSC, DCS, SOS, PM, APC: up to BEL or ST (ESC \ or 0x9c); unterminated, up to
    # the end of the line (a newline is kept).
    rf"|{_STRING_INTRODUCER}[^\x07\x9c\n]*?(?:\x07|\x1b\\|\x9c|(?=\n)|\Z)"
    # Any other ESC sequence: intermediates and one final byte.
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Return ``text`` without escape sequences and control characters.

    Newlines and tabs stay; see the module docstring for what goes.

    Args:
        text: A string from the model, a tool, a file or a path.

    Returns:
        The text safe to write to a terminal (``text`` itself when it was).
    """
    if _CONTROL.search(text) is None:  # the common case costs one scan
        return text
    return _CONTROL.sub("", _SEQUENCE.sub("", text))


def visible_controls(text: str) -> str:
    r"""``text`` with each control character (but newline and tab) shown as ``\xNN`` text.

    The escaped form, for files a person may read in a terminal or a browser
    (exports): nothing is lost, nothing is obeyed.
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def terminal_safe_json(value: Any) -> Any:
    """``value`` with every string in it (keys too) through ``terminal_safe``."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, list):
        return [terminal_safe_json(item) for item in value]
    if isinstance(value, tuple):
        return tuple(terminal_safe_json(item) for item in value)
    if isinstance(value, dict):
        return {terminal_safe_json(k): terminal_safe_json(v) for k, v in value.items()}
    return value


class TerminalSafe:
    """A frozen dataclass base whose string fields are made terminal-safe when built.

    # REMINDER: every value the screen renders derives from this, so a new field
    # of a view value is safe without anyone remembering it.
    """

    __slots__ = ()

    def __post_init__(self) -> None:
        for item in fields(self):  # type: ignore[arg-type]
            value = getattr(self, item.name)
            if isinstance(value, str):
                safe: Any = terminal_safe(value)
            elif isinstance(value, (dict, list, tuple)):
                safe = terminal_safe_json(value)
            else:
                continue
            if safe != value:
                object.__setattr__(self, item.name, safe)
