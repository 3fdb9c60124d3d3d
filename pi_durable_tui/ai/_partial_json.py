"""Incremental parsing of streamed tool-call arguments.

Owns ``PartialJson`` (a live ``arguments`` object after every fragment) and
``parse_tool_arguments`` (the final parse when the tool-call block ends).
Implements the partial-JSON behaviour of model-layer.md 1.3 and the
"JSON-less tool call yields ``{}``" rule of 2.4.

How the live value is built: a small scanner keeps, across fragments, the stack
of open objects and arrays, whether it is inside a string, and for each open
container the position where its unfinished member starts. Completing the text
is then a matter of cutting that unfinished member (a key without a value, a
trailing comma, a partial escape), closing an open string value (so a long
``content`` argument grows live), finishing a partial literal (``tru`` becomes
``true``, ``1.`` becomes ``1``) and appending the closing brackets. The
completed text goes through ``json.loads``. Inside strings the scanner jumps from
quote to backslash with a regular expression, so its cost is per structural
character, not per character. Each fragment is scanned once, with only the
unfinished escape or literal before it (positions are kept as offsets in the
whole text), and fragments are kept as a list joined when the whole text is
needed: appending to one growing ``str`` would copy it per fragment, which
makes a megabyte argument cost seconds.

Invalid final JSON: ``parse_tool_arguments`` returns ``{}`` and the raw text;
providers keep that text on the ``ToolCall`` as the extra field
``raw_arguments`` (see ``RAW_ARGUMENTS_FIELD``), so the tool layer can tell the
model that its arguments were not valid JSON instead of reporting missing
parameters.
"""

from __future__ import annotations

import json
import re
from typing import Any

RAW_ARGUMENTS_FIELD = "raw_arguments"
"""Extra ``ToolCall`` field holding argument text that was not a JSON object."""

LIVE_PARSE_FULL_UNTIL = 64 * 1024
"""Below this many characters, the live value is re-parsed after every fragment."""

_STRING_STOP = re.compile(r'["\\]')
_LITERAL_RUN = re.compile(r"[-+0-9.eEtrufalsn]+")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_INVALID_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})|\\')
_WHITESPACE = " \t\r\n"

# Frame states. Objects: KEY_OR_END after "{", KEY after ",", COLON after a key,
# VALUE after ":", IN_VALUE while a nested container is open, NEXT after a value.
# Arrays use VALUE_OR_END after "[", VALUE after ",", IN_VALUE and NEXT.
_KEY_OR_END, _KEY, _COLON, _VALUE, _VALUE_OR_END, _IN_VALUE, _NEXT = range(7)


class _Frame:
    """One open object or array."""

    __slots__ = ("cut", "is_object", "state")

    def __init__(self, is_object: bool, cut: int) -> None:
        self.is_object = is_object
        self.state = _KEY_OR_END if is_object else _VALUE_OR_END
        self.cut = cut
        """Where to cut the text to drop this container's unfinished member."""


