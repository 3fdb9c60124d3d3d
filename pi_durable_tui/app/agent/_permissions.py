"""The app's permission settings: mode and rules from settings and the command line (issue 13).

``PermissionChoices`` is what the command line chose (``--permission-mode``,
``--allow``, ``--deny``, and whether a screen can ask); ``permission_settings``
combines it with the settings files into the harness's ``PermissionSettings``:

- the mode: ``--permission-mode``, else ``permission_mode`` from the settings,
  else ``auto-edit``; the mode key's choice (a session document) wins over both
  while the session lives (``Harness.set_permission_mode``);
- rules, each with its source: ``command line``, ``project settings``
  (``.pidurable/settings.json``: its ``deny`` at once, its ``allow`` only once the
  user trusted the file's content, like every key that widens powers), ``user
  settings`` (``~/.pidurable/settings.json``); deny wins over allow wherever it is
  written;
- protected paths: ``.pidurable`` and ``.git`` in any directory of the project
  and ``$PIDURABLE_HOME``'s own files (settings, sessions): a change there always
  needs a decision (``.git`` because a repository's config can run programs:
  ``core.fsmonitor``);
- without a screen (``-p``) a call that would wait is refused at once, with the
  flags that allow it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pi_durable_tui.app.files import SettingsError, home
from pi_durable_tui.harness import (
    PermissionMode,
    PermissionSettings,
    RuleError,
    RuleSpec,
    parse_rule,
)

DEFAULT_MODE: PermissionMode = "auto-edit"
"""The mode of a session nobody chose one for."""
HEADLESS_HINT = (
    "rerun with --permission-mode auto, or with --allow 'RULE' (for example "
    "--allow 'bash(make test)'), or add the rule to permissions.allow in your settings"
)
"""How the user can allow what print mode refused (the model reads it too)."""


class PermissionRules(BaseModel):
    """``permissions`` in ``settings.json``: ``{"allow": [...], "deny": [...]}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PermissionChoices:
    """What the command line chose about permissions.

    Args:
        mode: ``--permission-mode`` (None: the settings' ``permission_mode``).
        allow: ``--allow`` rules, in order.
        deny: ``--deny`` rules, in order.
        interactive: Whether a screen can ask the user (False in ``-p``).
    """

    mode: PermissionMode | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    interactive: bool = True


def check_rules(choices: PermissionChoices) -> None:
    """Reject a malformed ``--allow``/``--deny`` rule.

    Raises:
        SettingsError: Naming the flag and the rule.
    """
    for flag, rules in (("--allow", choices.allow), ("--deny", choices.deny)):
        for rule in rules:
            try:
                parse_rule(rule, "allow", "command line")
            except RuleError as error:
                raise SettingsError(f"{flag}: {error}") from None


def settings_rules(sections: Sequence[tuple[Path, str, Mapping[str, Any]]]) -> list[RuleSpec]:
    """The rules of the settings files, each with its source.

    Args:
        sections: ``(file, source, permissions section)`` of each file, the
            project's holding only what is in force (its ``deny`` at once, its
            ``allow`` once the user trusted it: ``_live_settings``).

    Raises:
        SettingsError: A rule that does not parse, naming the file and the key.
    """
    specs: list[RuleSpec] = []
    for path, source, section in sections:
        for effect in ("deny", "allow"):
            listed = section.get(effect) or []
            for index, rule in enumerate(listed if isinstance(listed, list) else []):
                try:
                    parse_rule(rule, effect, source)
                except RuleError as error:
                    raise SettingsError(f"{path}: permissions.{effect}[{index}]: {error}") from None
                specs.append(RuleSpec(rule=rule, effect=effect, source=source))
    return specs


def protected_paths() -> tuple[str, ...]:
    """The files of pidurable (and ``.git``): a change always needs a decision.

    In ``$PIDURABLE_HOME``: its settings and other top-level files, and the
    session stores; not the demos' workspaces, which are workspaces like others.
    """
    own = os.path.normpath(os.path.abspath(Path(home()).expanduser()))
    return (".pidurable", ".git", f"{own}/*.json", f"{own}/*.sqlite*", f"{own}/sessions")


def permission_settings(
    choices: PermissionChoices, mode: PermissionMode | None, rules: list[RuleSpec]
) -> PermissionSettings:
    """The harness's permission settings now.

    Args:
        choices: The command line's choices.
        mode: ``permission_mode`` from the settings, if set.
        rules: The settings files' rules (``settings_rules``).
    """
    cli = [
        *(RuleSpec(rule=r, effect="deny", source="command line") for r in choices.deny),
        *(RuleSpec(rule=r, effect="allow", source="command line") for r in choices.allow),
    ]
    return PermissionSettings(
        mode=choices.mode or mode or DEFAULT_MODE,
        rules=(*cli, *rules),
        protected=protected_paths(),
        on_ask="wait" if choices.interactive else "refuse",
        hint="" if choices.interactive else HEADLESS_HINT,
    )
