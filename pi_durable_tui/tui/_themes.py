"""Themes: JSON files of named colour tokens, mapped onto Textual themes.

A theme file is ``{"name", "dark", "ansi", "syntax_theme", "vars", "colors"}``:
``colors`` maps every token of ``TOKENS`` to a colour (``#rrggbb``, a CSS colour
name, ``ansi_<name>`` for the terminal's own 16 colours, or the name of an entry
of ``vars``); ``syntax_theme`` names the Pygments style of code blocks. The
built-in themes are the JSON files of the repository's top-level ``themes/``
directory, shipped inside the package as ``pi_durable_tui/themes``; user themes
are ``$PIDURABLE_HOME/themes/*.json`` (default ``~/.pidurable``, DESIGN.md
section 5) and replace a built-in of the same name. A malformed file is skipped
and reported by name, never fatal: the screen falls back to ``dark``.

Each token becomes a Textual theme colour (``accent``, ``background``, ...) or a
CSS variable of the same name with dashes (``$diff-added``,
``$tool-card-background``), so widgets style themselves in ``.tcss``; the same
colours reach Rich renderables through ``Palette``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rich.color import Color as RichColor
from rich.style import Style
from textual.color import Color, ColorParseError
from textual.theme import Theme

DEFAULT_THEME = "dark"
"""The theme used when none is asked for, or when the asked one cannot be used."""

TOKENS = (
    "accent",
    "background",
    "foreground",
    "surface",
    "panel",
    "border",
    "success",
    "error",
    "warning",
    "muted",
    "diff_added",
    "diff_removed",
    "tool_card_background",
    "thinking_text",
    "user_message_background",
)
"""Every token a theme must define."""

_BASE_COLOURS = ("accent", "background", "foreground", "surface", "panel")
_STATE_COLOURS = ("success", "error", "warning")


class ThemeError(ValueError):
    """A theme file that cannot be used; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class ThemeSpec:
    """One parsed theme: its tokens resolved to colour strings.

    Attributes:
        name: The name ``/theme`` uses.
        dark: Whether the background is dark.
        ansi: Whether the colours are the terminal's own ANSI palette.
        syntax_theme: The Pygments style (or Rich's ``ansi_dark``/``ansi_light``).
        colors: Each token of ``TOKENS`` mapped to a colour Textual parses.
        source: The file it came from, or ``built-in``.
    """

    name: str
    dark: bool
    ansi: bool
    syntax_theme: str
    colors: Mapping[str, str]
    source: str = "built-in"

    def to_textual(self) -> Theme:
        """Return the Textual theme of this spec (tokens beyond the base ones are variables).

        Returns:
            A ``Theme`` to register with ``App.register_theme``.
        """
        colors = self.colors
        variables = {
            token.replace("_", "-"): colors[token]
            for token in TOKENS
            if token not in _BASE_COLOURS and token not in _STATE_COLOURS
        }
        variables["border-blurred"] = colors["border"]
        if self.ansi:
            # REMINDER: without these the cursor and selections of inputs are drawn in
            # colours a NO_COLOR terminal strips; reverse video survives any palette.
            variables["input-cursor-text-style"] = "reverse"
            variables["block-cursor-text-style"] = "reverse"
            # Textual derives these only for truecolour themes, and its Screen CSS uses them.
            variables["ansi-background"] = "ansi_black" if self.dark else "ansi_white"
            variables["ansi-foreground"] = "ansi_white" if self.dark else "ansi_black"
        return Theme(
            name=self.name,
            primary=colors["accent"],
            secondary=colors["accent"],
            accent=colors["accent"],
            warning=colors["warning"],
            error=colors["error"],
            success=colors["success"],
            foreground=colors["foreground"],
            background=colors["background"],
            surface=colors["surface"],
            panel=colors["panel"],
            dark=self.dark,
            ansi=self.ansi,
            variables=variables,
        )

    def palette(self) -> Palette:
        """Return the colours Rich renderables use (diffs, tool cards, thinking).

        Returns:
            The ``Palette`` of this theme.
        """
        return Palette({token: _rich_color(value) for token, value in self.colors.items()})


@dataclass(frozen=True, slots=True)
class Palette:
    """Theme colours as Rich colours, for renderables drawn outside CSS."""

    colors: Mapping[str, RichColor]

    def style(self, token: str, *, bold: bool = False, italic: bool = False) -> Style:
        """Return a Rich style with the token's colour as foreground.

        Args:
            token: A name of ``TOKENS``.
            bold: Whether the text is bold.
            italic: Whether the text is italic.

        Returns:
            The style.
        """
        return Style(color=self.colors[token], bold=bold, italic=italic)


