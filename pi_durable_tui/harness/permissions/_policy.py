"""The permission decision: mode x tool x rules x protected paths (issue 13, DESIGN.md 7).

``decide(call, policy)`` is pure. In order:

1. a deny rule matching the call (for ``bash``, any simple command of the line,
   substitutions and wrappers such as ``sudo`` or ``env X=1`` included) denies;
2. a path or command touching a protected path (pidurable's own files) asks, in
   every mode, whatever the allow rules say;
3. the mode:

   ========== ============= ================================= ======================
   mode       read-only     write/edit                        bash and other tools
   ========== ============= ================================= ======================
   plan       allow         deny                              read-only line: allow;
                                                              else deny
   ask        allow         ask unless an allow rule          ask unless an allow rule
   auto-edit  allow         inside the workspace: allow;      read-only line or allow
                            outside: ask unless a rule        rule: allow; else ask
   auto       allow         allow                             allow
   ========== ============= ================================= ======================

An allow rule covers a ``bash`` line only when the reader followed all of it and
each simple command is allowed by a rule or reads only. Tools that declare
nothing follow ``bash``'s policy without command recognition.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pi_durable_tui.harness.permissions._readonly import command_reads, line_reads_only
from pi_durable_tui.harness.permissions._rules import (
    Rule,
    command_rule_matches,
    parse_rule,
    path_rule_matches,
    text_rule_matches,
    within,
)
from pi_durable_tui.harness.permissions._shell import parse_shell

PermissionMode = Literal["plan", "ask", "auto-edit", "auto"]
"""``plan`` reads; ``ask`` asks for each change; ``auto-edit`` edits files; ``auto`` runs."""
MODES: tuple[PermissionMode, ...] = ("plan", "auto-edit", "ask", "auto")
"""The modes, in the order the mode key cycles them."""
SubjectKind = Literal["path", "command"]
"""What a tool's main argument is: a file ``path`` or a shell ``command`` line."""
Outcome = Literal["allow", "ask", "deny"]
"""What the engine decided for a call."""
_WRAPPERS = frozenset({"sudo", "nohup", "nice", "time", "command", "exec", "builtin", "doas"})


@dataclass(frozen=True, slots=True)
class PermissionCall:
    """What the engine knows of one call.

    Args:
        tool: The tool's name.
        read_only: Whether the tool declared that it only reads.
        kind: What its main argument is: a ``path``, a shell ``command``, or ``None``.
        argument: The main argument (the path as the tool resolves it, or the command).
        cwd: The conversation's working directory (absolute).
    """

    tool: str
    read_only: bool
    kind: SubjectKind | None
    argument: str | None
    cwd: str


@dataclass(frozen=True, slots=True)
class PermissionPolicy:
    """The mode, the rules in force and the protected paths.

    Args:
        mode: The session's mode.
        rules: Allow and deny rules, each with its source.
        protected: Globs (rule syntax) of paths that always need a decision.
    """

    mode: PermissionMode = "auto"
    rules: Sequence[Rule] = ()
    protected: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class Decision:
    """What the engine decided.

    Args:
        outcome: ``allow``, ``ask`` or ``deny``.
        reason: Why, for the model and the user.
        rule: The rule that decided, if one did.
        suggestion: The rule "allow always" would add (``bash(npm test)``).
        protected: Whether a protected path made it ask.
    """

    outcome: Outcome
    reason: str
    rule: Rule | None = None
    suggestion: str | None = None
    protected: bool = False


def absolute_path(path: str, cwd: str) -> str:
    """A tool path made absolute and normalized lexically (``~`` expanded)."""
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def _unwrapped(words: list[str]) -> list[str]:
    """The command a wrapper runs: ``sudo -u x env A=1 nohup rm`` -> ``rm``."""
    index = 0
    while index < len(words):
        word = words[index]
        name, sep, _ = word.partition("=")
        if sep and name.isidentifier():
            index += 1
        elif word in _WRAPPERS or word == "env":
            index += 1
            while index < len(words) and words[index].startswith("-"):
                index += 1
        elif word == "timeout" and index + 1 < len(words):
            index += 2
        else:
            break
    return words[index:]


