"""Permission rules in Claude Code's syntax: ``tool`` or ``tool(pattern)`` (issue 13).

- ``bash(npm test)`` matches exactly that command (compared word by word, so
  quoting does not matter); ``bash(git commit:*)`` matches any command whose
  words start with ``git commit``; ``bash`` matches every command.
- For tools whose main argument is a path (``read``, ``write``, ``edit``), the
  pattern is a glob: ``*`` within one path segment, ``**`` across segments. A
  pattern without ``/`` matches a name at any depth (``read(.env)`` matches
  ``.env`` and ``config/.env``, as in ``.gitignore``; for a path inside the
  workspace, only the part below the workspace counts); one with ``/`` is anchored
  at the working directory (``write(src/**)``); ``/...`` and ``~/...`` are
  absolute.
- For other tools, the pattern is matched against their main argument as text,
  with ``:*`` as a prefix form.

Every rule keeps where it came from (``user settings``, ``project settings``,
``command line``, ``session``), for ``/permissions`` and for refusal messages.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from typing import Literal

from pi_durable_tui.harness.permissions._shell import parse_shell

Effect = Literal["allow", "deny"]
"""What a rule does to the calls it matches."""
_RULE = re.compile(r"^\s*([A-Za-z0-9_.:-]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


class RuleError(ValueError):
    """A rule that does not parse (the message says what is expected)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One allow or deny rule and where it came from.

    Args:
        tool: The tool name the rule is about.
        pattern: Its pattern, or ``None`` for every call of the tool.
        effect: ``allow`` or ``deny``.
        source: Where it was set, for people (``user settings`` ...).
    """

    tool: str
    pattern: str | None
    effect: Effect
    source: str

    @property
    def text(self) -> str:
        """The rule as written: ``bash(git commit:*)``."""
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"


def parse_rule(text: str, effect: Effect, source: str) -> Rule:
    """Parse ``tool`` or ``tool(pattern)``.

    Raises:
        RuleError: For anything else (the message quotes the rule).
    """
    match = _RULE.match(text) if isinstance(text, str) else None
    if match is None or (match.group(2) is not None and not match.group(2).strip()):
        raise RuleError(
            f"permission rule {text!r} is not tool or tool(pattern), e.g. 'bash(npm test)'"
        )
    pattern = match.group(2)
    return Rule(match.group(1).lower(), pattern.strip() if pattern else None, effect, source)


def command_rule_matches(pattern: str, words: list[str]) -> bool:
    """Whether a bash rule's pattern matches one simple command's words."""
    prefix = pattern.endswith(":*")
    wanted = parse_shell(pattern[:-2] if prefix else pattern).commands
    if len(wanted) != 1:
        return False
    head = wanted[0]
    return words[: len(head)] == head if prefix else words == head


@cache
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**", index):
            index += 2
            if pattern.startswith("/", index):
                index += 1
                out.append("(?:.*/)?")  # `a/**/b` matches `a/b` too
            else:
                out.append(".*")
            continue
        out.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
        index += 1
    return re.compile("".join(out) + r"(?:/.*)?\Z", re.DOTALL)


def path_rule_matches(pattern: str, absolute: str, cwd: str) -> bool:
    """Whether a path rule's glob matches a path (absolute, lexically normalized).

    A pattern that names a directory matches everything beneath it too
    (``read(secrets)`` covers ``secrets/key``).
    """
    pattern = os.path.expanduser(pattern.removeprefix("./"))
    if pattern.startswith("/"):
        return bool(_glob_regex(os.path.normpath(pattern)).match(absolute))
    relative = os.path.relpath(absolute, cwd) if within(absolute, cwd) else None
    if "/" not in pattern.rstrip("/"):
        # Any depth of the workspace (of the whole path, for a path outside it): the
        # directories above the workspace are not the project's to match.
        regex = _glob_regex(pattern.rstrip("/"))
        segments = (relative if relative is not None else absolute.lstrip("/")).split("/")
        return any(regex.match("/".join(segments[i:])) for i in range(len(segments)))
    return relative is not None and bool(_glob_regex(pattern.rstrip("/")).match(relative))


def within(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or beneath it (both absolute and normalized)."""
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root if root == "/" else root + "/")


def text_rule_matches(pattern: str, argument: str) -> bool:
    """Whether a rule's pattern matches another tool's main argument."""
    if pattern.endswith(":*"):
        return argument.startswith(pattern[:-2])
    return argument == pattern
