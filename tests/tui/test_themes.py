"""Themes: built-in JSON files, user themes, malformed ones reported, NO_COLOR honoured."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
from pi_durable_tui.tui import TOKENS, PidurableApp, ThemeError, load_themes
from pi_durable_tui.tui._themes import parse_theme

REPO_THEMES = Path(__file__).parents[2] / "themes"


def test_the_built_in_themes_are_the_top_level_json_files_and_define_every_token() -> None:
    catalog = load_themes(Path("/nonexistent"))
    assert catalog.names() == ["ansi", "dark", "high-contrast", "light"]
    assert sorted(path.stem for path in REPO_THEMES.glob("*.json")) == catalog.names()
    for spec in catalog.themes.values():
        assert set(spec.colors) == set(TOKENS)
    assert all(value.startswith("ansi_") for value in catalog.themes["ansi"].colors.values())
    assert catalog.themes["ansi"].to_textual().ansi


def test_tokens_become_textual_colours_and_css_variables() -> None:
    spec = load_themes(Path("/nonexistent")).themes["dark"]
    theme = spec.to_textual()
    assert theme.primary == spec.colors["accent"] == "#61afef"
    assert theme.variables["diff-added"] == spec.colors["diff_added"]
    assert theme.variables["tool-card-background"] == "#21252b"


def test_a_user_theme_is_loaded_and_replaces_a_built_in_of_the_same_name(themes_dir: Path) -> None:
    dark = json.loads((REPO_THEMES / "dark.json").read_text())
    dark["colors"]["accent"] = "#ff00ff"
    (themes_dir / "mine.json").write_text(json.dumps({**dark, "name": "mine"}))
    (themes_dir / "dark.json").write_text(json.dumps(dark))
    catalog = load_themes(themes_dir)
    assert "mine" in catalog.names()
    assert catalog.themes["dark"].colors["accent"] == "#ff00ff"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "invalid JSON at line 1"),
        ('{"colors": {"accent": "#fff"}}', "missing colors: background, foreground"),
        ("[]", "the file must hold a JSON object"),
    ],
)
def test_a_malformed_theme_file_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(ThemeError, match=re.escape(problem)):
        parse_theme(text, "x.json", "x")


def test_a_colour_that_does_not_parse_is_named() -> None:
    dark = json.loads((REPO_THEMES / "dark.json").read_text())
    dark["colors"]["diff_added"] = "grass"
    with pytest.raises(ThemeError, match=r"colors\.diff_added: .grass. is not a colour"):
        parse_theme(json.dumps(dark), "x.json", "x")


async def test_a_malformed_theme_is_reported_by_name_and_the_default_is_used(
    model: StaticScreenModel, controller: RecordingController, themes_dir: Path
) -> None:
    (themes_dir / "solar.json").write_text('{"name": "solar", "colors": {}}')
    (themes_dir / "broken.json").write_text("{")
    app = PidurableApp(model, controller, theme="solar", themes_dir=themes_dir)
    # 120 columns: at 80 the two lines wrap over six rows, more than the notice bar's four.
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.theme == "dark"
        texts = [notice.text for notice in app.notice_bar.shown_notices]
        assert any(
            t.startswith("Theme 'broken' is malformed (broken.json: invalid JSON") for t in texts
        )
        assert any(
            t.startswith("Theme 'solar' is malformed (solar.json: missing colors: accent")
            and t.endswith("; using 'dark'.")
            for t in texts
        )


def _fill_colours(svg: str) -> set[str]:
    return set(re.findall(r"fill: (#[0-9a-f]{6})", svg))


async def test_no_color_removes_every_colour_from_the_screen(
    model: StaticScreenModel, controller: RecordingController, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = PidurableApp(model, controller, theme="light")
    async with coloured.run_test() as pilot:
        await pilot.pause()
        assert len(_fill_colours(coloured.export_screenshot())) > 5
    monkeypatch.setenv("NO_COLOR", "1")
    plain = PidurableApp(model, RecordingController(model), theme="light")
    async with plain.run_test() as pilot:
        await pilot.pause()
        # Only the terminal's own foreground and background remain.
        assert len(_fill_colours(plain.export_screenshot())) <= 2
        assert plain.theme == "ansi"
