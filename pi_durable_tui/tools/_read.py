r"""The ``read`` tool: a window of a text file, or an image (reference 3.1).

Text is shown at most 2,000 lines or 50 KB at a time, whole lines, with a note
saying how to continue (``offset``); each line is prefixed with its number
(``  12\t``) so the model can cite lines and pick offsets. The file is scanned by
the environment, which keeps only the shown lines, so a 10 GB log costs the
window, not the file. Images (PNG, JPEG, GIF, WebP, BMP, by their bytes) come
back as image content; other binary files are refused with a message saying what
to do instead. ``read`` is replay-safe: after a crash it simply runs again.
"""

from __future__ import annotations

import base64

from pydantic import BaseModel, Field

from pi_durable_tui.ai import ImageContent, TextContent
from pi_durable_tui.env import FileError, FileInfo, scan_bytes
from pi_durable_tui.harness import OutputLimits, Tool, ToolApi, ToolResult, define_tool, format_size
from pi_durable_tui.tools._file_kinds import SNIFF_BYTES, looks_binary, sniff_image
from pi_durable_tui.tools._paths import PATH_ACCESS, read_path_variants
from pi_durable_tui.tools._read_window import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    ReadError,
    ScannedLines,
    select_lines,
)
from pi_durable_tui.tools._workspace import resolve_tool_path

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""Images larger than this are refused (providers reject them anyway)."""

DESCRIPTION = (
    "Read a file. Text output is truncated to 2000 lines or 50KB, whichever comes first; "
    "use offset and limit for large files and continue with offset until complete. Each "
    "line is prefixed with its line number and a tab (not part of the file: never copy "
    "them into edit's oldText). Images (png, jpg, gif, webp, bmp) are returned as images."
)


class ReadArgs(BaseModel):
    """Arguments of ``read``."""

    path: str = Field(description="Path to the file, relative to the working directory or absolute")
    offset: int | None = Field(default=None, description="Line number to start from (1-indexed)")
    limit: int | None = Field(default=None, description="Maximum number of lines to read")


def numbered(text: str, first_line: int) -> str:
    """Prefix each line with its number and a tab, like ``cat -n``."""
    if not text:
        return text
    lines = text.split("\n")
    width = len(str(first_line + len(lines) - 1))
    shown = [f"{first_line + i:>{width}}\t{line}" for i, line in enumerate(lines)]
    if not lines[-1]:
        shown[-1] = ""  # the empty piece after a final newline is not a line to cite
    return "\n".join(shown)


# What ``exists`` answers False for (the protocol: "whether file_info would succeed").
_ABSENT = ("not_found", "not_directory")


async def _described(api: ToolApi, display: str, absolute: str) -> tuple[str, FileInfo]:
    """The path to read and its ``file_info``: as given, or the first name variant found (3.1).

    ``file_info`` answers what ``exists`` would, so each name costs one call of the
    environment (one thread hop on this machine) instead of two.
    """
    env = api.env
    try:
        return absolute, await env.file_info(absolute, abort=api.aborted)
    except FileError as error:
        if error.code not in _ABSENT:
            raise  # what ``exists`` raises
        missing = error
    for variant in read_path_variants(absolute):
        try:
            return variant, await env.file_info(variant, abort=api.aborted)
        except FileError as error:
            if error.code not in _ABSENT:
                raise
    raise ReadError(f"Cannot read {display}: {missing.message}") from None


async def _execute(args: ReadArgs, api: ToolApi) -> ToolResult:
    env = api.env
    display, absolute = resolve_tool_path(env, args.path)
    path, info = absolute, None
    try:
        # The common case in one environment call (one thread hop): a readable file.
        head = await env.read_binary_file(path, max_bytes=SNIFF_BYTES, abort=api.aborted)
    except FileError:
        if api.aborted.is_set():
            raise
        # Missing, a directory, unreadable: ``file_info`` says which, or finds a
        # name variant (3.1), and the messages are the ones a described path gets.
        path, info = await _described(api, display, absolute)
        if info.kind == "directory":
            raise ReadError(f"{display} is a directory; use bash (ls) to list it") from None
        head = await env.read_binary_file(path, max_bytes=SNIFF_BYTES, abort=api.aborted)
    mime = sniff_image(head)
    if mime is not None:
        info = info or await env.file_info(path, abort=api.aborted)
        if info.size > MAX_IMAGE_BYTES:
            raise ReadError(
                f"{display} is an image ({mime}) of {format_size(info.size)}, larger than "
                f"{format_size(MAX_IMAGE_BYTES)}; it cannot be sent to the model"
            )
        data = await env.read_binary_file(path, abort=api.aborted)
        return ToolResult(
            content=[
                TextContent(text=f"Read image file {display} [{mime}]"),
                ImageContent(data=base64.b64encode(data).decode("ascii"), mime_type=mime),
            ],
            details={"path": display, "mime_type": mime, "size": info.size},
        )
    if looks_binary(head):
        info = info or await env.file_info(path, abort=api.aborted)
        raise ReadError(
            f"{display} is a binary file ({format_size(info.size)}); read shows text only. "
            f"Use bash to inspect it, for example: xxd {display} | head"
        )
    start = max(args.offset or 1, 1) - 1
    wanted = DEFAULT_MAX_LINES if args.limit is None else min(args.limit, DEFAULT_MAX_LINES)
    if len(head) < SNIFF_BYTES and not api.aborted.is_set():
        # The sniffed head is the whole file: select from it, no further environment
        # call (two thread hops fewer on this machine for a small file).
        scan = scan_bytes(
            head, start_line=start, max_lines=wanted, max_bytes=DEFAULT_MAX_BYTES, path=path
        )
    else:
        async with await env.open_binary_reader(path, abort=api.aborted) as reader:
            scan = await reader.scan_lines(
                start_line=start, max_lines=wanted, max_bytes=DEFAULT_MAX_BYTES, abort=api.aborted
            )
    window = select_lines(
        ScannedLines(
            scan.lines,
            scan.start_line,
            scan.total_lines,
            scan.first_line_bytes,
            scan.stopped != "end",
        ),
        args.offset,
        args.limit,
        display_path=display,
    )
    for remark in window.diagnostics:
        api.diagnostic(remark["severity"], remark["message"], remark.get("code"))  # type: ignore[arg-type]
    details: dict[str, object] = {
        "path": display,
        "first_line": window.first_line,
        "shown_lines": window.shown_lines,
        "total_lines": window.total_lines,
    }
    if window.truncation is not None:
        details["truncation"] = window.truncation.to_json()
    return ToolResult(content=numbered(window.content, window.first_line), details=details)


def create_read_tool() -> Tool[ReadArgs]:
    """Create the ``read`` tool (replay-safe)."""
    return define_tool(
        "read",
        description=DESCRIPTION,
        parameters=ReadArgs,
        execute=_execute,
        replay="safe",
        read_only=True,
        access=PATH_ACCESS,
        # REMINDER: the window is bounded before numbering; the numbers must not make
        # the harness bound it a second time (R97).
        output=OutputLimits(
            max_bytes=DEFAULT_MAX_BYTES + 12 * DEFAULT_MAX_LINES, max_lines=DEFAULT_MAX_LINES
        ),
    )
