"""Named failpoints for crash tests (reliability.md sections 11.2 and 15, rows K2 and A1).

A failpoint is a named place in the code, such as just before or just after a
storage COMMIT, where a crash test can make the process die (or fail) at an
exact, countable moment. Modules define their points once, at import::

    BEFORE_COMMIT = failpoints.define("sqlite.before_commit")
    ...
    BEFORE_COMMIT.hit()

and the test harness arms them through one environment variable, read once when
this module is imported::

    PIDURABLE_FAILPOINT=name:N[:action][,name:N[:action]...]

- ``name`` is a defined point, for example ``sqlite.before_commit`` or
  ``sqlite.after_commit``;
- ``N`` (1 or more) is the occurrence that fires: the N-th ``hit()`` of that point
  in this process;
- ``action`` is ``kill`` (the default: the process sends itself SIGKILL, so
  nothing after it runs, not even ``finally`` blocks) or ``raise`` (``hit()``
  raises ``FailpointError``, an ambiguous failure for the caller).

Example: ``PIDURABLE_FAILPOINT=sqlite.after_commit:5`` kills the process right
after its fifth SQLite COMMIT. A malformed value raises ``ValueError`` at import,
so a crash test never runs silently unarmed; a name that no module defines is
reported by ``undefined()``, which harnesses should check.

When the variable is unset, ``hit()`` is one attribute test.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import Literal

ENV_VAR = "PIDURABLE_FAILPOINT"

Action = Literal["kill", "raise"]


class FailpointError(RuntimeError):
    """Raised by a failpoint armed with the ``raise`` action."""


@dataclass(frozen=True, slots=True)
class Arm:
    """What the environment asks of one failpoint: fire at occurrence ``at``."""

    at: int
    action: Action


def parse(spec: str) -> dict[str, Arm]:
    """Parse a ``PIDURABLE_FAILPOINT`` value.

    Args:
        spec: The value, in the format of the module docstring; blank means none.

    Returns:
        The armed points by name.

    Raises:
        ValueError: When the value is malformed.
    """
    arms: dict[str, Arm] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        parts = item.split(":")
        if len(parts) not in (2, 3) or not parts[0]:
            raise ValueError(f"{ENV_VAR}: expected name:N[:action], got {item!r}")
        name, count = parts[0], parts[1]
        action = parts[2] if len(parts) == 3 else "kill"
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"{ENV_VAR}: occurrence must be a positive integer in {item!r}")
        if action not in ("kill", "raise"):
            raise ValueError(f"{ENV_VAR}: action must be kill or raise in {item!r}")
        if name in arms:
            raise ValueError(f"{ENV_VAR}: {name} is armed twice")
        arms[name] = Arm(int(count), "kill" if action == "kill" else "raise")
    return arms


_ARMS: dict[str, Arm] = parse(os.environ.get(ENV_VAR, ""))
_DEFINED: dict[str, Failpoint] = {}


class Failpoint:
    """One named place in the code that a crash test can make fail.

    Attributes:
        name: The point's name, as written in ``PIDURABLE_FAILPOINT``.
        hits: How many times ``hit()`` ran (counted only while the point is armed).
    """

    __slots__ = ("_arm", "hits", "name")

    def __init__(self, name: str, arm: Arm | None) -> None:
        self.name = name
        self.hits = 0
        self._arm = arm

    def hit(self) -> None:
        """Count one occurrence; die or raise when it is the armed one.

        Raises:
            FailpointError: When this occurrence is armed with ``raise``.
        """
        if self._arm is None:
            return
        self.hits += 1
        if self.hits != self._arm.at:
            return
        if self._arm.action == "kill":
            # REMINDER: SIGKILL, not sys.exit or os._exit: nothing may run after this
            # point (no finally, no atexit, no flush), exactly like `kill -9`.
            os.kill(os.getpid(), signal.SIGKILL)
        raise FailpointError(f"failpoint {self.name} fired at occurrence {self.hits}")


def define(name: str) -> Failpoint:
    """Return the failpoint called ``name``, creating it on first use.

    Args:
        name: A dotted name, ``<module>.<place>``.

    Returns:
        The point; the same object for the same name.
    """
    point = _DEFINED.get(name)
    if point is None:
        point = _DEFINED[name] = Failpoint(name, _ARMS.get(name))
    return point


def undefined() -> list[str]:
    """Return the armed names that no module has defined (likely typos)."""
    return sorted(set(_ARMS) - set(_DEFINED))


def rearm(spec: str | None) -> None:
    """Replace the armed points and reset every count (for in-process tests).

    Args:
        spec: A value in the ``PIDURABLE_FAILPOINT`` format, or ``None`` for none.
    """
    _ARMS.clear()
    _ARMS.update(parse(spec or ""))
    for name, point in _DEFINED.items():
        point._arm = _ARMS.get(name)
        point.hits = 0
