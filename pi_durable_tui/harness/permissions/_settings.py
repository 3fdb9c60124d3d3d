"""What a host configures: the mode, the rules with their sources, protected paths.

``PermissionSettings`` is the ``permissions`` section of the harness ``Settings``
(read again at every decision, R34). Its defaults keep the harness as the
reference describes it (every call runs: mode ``auto``, no rule); the pidurable
app sets the mode ``auto-edit`` and its own files as protected. ``on_ask``
says what a call that needs a decision does: ``wait`` for the user (a screen is
attached) or ``refuse`` at once (print and JSON modes).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pi_durable_tui.harness.permissions._policy import PermissionMode, PermissionPolicy
from pi_durable_tui.harness.permissions._rules import Effect, Rule, parse_rule


class RuleSpec(BaseModel):
    """One rule as configured: ``{"rule": "bash(npm test)", "effect": "allow", "source": ...}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    effect: Effect
    source: str = "settings"


class PermissionSettings(BaseModel):
    """The permission part of the harness settings (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: PermissionMode = "auto"
    rules: tuple[RuleSpec, ...] = ()
    protected: tuple[str, ...] = ()
    """Path globs (rule syntax) that always need a decision: ``.pidurable/**``."""
    on_ask: Literal["wait", "refuse"] = "wait"
    hint: str = Field(default="", description="How the user can allow a refused call")

    def policy(
        self, *, mode: PermissionMode | None = None, session_rules: Iterable[str] = ()
    ) -> PermissionPolicy:
        """The policy in force: these settings, the session's mode and rules on top.

        Rules that do not parse are skipped here; hosts validate them when they read
        their settings, so a bad rule is reported once, where it was written.
        """
        rules: list[Rule] = []
        specs = [
            *self.rules,
            *(RuleSpec(rule=r, effect="allow", source="session") for r in session_rules),
        ]
        for spec in specs:
            try:
                rules.append(parse_rule(spec.rule, spec.effect, spec.source))
            except ValueError:
                continue
        return PermissionPolicy(mode or self.mode, tuple(rules), self.protected)
