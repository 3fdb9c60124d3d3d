"""The project's context files on another host, read through the environment (issue 17).

With ``--env ssh://...`` the project is on the remote host, so its
``AGENTS.md`` / ``CLAUDE.md`` files are read there, through the execution
environment, with the same candidates and cut as the local walk
(``app.files``). Every candidate is asked for at once: over SSH the SFTP
requests travel together, so the walk costs about one round trip, not one per
directory. The global file stays this machine's (the section adds it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pi_durable_tui.app.files import (
    MAX_CONTEXT_BYTES,
    ContextFile,
    context_candidates,
    context_text,
)
from pi_durable_tui.env import ExecutionEnv, FileError


async def _read(env: ExecutionEnv, path: str) -> bytes | None:
    try:
        return await env.read_binary_file(path, max_bytes=MAX_CONTEXT_BYTES + 1)
    except FileError:
        return None


async def remote_context_files(env: ExecutionEnv) -> list[ContextFile]:
    """The context files of ``env``'s real working directory, root first, read through ``env``."""
    try:
        real = await env.canonical_path(env.cwd)
    except FileError:
        real = env.cwd
    groups = context_candidates(real)
    paths = [path for group in groups for path in group]
    contents = dict(zip(paths, await asyncio.gather(*(_read(env, p) for p in paths)), strict=True))
    found: list[ContextFile] = []
    for group in groups:
        for path in group:
            data = contents[path]
            if data is not None:
                found.append(ContextFile(Path(path), context_text(path, data)))
                break
    return found
