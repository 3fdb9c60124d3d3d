"""A shell command split into simple commands, for the permission engine (issue 13).

This is not a shell: it reads just enough of bash's grammar to say which simple
commands a line runs and whether it does anything the engine cannot see through.
It splits on the control operators ``;``, ``&&``, ``||``, ``|``, ``|&``, ``&`` and
newlines, removes quotes (single, double, backslash), and records:

- ``substitution``: ``$(...)``, backticks, ``<(...)`` or ``>(...)`` anywhere,
  inside double quotes too (their inner commands are parsed and listed, so a
  deny rule still sees them);
- ``writes``: the target of an output redirection (``>``, ``>>``, ``>|``, ``&>``,
  ``2>``...) other than ``/dev/null`` and descriptor duplications (``2>&1``);
- ``variables`` and ``globs``: unquoted expansions (their values may be flags);
- ``opaque``: what the reader does not follow: a subshell or group (``(``,
  ``{``), a here-document (``<<``), a background job (``&``), an unterminated
  quote, a command name built by expansion (``$X``, a glob).

Anything opaque or substituted is never read-only and never matched by an allow
rule; deny rules are checked against every command found, including those inside
substitutions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_OPERATORS = ("&&", "||", "|&", ";;", ";", "|", "&", "\n")
_REDIRECT_CHARS = "<>"


@dataclass(slots=True)
class ShellLine:
    """What a command line runs, as far as the reader can tell."""

    commands: list[list[str]] = field(default_factory=list)
    """Each simple command's words, quotes removed (redirections removed)."""
    writes: list[str] = field(default_factory=list)
    """Targets of output redirections other than ``/dev/null``."""
    substitution: bool = False
    opaque: bool = False
    variables: bool = False
    """An unquoted ``$NAME`` or ``${...}`` expands somewhere (possibly into flags)."""
    globs: bool = False
    """An unquoted ``*``, ``?`` or ``[`` expands somewhere (a file name may be a flag)."""

    @property
    def transparent(self) -> bool:
        """Whether every effect of the line is one of ``commands`` (no hidden part)."""
        return not (self.substitution or self.opaque)


class _Reader:
    def __init__(self, text: str, line: ShellLine) -> None:
        self.text = text
        self.pos = 0
        self.line = line
        self.words: list[str] = []
        self.word: list[str] | None = None
        self.expanded = False  # the current word holds an unquoted expansion or glob
        self.first_expanded: list[bool] = []
        self.redirect: str | None = None  # the operator awaiting its target word

    # -- words --

    def _add(self, text: str) -> None:
        if self.word is None:
            self.word = []
        self.word.append(text)

    def _end_word(self) -> None:
        if self.word is None:
            return
        word = "".join(self.word)
        self.word = None
        if self.redirect is not None:
            if ">" in self.redirect and not self.redirect.endswith("&") and word != "/dev/null":
                self.line.writes.append(word)
            if self.redirect.endswith("&") and not word.isdigit() and word != "-":
                self.line.writes.append(word)  # `>&file` writes a file
            self.redirect = None
        else:
            self.words.append(word)
            self.first_expanded.append(self.expanded)
        self.expanded = False

    def _end_command(self) -> None:
        self._end_word()
        if self.redirect is not None:  # `ls >` with no target
            self.line.opaque = True
            self.redirect = None
        if self.words:
            if self.first_expanded and self.first_expanded[0]:
                self.line.opaque = True
            self.line.commands.append(self.words)
        self.words = []
        self.first_expanded = []

    # -- the scan --

    def run(self) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\\":
                if self.pos + 1 < len(text) and text[self.pos + 1] != "\n":
                    self._add(text[self.pos + 1])
                self.pos += 2
            elif char == "'":
                end = text.find("'", self.pos + 1)
                if end < 0:
                    self.line.opaque = True
                    return
                self._add(text[self.pos + 1 : end])
                self.pos = end + 1
            elif char == '"':
                self._double_quoted()
            elif char == "`":
                self._backticks()
            elif char == "$" and text.startswith("$(", self.pos):
                self._substitution(self.pos + 2)
            elif char in " \t":
                self._end_word()
                self.pos += 1
            elif char == "#" and self.word is None:
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif char in _REDIRECT_CHARS:
                self._redirection()
            elif any(text.startswith(op, self.pos) for op in _OPERATORS):
                op = next(op for op in _OPERATORS if text.startswith(op, self.pos))
                if op == "&" and not text.startswith("&>", self.pos):
                    self.line.opaque = True  # a background job outlives the check
                elif op == "&":
                    self._redirection()
                    continue
                self._end_command()
                self.pos += len(op)
            elif char in "(){}" and self.word is None:
                self.line.opaque = True
                self._add(char)
                self.pos += 1
            else:
                if char == "$":
                    self.line.variables = True
                elif char in "*?[":
                    self.line.globs = True
                if char in "$*?[~" and not (char == "~" and self.word is not None):
                    self.expanded = True
                self._add(char)
                self.pos += 1
        self._end_command()

    def _double_quoted(self) -> None:
        text = self.text
        self.pos += 1
        self._add("")  # `""` is an (empty) word
        while self.pos < len(text):
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                return
            if char == "\\" and self.pos + 1 < len(text) and text[self.pos + 1] in '$`"\\\n':
                self._add(text[self.pos + 1])
                self.pos += 2
            elif char == "`":
                self._backticks()
            elif text.startswith("$(", self.pos):
                self._substitution(self.pos + 2)
            else:
                self._add(char)
                self.pos += 1
        self.line.opaque = True  # unterminated

    def _backticks(self) -> None:
        end = self.text.find("`", self.pos + 1)
        self.line.substitution = True
        if end < 0:
            self.line.opaque = True
            self.pos = len(self.text)
            return
        self._inner(self.text[self.pos + 1 : end])
        self._add("`...`")
        self.pos = end + 1

    def _substitution(self, start: int) -> None:
        """``$(...)`` (or ``<(``, ``>(``) from ``start``, its inner line parsed too."""
        depth, index = 1, start
        while index < len(self.text) and depth:
            if self.text[index] == "(":
                depth += 1
            elif self.text[index] == ")":
                depth -= 1
            index += 1
        self.line.substitution = True
        if depth:
            self.line.opaque = True
        self._inner(self.text[start : index - 1 if not depth else index])
        self._add("$(...)")
        self.pos = index

    def _inner(self, text: str) -> None:
        inner = parse_shell(text)
        self.line.commands.extend(inner.commands)
        self.line.writes.extend(inner.writes)
        self.line.opaque |= inner.opaque

    def _redirection(self) -> None:
        text = self.text
        if text.startswith("<<", self.pos):
            self.line.opaque = True  # a here-document: its body is not followed
        if text[self.pos] in "<>" and text.startswith("(", self.pos + 1):
            self._end_word()
            self._substitution(self.pos + 2)  # process substitution
            return
        digits = "".join(self.word or []) if self.word is not None else ""
        if digits.isdigit():
            self.word = None  # `2>`: the descriptor belongs to the operator
        else:
            self._end_word()
        start = self.pos
        while self.pos < len(text) and text[self.pos] in "<>&|":
            self.pos += 1
        self.redirect = text[start : self.pos]
        if self.redirect.startswith("&"):
            self.redirect = ">" + self.redirect[1:]  # `&>` and `&>>` write like `>`


def parse_shell(command: str) -> ShellLine:
    """Split a bash command line into its simple commands (see the module docstring).

    Args:
        command: The command as the model sent it.

    Returns:
        The commands, the redirection targets and what the reader could not follow.
    """
    line = ShellLine()
    _Reader(command, line).run()
    return line
