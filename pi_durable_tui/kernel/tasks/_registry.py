"""``TaskRegistry``: the task definitions a Session can run, published on change.

The scheduler takes a snapshot of the registry at every reservation and phase
boundary (R33, R35). Publishing is synchronous and notifies subscribers, which
wakes the scheduler to reconsider blocked tasks (R32, R44). Definitions are
compared by identity, so installing a new definition object for a kind is how hot
reload is noticed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from pi_durable_tui.kernel.tasks._definitions import TaskDefinition


class TaskRegistry:
    """Task definitions by name.

    Args:
        definitions: Initial definitions; names must be unique.

    Raises:
        ValueError: When two definitions share a name.
    """

    def __init__(self, definitions: Iterable[TaskDefinition] = ()) -> None:
        self._definitions: dict[str, TaskDefinition] = {}
        self._listeners: list[Callable[[], None]] = []
        for definition in definitions:
            if definition.name in self._definitions:
                raise ValueError(f"Task name {definition.name} is defined twice")
            self._definitions[definition.name] = definition

    def get(self, name: str) -> TaskDefinition | None:
        """Return the definition of a task kind, or ``None``."""
        return self._definitions.get(name)

    def snapshot(self) -> Mapping[str, TaskDefinition]:
        """Return a read-only copy of the current definitions."""
        return MappingProxyType(dict(self._definitions))

    def install(self, *definitions: TaskDefinition) -> None:
        """Install or replace definitions (a replacement keeps its position), then publish."""
        for definition in definitions:
            self._definitions[definition.name] = definition
        self._publish()

    def uninstall(self, *names: str) -> None:
        """Remove definitions by name, then publish."""
        for name in names:
            self._definitions.pop(name, None)
        self._publish()

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` after every publication; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _publish(self) -> None:
        for listener in list(self._listeners):
            listener()