class _Matcher:
    def __init__(self, call: PermissionCall, policy: PermissionPolicy) -> None:
        self.call = call
        self.policy = policy
        self.line = parse_shell(call.argument or "") if call.kind == "command" else None
        self.path = (
            absolute_path(call.argument, call.cwd)
            if call.kind == "path" and call.argument is not None
            else None
        )

    def _rules(self, effect: str) -> list[Rule]:
        return [r for r in self.policy.rules if r.effect == effect and r.tool == self.call.tool]

    def _matches(self, rule: Rule, words: list[str] | None = None) -> bool:
        if rule.pattern is None:
            return True
        if words is not None:
            return command_rule_matches(rule.pattern, words)
        if self.path is not None:
            return path_rule_matches(rule.pattern, self.path, self.call.cwd) or (
                os.path.realpath(self.path) != self.path
                and path_rule_matches(rule.pattern, os.path.realpath(self.path), self.call.cwd)
            )
        return self.call.argument is not None and text_rule_matches(
            rule.pattern, self.call.argument
        )

    def deny(self) -> Rule | None:
        for rule in self._rules("deny"):
            if self.line is None:
                if self._matches(rule):
                    return rule
                continue
            for words in self.line.commands:
                if any(self._matches(rule, form) for form in (words, _unwrapped(words))):
                    return rule
        return None

    def allow(self) -> Rule | None:
        rules = self._rules("allow")
        if self.line is None:
            return next((r for r in rules if self._matches(r)), None)
        if not self.line.transparent or self.line.writes or not self.line.commands:
            return next((r for r in rules if r.pattern is None), None)
        found: Rule | None = None
        for words in self.line.commands:
            rule = next((r for r in rules if self._matches(r, words)), None)
            if rule is None and not command_reads(words):
                return None
            found = found or rule
        return found

    def protected(self) -> str | None:
        """The protected path this call touches, if any (writes only)."""
        if self.call.read_only:
            return None
        candidates: list[str] = []
        if self.path is not None:
            candidates = [self.path, os.path.realpath(self.path)]
        elif self.line is not None:
            words = [w for c in self.line.commands for w in c[1:]] + self.line.writes
            candidates = [absolute_path(w, self.call.cwd) for w in words if w and "\0" not in w]
        for path in candidates:
            for pattern in self.policy.protected:
                if path_rule_matches(pattern, path, self.call.cwd):
                    return path
        return None


def _suggestion(call: PermissionCall) -> str:
    if call.argument is None or call.kind is None:
        return call.tool
    argument = call.argument.replace("\n", " ").strip()
    return f"{call.tool}({argument})"


def _working_suggestion(call: PermissionCall, policy: PermissionPolicy) -> str | None:
    """The rule "allow always" would add, if that rule would allow this very call.

    A rule covers only lines the reader follows whole (``echo x >> f`` or
    ``a; b`` are not covered by ``bash(...)`` of themselves): offering a rule
    that would never match would ask again at the next identical call. An
    argument holding pattern characters gets none: its rule would cover more
    than the call the user saw.
    """
    # REMINDER: the argument is the model's: a rule must name exactly this call,
    # never a pattern (``x:*``, ``**``, ``?``, ``[``) the model smuggled into it.
    if call.argument is not None and any(c in call.argument for c in "*?[]()"):
        return None
    suggestion = _suggestion(call)
    try:
        rule = parse_rule(suggestion, "allow", "session")
    except ValueError:
        return None
    if _Matcher(call, PermissionPolicy(policy.mode, (rule,), policy.protected)).allow() is None:
        return None
    return suggestion


def decide(call: PermissionCall, policy: PermissionPolicy) -> Decision:
    """Decide one call (see the module docstring for the table).

    Args:
        call: The call.
        policy: The mode, rules and protected paths in force.

    Returns:
        ``allow``, ``ask`` or ``deny`` with the reason and the deciding rule.
    """
    matcher = _Matcher(call, policy)
    denied = matcher.deny()
    if denied is not None:
        return Decision("deny", f"denied by the rule {denied.text} ({denied.source})", denied)
    mode = policy.mode
    if call.read_only:
        return Decision("allow", "the tool only reads")
    reads = matcher.line is not None and line_reads_only(matcher.line)
    touched = matcher.protected()
    if touched is not None:
        if mode == "plan":
            return Decision("deny", _PLAN)
        return Decision("ask", f"{touched} is one of pidurable's own files", protected=True)
    if mode == "auto":
        return Decision("allow", "the session runs in auto mode")
    if mode == "plan":
        if reads:
            return Decision("allow", "the command only reads")
        return Decision("deny", _PLAN)
    allowed = matcher.allow()
    if allowed is not None:
        return Decision("allow", f"allowed by the rule {allowed.text} ({allowed.source})", allowed)
    suggestion = _working_suggestion(call, policy)
    if mode == "auto-edit":
        if reads:
            return Decision("allow", "the command only reads")
        if matcher.path is not None and within(matcher.path, call.cwd):
            return Decision("allow", "an edit inside the workspace (auto-edit mode)")
        if matcher.path is not None:
            reason = f"{matcher.path} is outside the workspace"
            return Decision("ask", reason, suggestion=suggestion)
    return Decision("ask", f"the session runs in {mode} mode", suggestion=suggestion)


_PLAN = "the session is in plan mode: only reading tools and read-only commands run"
