"""What planning one JSONL commit produces, and what publishing it reports (R130).

``Plan`` holds every byte a commit writes, serialized before any I/O, with the
``Expectation`` of each sidecar it appends to and the ``NewContent`` of each live
document it changes; ``Written`` is what ``Publisher.write`` reports back. They
live apart from ``_plan`` so the index can name them without importing the
planner (which reads the index).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pi_durable_tui.storage.jsonl._files import RevisionKind


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a sidecar holds before a commit appends to it (all from the index)."""

    size: int
    """Confirmed length of the file in bytes."""
    keep_from: int
    """Ordinal of the oldest revision still needed."""
    ordinals: int
    """Revisions confirmed so far: the newest one's ordinal is ``ordinals - 1``."""
    last: tuple[int, RevisionKind, int]
    """``(seq, kind, version)`` of the newest revision."""


@dataclass(slots=True)
class NewContent:
    """A live document's new current value: the JSON text of a base, or a parsed value."""

    text: str | None = None
    value: dict[str, Any] | None = None


@dataclass(slots=True)
class Plan:
    """Everything a commit writes, serialized before any I/O."""

    main: bytes = b""
    entry_spans: list[tuple[int, int]] = field(default_factory=list)
    """``(offset in main, length)`` of each entry line, in ``batch.entries`` order."""
    task_spans: list[tuple[int, int]] = field(default_factory=list)
    submission_spans: list[tuple[int, int]] = field(default_factory=list)
    sidecars: list[tuple[int, bytes, bool]] = field(default_factory=list)
    """``(document_id, line, created)`` per affected sidecar."""
    sidecar_bytes: dict[int, int] = field(default_factory=dict)
    """Bytes appended to each affected sidecar."""
    expected: dict[int, Expectation] = field(default_factory=dict)
    """What each existing affected sidecar must hold before the append."""
    contents: dict[int, NewContent] = field(default_factory=dict)
    """New current content of each live document the commit creates or changes."""
    reclaims: list[tuple[int, bytes | None]] = field(default_factory=list)
    """``(document_id, content)`` to rewrite a sidecar with, or ``None`` to remove it."""


@dataclass(slots=True)
class Written:
    """What ``Publisher.write`` did."""

    main_start: int
    """Offset of the commit's first byte in ``main.jsonl``."""
    reclaimed: dict[int, bool] = field(default_factory=dict)
    """Whether each planned reclamation succeeded."""
    rescanned: dict[int, tuple[int, int]] = field(default_factory=dict)
    """``(first ordinal, confirmed size)`` of sidecars found unlike their expectation
    and checked in full (a crash left unconfirmed records, or an open reclaimed them)."""
