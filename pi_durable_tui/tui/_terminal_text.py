"""The text builders of every widget: nothing they build holds a control sequence (issue 13).

The view model's values are already terminal-safe (``app.terminal_safe`` runs
when they are built). This module is the TUI's own funnel, so a widget that
builds text from any other string cannot forget it: the only ``Text``,
``Content``, Markdown and Syntax a TUI module may use are these, and each passes every
string it is given through ``terminal_safe`` (``tests/test_architecture.py``
fails when a TUI module imports Rich's or Textual's text classes itself).

- ``Text``: Rich ``Text``; its constructor and ``append`` make strings safe;
- ``Content``: Textual ``Content``; its constructor, ``styled`` and
  ``assemble`` make strings safe before spans are measured, so styles stay
  where they belong;
- ``plain(label)``: a label string as safe content, never read as markup (an
  option of a list, a title);
- ``markdown(source, ...)`` and ``syntax(code, lexer, ...)``: Rich ``Markdown``
  (raw HTML shown as text) and ``Syntax`` of the safe text (imported on first
  use: markdown-it and Pygments are slow to load and the first paint must not wait).

Styles pidurable applies itself (colours, bold, links it makes) are spans, not
characters, and are kept.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, cast

from rich.style import Style
from rich.text import Text as _RichText
from textual.content import Content as _TextualContent

from pi_durable_tui.app import terminal_safe

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from rich.markdown import Markdown
    from rich.syntax import Syntax


class Text(_RichText):
    """Rich ``Text`` whose strings are terminal-safe."""

    def __init__(self, text: str = "", style: str | Style = "", **options: Any) -> None:
        super().__init__(terminal_safe(text), style, **options)

    def append(self, text: _RichText | str, style: str | Style | None = None) -> _RichText:
        """Append safe text (a ``Text`` built here is already safe)."""
        if isinstance(text, str):
            text = terminal_safe(text)
        return super().append(text, style)


class Content(_TextualContent):
    """Textual ``Content`` whose strings are terminal-safe."""

    def __init__(
        self,
        text: str = "",
        spans: Any = None,
        cell_length: int | None = None,
        strip_control_codes: bool = True,
    ) -> None:
        super().__init__(terminal_safe(text), spans, cell_length, strip_control_codes)

    @classmethod
    def styled(
        cls,
        text: str,
        style: Any = "",
        cell_length: int | None = None,
        strip_control_codes: bool = True,
    ) -> Content:
        """A styled content of the safe text."""
        if not text:
            return cls()
        styled = super().styled(terminal_safe(text), style, cell_length, strip_control_codes)
        return cast(Content, styled)  # built by ``cls``

    @classmethod
    def assemble(cls, *parts: Any, end: str = "", strip_control_codes: bool = True) -> Content:
        """Join parts (strings, ``(text, style)`` pairs, contents) made safe first."""
        safe = [
            terminal_safe(part)
            if isinstance(part, str)
            else (terminal_safe(part[0]), part[1])
            if isinstance(part, tuple)
            else part
            for part in parts
        ]
        joined = super().assemble(*safe, end=end, strip_control_codes=strip_control_codes)
        return cast(Content, joined)  # built by ``cls``


def plain(label: str | _TextualContent) -> _TextualContent:
    """A label as content: a string is shown as it is, safe, never read as markup."""
    return Content(label) if isinstance(label, str) else label


def markdown(source: str, **options: Any) -> Markdown:
    """A Rich ``Markdown`` of the safe source (``options`` as ``Markdown`` takes them).

    Raw HTML in the source shows as the text it is. Rich parses with markdown-it's
    CommonMark preset, which reads ``<div>`` or ``<script>...</script>`` as HTML,
    and then draws no HTML token at all, so a tag the model wrote (``wrap it in a
    <details> block``) vanished from the transcript and a paragraph that began with
    one vanished whole. The same parse finds where a streamed answer's blocks
    settle (``_markdown_blocks``), so both agree.
    """
    from rich.markdown import Markdown  # markdown-it loads on the first assistant block.

    safe = terminal_safe(source)
    rendered = Markdown("", **options)
    rendered.markup, rendered.parsed = safe, _markdown_parser().parse(safe)
    return rendered


@functools.cache
def _markdown_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # Rich's own parser (``Markdown.__init__``), with raw HTML read as text.
    return MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")


def syntax(code: str, lexer: str, **options: Any) -> Syntax:
    """A Rich ``Syntax`` of the safe code (Pygments loads on first use)."""
    from rich.syntax import Syntax  # Pygments is heavy: load it when a preview shows.

    return Syntax(terminal_safe(code), lexer, **options)
