"""The registry of extensions and tasks a harness runs with (R32, R35).

``Registry`` holds the built-in tasks (``pi.generation``, ``pi.tool``,
``pi.compaction``; they cannot be uninstalled) and the installed extensions in
install order. ``install`` validates the would-be registry and raises without
publishing when it is invalid; installing a name that is installed replaces it in
place; ``uninstall`` removes by name and a later install appends. Every change is
published synchronously to subscribers (the harness then refreshes the kernel's
task registry, which wakes the scheduler to reconsider blocked tasks).

Build one with ``create_registry()`` (it adds the built-in tasks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pi_durable_tui.harness.extensions._define import Extension, check_extension
from pi_durable_tui.harness.extensions._task_def import HarnessTask

BUILTIN_TASKS = ("pi.generation", "pi.tool", "pi.compaction")
"""The tasks every harness registry must hold before a Harness opens (R21, R32)."""


@dataclass(frozen=True, slots=True)
class RegistrySnapshot:
    """The registry at one moment: extensions in install order and every task by name."""

    extensions: tuple[Extension, ...]
    tasks: Mapping[str, HarnessTask]

    def extension(self, name: str) -> Extension | None:
        """Return the installed extension with this name."""
        for extension in self.extensions:
            if extension.name == name:
                return extension
        return None


class Registry:
    """Installed extensions and task definitions, published on every change.

    Args:
        builtins: Task definitions that are always present.
    """

    def __init__(self, builtins: Sequence[HarnessTask] = ()) -> None:
        self._builtins = {task.name: task for task in builtins}
        self._extensions: list[Extension] = []
        self._listeners: list[Callable[[], None]] = []
        self._snapshot = self._build(self._extensions)

    def snapshot(self) -> RegistrySnapshot:
        """Return the current snapshot (immutable; a change makes a new one)."""
        return self._snapshot

    def install(self, *extensions: Extension) -> None:
        """Install extensions, replacing installed ones of the same name in place (R32).

        Raises:
            ValueError: When the result would be invalid (a task name used twice,
                or an extension breaking ``check_extension``); nothing changes then.
        """
        updated = list(self._extensions)
        for extension in extensions:
            for index, installed in enumerate(updated):
                if installed.name == extension.name:
                    updated[index] = extension
                    break
            else:
                updated.append(extension)
        self._publish(updated)

    def uninstall(self, *extensions: Extension | str) -> None:
        """Remove installed extensions by name (whichever object is installed)."""
        names = {e if isinstance(e, str) else e.name for e in extensions}
        self._publish([e for e in self._extensions if e.name not in names])

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` after every change; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _build(self, extensions: list[Extension]) -> RegistrySnapshot:
        tasks = dict(self._builtins)
        for extension in extensions:
            check_extension(extension)
            for task in extension.tasks:
                if task.name in tasks:
                    raise ValueError(
                        f"Task {task.name} of extension {extension.name} is already defined"
                    )
                tasks[task.name] = task
        return RegistrySnapshot(tuple(extensions), tasks)

    def _publish(self, extensions: list[Extension]) -> None:
        self._snapshot = self._build(extensions)  # raises before anything changes
        self._extensions = extensions
        for listener in list(self._listeners):
            listener()