class PartialJson:
    """Accumulates the raw JSON text of one tool call and keeps a live parse.

    Feed fragments with ``feed``; read the best-effort object so far from
    ``value``. The value is always a dict (``{}`` until an object is readable)
    and never goes backwards to an unparseable state: if a completion fails, the
    previous value stays.

    REMINDER: above ``LIVE_PARSE_FULL_UNTIL`` characters the live value is only
    re-parsed when the text grew by a sixteenth since the last parse, so the
    total cost stays linear in the argument size; ``parse_tool_arguments`` is
    the exact parse and runs once at the end.
    """

    __slots__ = (
        "_broken",
        "_frames",
        "_in_string",
        "_length",
        "_parsed_length",
        "_pending",
        "_pieces",
        "_root_closed",
        "_scanned",
        "_string_is_key",
        "_tail",
        "_value",
    )

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._length = 0
        self._tail = ""
        """The text from ``_pending`` to the end: what the next scan starts with."""
        self._scanned = 0
        self._frames: list[_Frame] = []
        self._in_string = False
        self._string_is_key = False
        self._pending: int | None = None
        """Start of an unfinished escape or literal at the end of the text."""
        self._root_closed = False
        self._broken = False
        self._value: dict[str, Any] = {}
        self._parsed_length = 0

    @property
    def text(self) -> str:
        """The raw text received so far."""
        pieces = self._pieces
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
        return pieces[0] if pieces else ""

    @property
    def value(self) -> dict[str, Any]:
        """The best-effort arguments object so far."""
        return self._value

    def feed(self, fragment: str) -> dict[str, Any]:
        """Append one fragment and refresh the live value.

        Args:
            fragment: The next piece of raw argument JSON.

        Returns:
            The live arguments object after this fragment.
        """
        if not fragment:
            return self._value
        self._pieces.append(fragment)
        self._length += len(fragment)
        if self._broken:
            return self._value
        self._scan(fragment)
        length = self._length
        if length > LIVE_PARSE_FULL_UNTIL and length - self._parsed_length < length // 16:
            return self._value
        completed = self._completion()
        if completed is not None:
            try:
                parsed = json.loads(completed, strict=False)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                self._value = parsed
                self._parsed_length = length
        return self._value

    def _scan(self, fragment: str) -> None:
        # ``text`` is the unscanned rest: the pending escape or literal, then the
        # new fragment; ``base`` is its offset in the whole text.
        base = self._pending if self._pending is not None else self._scanned
        text = self._tail + fragment
        end = len(text)
        i = 0
        self._pending = None
        self._tail = ""
        frames = self._frames
        while i < end:
            if self._in_string:
                match = _STRING_STOP.search(text, i)
                if match is None:
                    i = end
                    break
                j = match.start()
                if text[j] == '"':
                    self._in_string = False
                    frames[-1].state = _COLON if self._string_is_key else _NEXT
                    i = j + 1
                    continue
                # A backslash: the escape is complete once its characters are here.
                size = 6 if j + 1 < end and text[j + 1] == "u" else 2
                if j + size > end:
                    self._pending = base + j
                    self._tail = text[j:]
                    i = end
                    break
                i = j + size
                continue
            char = text[i]
            if char in _WHITESPACE:
                i += 1
                continue
            if self._root_closed:
                self._broken = True
                return
            if not frames:
                if char not in "{[":
                    self._broken = True
                    return
                frames.append(_Frame(char == "{", base + i + 1))
                i += 1
                continue
            frame = frames[-1]
            state = frame.state
            if char == '"':
                if frame.is_object and state in (_KEY_OR_END, _KEY):
                    self._string_is_key = True
                elif state in (_VALUE, _VALUE_OR_END):
                    self._string_is_key = False
                    frame.state = _IN_VALUE
                else:
                    self._broken = True
                    return
                self._in_string = True
                i += 1
            elif char == ":" and frame.is_object and state == _COLON:
                frame.state = _VALUE
                i += 1
            elif char == "," and state == _NEXT:
                frame.state = _KEY if frame.is_object else _VALUE
                frame.cut = base + i
                i += 1
            elif (
                char in "}]"
                and (char == "}") == frame.is_object
                and state
                in (
                    _NEXT,
                    _KEY_OR_END,
                    _VALUE_OR_END,
                )
            ):
                frames.pop()
                if frames:
                    frames[-1].state = _NEXT
                else:
                    self._root_closed = True
                i += 1
            elif char in "{[" and state in (_VALUE, _VALUE_OR_END):
                frame.state = _IN_VALUE
                frames.append(_Frame(char == "{", base + i + 1))
                i += 1
            elif state in (_VALUE, _VALUE_OR_END):
                match = _LITERAL_RUN.match(text, i)
                if match is None:
                    self._broken = True
                    return
                if match.end() == end:
                    # The literal may continue in the next fragment.
                    self._pending = base + i
                    self._tail = text[i:]
                    i = end
                    break
                frame.state = _NEXT
                i = match.end()
            else:
                self._broken = True
                return
        self._scanned = base + i

    def _completion(self) -> str | None:
        """Return the text completed into valid JSON, or None when nothing is readable."""
        frames = self._frames
        if not frames:
            return self.text if self._root_closed else None
        text = self.text
        frame = frames[-1]
        if self._in_string:
            if self._string_is_key:
                head = text[: frame.cut]
            else:
                stop = self._pending if self._pending is not None else len(text)
                head = text[:stop] + '"'
        elif self._pending is not None:
            literal = _complete_literal(text[self._pending :].rstrip())
            head = text[: frame.cut] if literal is None else text[: self._pending] + literal
        elif frame.state in (_KEY, _COLON, _VALUE):
            head = text[: frame.cut]
        else:
            head = text
        closers = "".join("}" if open_frame.is_object else "]" for open_frame in reversed(frames))
        return head + closers


def _complete_literal(literal: str) -> str | None:
    """Finish a literal cut off at the end of the text, or None if it cannot be."""
    for word in ("true", "false", "null"):
        if literal and word.startswith(literal):
            return word
    trimmed = literal.rstrip("+-.eE")
    return trimmed if trimmed and _NUMBER.fullmatch(trimmed) else None


def parse_tool_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """Parse the complete argument text of a tool call.

    Raw control characters inside strings are accepted, and backslashes that do
    not start a valid escape are doubled before a second attempt (models write
    Windows paths and regular expressions).

    Args:
        raw: The concatenated argument fragments.

    Returns:
        The arguments object and ``None``; or ``{}`` and the raw text when it was
        not a JSON object. Empty text gives ``({}, None)``.
    """
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw, strict=False)
    except ValueError:
        repaired = _INVALID_ESCAPE.sub(
            lambda match: match.group(0) if match.group(1) else "\\\\", raw
        )
        try:
            value = json.loads(repaired, strict=False)
        except ValueError:
            return {}, raw
    if isinstance(value, dict):
        return value, None
    return {}, raw
