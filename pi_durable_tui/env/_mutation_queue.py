"""The per-file mutation queue of ``edit`` and ``write`` (R121).

Two read-modify-write tool calls on one file must not interleave, or the second
would overwrite the first's change with a stale copy. ``FileMutationQueue``
serializes them within the process: a call holds the file's slot while it reads
and writes, the next call on the same file waits, calls on other files never
wait. It is a convention between tools, not a lock: ``bash`` and other
processes are not stopped.

The key is the environment's ``id`` (equal ids share files, so fresh environment
objects built for each tool call share a queue) plus the file's canonical path,
so two spellings of one file (a relative path, a symlink) queue together. A file
that does not exist yet is keyed by its parent's canonical path plus its name,
and, failing that, by its absolute path. Slots are dropped when nobody holds or
waits for them, so the queue does not grow with the number of files touched.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._protocol import ExecutionEnv


class _Slot:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class FileMutationQueue:
    """Serializes mutations of one file across environment objects of the same ``id``.

    Use one instance for the whole process (the coding tools share it)::

        async with queue.hold(env, path):
            text = await env.read_text_file(path)
            await env.write_file(path, change(text))
    """

    def __init__(self) -> None:
        self._slots: dict[tuple[str, str], _Slot] = {}

    async def key(self, env: ExecutionEnv, path: str) -> tuple[str, str]:
        """The queue key of ``path`` in ``env``: ``(env.id, canonical path)``.

        Args:
            env: The environment the path belongs to.
            path: The file, as the tool was given it.

        Returns:
            The environment id and the most canonical spelling that could be found.
        """
        absolute = env.absolute_path(path)
        try:
            return env.id, await env.canonical_path(absolute)
        except FileError:
            pass
        parent, name = os.path.split(absolute)
        try:
            return env.id, os.path.join(await env.canonical_path(parent), name)
        except FileError:
            return env.id, absolute

    @asynccontextmanager
    async def hold(self, env: ExecutionEnv, path: str) -> AsyncIterator[None]:
        """Wait for the file's turn and hold it for the body of the ``async with``.

        Args:
            env: The environment the path belongs to.
            path: The file to mutate.
        """
        key = await self.key(env, path)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot()
        slot.users += 1
        try:
            async with slot.lock:
                yield
        finally:
            slot.users -= 1
            if slot.users == 0:
                del self._slots[key]

    def __len__(self) -> int:
        """How many files are held or waited for now."""
        return len(self._slots)
