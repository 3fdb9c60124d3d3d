"""Markdown files with YAML front matter: skills and custom commands (issue 16).

A file may open with a front matter block, YAML between a first line ``---``
and the next line ``---``; the rest is its body. Claude Code reads the same
shape, so its ``.claude/skills`` and ``.claude/commands`` work unchanged.
``read_markdown_file`` returns the mapping and the body, or raises
``FrontMatterError`` with one line naming the file and what is wrong (never a
traceback: the callers turn it into one notice). ``markdown_roots`` says where
each kind of file lives, highest precedence first: the project's
``.pidurable/<kind>/``, the user's ``$PIDURABLE_HOME/<kind>/``, then the
project's ``.claude/<kind>/``.

The files are content the user put there: a skill is only listed to the model,
and a command only becomes a user message, so reading them widens no power.
``yaml`` is imported when a file has front matter, not before the first paint.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_durable_tui.app.files._home import home

MAX_BYTES = 256 * 1024
"""A larger skill or command file is refused: it is meant as instructions."""
_FENCE = "---"


class FrontMatterError(ValueError):
    """A skill or command file that cannot be used; the message names the file."""


@dataclass(frozen=True, slots=True)
class MarkdownFile:
    """A Markdown file split into its front matter and its body."""

    path: Path
    meta: dict[str, Any]
    body: str


@dataclass(frozen=True, slots=True)
class MarkdownRoot:
    """A directory of skills or commands, and which source it is (for display)."""

    source: str
    directory: Path


def markdown_roots(cwd: str, kind: str) -> list[MarkdownRoot]:
    """The directories holding ``kind`` (``skills``, ``commands``), highest precedence first."""
    project = Path(cwd)
    return [
        MarkdownRoot("project", project / ".pidurable" / kind),
        MarkdownRoot("user", home() / kind),
        MarkdownRoot("claude", project / ".claude" / kind),
    ]


def read_markdown_file(path: Path) -> MarkdownFile:
    """Read ``path`` and split off its front matter.

    Raises:
        FrontMatterError: Unreadable, too large, not UTF-8, an unclosed block, YAML
            that does not parse or is not a mapping.
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as error:
        raise FrontMatterError(f"{path}: cannot be read: {error.strerror}") from None
    if len(data) > MAX_BYTES:
        raise FrontMatterError(f"{path}: larger than {MAX_BYTES // 1024} KiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FrontMatterError(f"{path}: not UTF-8 (byte {error.start})") from None
    return split_front_matter(text, path)


def split_front_matter(text: str, path: Path) -> MarkdownFile:
    """Split ``text`` (the content of ``path``) into front matter and body.

    Raises:
        FrontMatterError: See ``read_markdown_file``.
    """
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != _FENCE:
        return MarkdownFile(path, {}, text)
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == _FENCE), None)
    if end is None:
        raise FrontMatterError(f"{path}: the front matter opened by '---' is never closed")
    meta = _parse_yaml("".join(lines[1:end]), path)
    return MarkdownFile(path, meta, "".join(lines[end + 1 :]))


def _parse_yaml(block: str, path: Path) -> dict[str, Any]:
    import yaml  # here, not at import: the screen reads this package before its first paint

    try:
        value = yaml.safe_load(block)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(error, "problem", None) or "invalid YAML"
        message = f"front matter is not valid YAML: {problem}{where}"
        raise FrontMatterError(f"{path}: {message}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FrontMatterError(f"{path}: front matter must be 'key: value' lines")
    return {str(key): item for key, item in value.items()}


def text_field(meta: dict[str, Any], key: str, path: Path) -> str | None:
    """A front matter value that must be text (a number is taken as its text).

    Raises:
        FrontMatterError: The value is a list or a mapping.
    """
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise FrontMatterError(f"{path}: '{key}' must be text")
    return str(value).strip()
