"""The permission engine: modes, rules, protected paths, read-only commands (issue 13).

Pure policy, below every other part of the harness (it imports nothing of it):
``pi.tool`` asks ``decide`` before a call starts (DESIGN.md section 7), and the
app builds the ``PermissionSettings`` from its settings files and command line.

- ``decide(PermissionCall, PermissionPolicy) -> Decision`` (``_policy``);
- rules ``tool(pattern)`` in Claude Code's syntax (``_rules``);
- ``is_read_only_command`` over a parsed line (``_readonly``, ``_shell``);
- ``PermissionSettings``: what a host configures (``_settings``).
"""

from pi_durable_tui.harness.permissions._policy import (
    MODES,
    Decision,
    Outcome,
    PermissionCall,
    PermissionMode,
    PermissionPolicy,
    SubjectKind,
    absolute_path,
    decide,
)
from pi_durable_tui.harness.permissions._readonly import is_read_only_command
from pi_durable_tui.harness.permissions._rules import Effect, Rule, RuleError, parse_rule
from pi_durable_tui.harness.permissions._settings import PermissionSettings, RuleSpec
from pi_durable_tui.harness.permissions._shell import ShellLine, parse_shell

__all__ = [
    "MODES",
    "Decision",
    "Effect",
    "Outcome",
    "PermissionCall",
    "PermissionMode",
    "PermissionPolicy",
    "PermissionSettings",
    "Rule",
    "RuleError",
    "RuleSpec",
    "ShellLine",
    "SubjectKind",
    "absolute_path",
    "decide",
    "is_read_only_command",
    "parse_rule",
    "parse_shell",
]
