"""The status line and the two-line footer (durable-behavior.md 5.3).

Footer line 1: ``↑in ↓out R<cache read> W<cache write> $cost`` (zero parts
left out except the cost), context use ``<pct>%/<window>`` (``?`` when unknown,
red above 90%), then the working directory. Line 2: the conversation label
(``main`` dimmed, a subagent highlighted), ``provider/model`` or ``no model``,
``thinking:<level>``, the permission mode ``mode:<mode>`` (issue 13: ``plan``
and ``auto`` stand out, the one refusing every change and the one asking
nothing; ``auto-edit`` and ``ask`` are quiet) and key hints. Each line is cut with ``…`` rather than
wrapped: a wrapped first line pushed the model line out of an 80-column footer.
"""

from __future__ import annotations

from textual.widgets import Static

from pi_durable_tui.app import Footer
from pi_durable_tui.tui._terminal_text import Content, plain

CONTEXT_ALERT_PERCENT = 90.0
MODE_STYLES = {"plan": "$background on $primary bold", "auto": "$background on $warning bold"}
"""The modes that stand out in the footer (every other mode is ``$secondary``)."""


def mode_label(mode: str) -> tuple[str, str]:
    """The footer's ``mode:<mode>`` and its style; empty when no mode is known yet."""
    if not mode:
        return "", ""
    style = MODE_STYLES.get(mode, "$secondary")
    return (f" mode:{mode} " if mode in MODE_STYLES else f"mode:{mode}"), style


def format_count(value: int) -> str:
    """Format a token count compactly: ``950``, ``1.2k``, ``12k``, ``1.5M``."""
    if value < 1000:
        return str(value)
    if value < 10_000:
        return f"{value / 1000:.1f}k"
    if value < 1_000_000:
        return f"{value // 1000}k"
    return f"{value / 1_000_000:.1f}M"


def footer_lines(footer: Footer, hints: str) -> Content:
    """Return the two footer lines.

    Args:
        footer: Spend, context, cwd, model and thinking level.
        hints: The key hints of line 2.

    Returns:
        Styled content of two lines.
    """
    spend = [f"↑{format_count(footer.tokens_in)}", f"↓{format_count(footer.tokens_out)}"]
    if footer.cache_read:
        spend.append(f"R{format_count(footer.cache_read)}")
    if footer.cache_write:
        spend.append(f"W{format_count(footer.cache_write)}")
    spend.append(f"${footer.cost:.3f}")
    percent = footer.context_percent
    window = format_count(footer.context_window) if footer.context_window else "?"
    context = f"?/{window}" if percent is None else f"{percent:.1f}%/{window}"
    alert = percent is not None and percent > CONTEXT_ALERT_PERCENT
    label = footer.conversation_label
    mode = mode_label(footer.permission_mode)
    return Content.assemble(
        (" ".join(spend), "$foreground"),
        "  ",
        (context, "$error bold" if alert else "$foreground"),
        "  ",
        (footer.cwd, "$text-muted"),
        "\n",
        (label, "$text-muted" if label == "main" else "$accent bold"),
        "  ",
        (footer.model or "no model", "$foreground" if footer.model else "$warning"),
        "  ",
        (f"thinking:{footer.thinking_level}", "$secondary"),
        "  ",
        *((mode, "  ") if mode[0] else ()),
        *((f"+{footer.attached} attached", "$accent"), "  ") if footer.attached else (),
        (hints, "$text-muted"),
    )


class FooterBar(Static):
    """The footer under the editor."""

    DEFAULT_CSS = """
    FooterBar {
        height: 2;
        padding: 0 1;
        background: $surface;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def show(self, footer: Footer, hints: str) -> None:
        """Show new footer values.

        Args:
            footer: The values.
            hints: The key hints of line 2.
        """
        self.update(footer_lines(footer, hints))


class StatusLine(Static):
    """``Working... (esc to abort)`` and friends; hidden while idle."""

    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        padding: 0 1;
        color: $accent;
        text-style: bold;
    }
    """

    def show(self, status: str) -> None:
        """Show the status, or hide the line when it is empty."""
        self.update(plain(status))
        self.display = bool(status)