@dataclass(slots=True)
class ThemeCatalog:
    """The themes that loaded, and what was wrong with those that did not.

    Attributes:
        themes: Usable themes by name (user themes replace built-ins of the same name).
        skipped: What was wrong with each malformed file, by the file's stem.
    """

    themes: dict[str, ThemeSpec] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def names(self) -> list[str]:
        """Return the theme names, sorted."""
        return sorted(self.themes)

    def problem_with(self, name: str) -> str | None:
        """Say why ``name`` cannot be used (malformed or unknown), or ``None`` if it can."""
        if name in self.themes:
            return None
        if name in self.skipped:
            return f"Theme {name!r} is malformed ({self.skipped[name]})"
        return f"Theme {name!r} is not available (themes: {', '.join(self.names())})"

    def resolve(self, name: str) -> tuple[ThemeSpec, str | None]:
        """Return the theme called ``name``, or the default with a sentence saying why.

        Args:
            name: The wanted theme.

        Returns:
            The theme to use, and ``None`` or the problem to report.
        """
        problem = self.problem_with(name)
        if problem is None:
            return self.themes[name], None
        return self.themes[DEFAULT_THEME], f"{problem}; using {DEFAULT_THEME!r}."

    def problems(self, shown: str) -> list[str]:
        """Return one sentence per malformed file except the one ``resolve(shown)`` reports.

        Args:
            shown: The theme name that was resolved.

        Returns:
            The sentences, in file order.
        """
        return [
            f"Theme {stem!r} is malformed ({reason}); it was skipped."
            for stem, reason in self.skipped.items()
            if stem != shown
        ]


def _rich_color(value: str) -> RichColor:
    return Color.parse(value).rich_color


def parse_theme(text: str, source: str, default_name: str) -> ThemeSpec:
    """Parse one theme file.

    Args:
        text: The file's JSON text.
        source: Where it came from, for messages.
        default_name: The name to use when the file has no ``name`` (its stem).

    Returns:
        The theme.

    Raises:
        ThemeError: The JSON is invalid, a token is missing or a colour does not parse.
    """
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as error:
        raise ThemeError(f"invalid JSON at line {error.lineno}: {error.msg}") from None
    if not isinstance(data, dict):
        raise ThemeError("the file must hold a JSON object")
    name = data.get("name", default_name)
    colors = data.get("colors")
    defined_vars = data.get("vars", {})
    if not isinstance(name, str) or not name:
        raise ThemeError('"name" must be a non-empty string')
    if not isinstance(colors, dict) or not isinstance(defined_vars, dict):
        raise ThemeError('"colors" (and "vars", if present) must be objects')
    missing = [token for token in TOKENS if token not in colors]
    if missing:
        raise ThemeError(f"missing colors: {', '.join(missing)}")
    resolved: dict[str, str] = {}
    for token in TOKENS:
        value = colors[token]
        value = defined_vars.get(value, value) if isinstance(value, str) else value
        if not isinstance(value, str):
            raise ThemeError(f"colors.{token} must be a string")
        try:
            Color.parse(value)
        except ColorParseError:
            raise ThemeError(f"colors.{token}: {value!r} is not a colour") from None
        resolved[token] = value
    syntax_theme = data.get("syntax_theme", "monokai" if data.get("dark", True) else "default")
    if not isinstance(syntax_theme, str):
        raise ThemeError('"syntax_theme" must be a string')
    return ThemeSpec(
        name=name,
        dark=bool(data.get("dark", True)),
        ansi=bool(data.get("ansi", False)),
        syntax_theme=syntax_theme,
        colors=resolved,
        source=source,
    )


def user_themes_dir() -> Path:
    """Return ``$PIDURABLE_HOME/themes`` (``~/.pidurable/themes`` by default)."""
    home = os.environ.get("PIDURABLE_HOME") or str(Path.home() / ".pidurable")
    return Path(home) / "themes"


def load_themes(user_dir: Path | None = None) -> ThemeCatalog:
    """Load the built-in themes, then the user's ``*.json`` themes over them.

    Args:
        user_dir: The directory of user themes; ``user_themes_dir()`` when omitted.

    Returns:
        The catalog; a malformed file is skipped and named in ``skipped``.
    """
    catalog = ThemeCatalog()
    builtin = resources.files("pi_durable_tui") / "themes"
    for entry in sorted(builtin.iterdir(), key=lambda item: item.name):
        if entry.name.endswith(".json"):
            spec = parse_theme(entry.read_text("utf-8"), "built-in", entry.name[:-5])
            catalog.themes[spec.name] = spec
    directory = user_dir if user_dir is not None else user_themes_dir()
    paths = sorted(directory.glob("*.json")) if directory.is_dir() else []
    for path in paths:
        try:
            spec = parse_theme(path.read_text("utf-8"), str(path), path.stem)
        except (ThemeError, OSError, UnicodeDecodeError) as error:
            catalog.skipped[path.stem] = f"{path.name}: {error}"
            continue
        catalog.themes[spec.name] = spec
    return catalog
