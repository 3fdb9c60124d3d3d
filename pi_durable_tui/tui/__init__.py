"""Layer 6: the Textual screen of pidurable.

``PidurableApp`` renders a ``pi_durable_tui.app.ScreenModel`` and calls a
``pi_durable_tui.app.Controller``; it imports nothing else of pidurable (no
harness, kernel or storage: DESIGN.md section 1). Private modules: ``_app``
(the app and its change dispatch), ``_main_screen`` (typed text painted at
once), ``_keys`` and ``_commands`` (what keys and slash commands do),
``_transcript`` (windowing), ``_block_views``,
``_live_view``, ``_markdown_blocks``, ``_render_blocks``, ``_render_tools``,
``_render_context`` (what blocks look like), ``_task_panel``, ``_queue_panel``,
``_notices``, ``_footer``, ``_editor``, ``_completion``, ``_picker``, ``_help``,
``_trust_prompt`` (the other parts of the screen), ``_themes`` (JSON themes) and ``_exit``
(closing on every path, the crash log).
"""

from pi_durable_tui.tui._app import PidurableApp
from pi_durable_tui.tui._themes import (
    DEFAULT_THEME,
    TOKENS,
    ThemeCatalog,
    ThemeError,
    ThemeSpec,
    load_themes,
    user_themes_dir,
)

__all__ = [
    "DEFAULT_THEME",
    "TOKENS",
    "PidurableApp",
    "ThemeCatalog",
    "ThemeError",
    "ThemeSpec",
    "load_themes",
    "user_themes_dir",
]
