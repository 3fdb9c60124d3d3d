"""Reading ``--mode json`` output with the wire's own decoder and mirror (issue 15).

``--mode json`` prints the message family of ``app._wire``; tests parse it with
that module's ``decode`` and ``Mirror``, so the family has one codec, tested in
``tests/app/test_wire.py``, and no test keeps a parser of its own.
"""

from __future__ import annotations

from typing import Any

from pi_durable_tui.app._wire import MAX_HOST_MESSAGE, Mirror, decode


def messages(text: str) -> list[dict[str, Any]]:
    """Each printed line, decoded (a line that is not a message fails the test)."""
    return [decode(line, limit=MAX_HOST_MESSAGE) for line in text.splitlines() if line]


def mirrored(found: list[dict[str, Any]]) -> Mirror:
    """The followed conversation as a client holds it after ``found``."""
    mirror = Mirror()
    for message in found:
        mirror.apply(message)
    return mirror


def entries(found: list[dict[str, Any]], *, snapshots: bool = True) -> list[dict[str, Any]]:
    """Every entry the lines carried, once each, in order.

    Args:
        found: Decoded lines.
        snapshots: Whether the entries of snapshots count; without them, only
            what the commits of this run appended (a continued session's
            snapshot repeats the newest entries an earlier run printed).
    """
    kinds = ("snapshot", "commit") if snapshots else ("commit",)
    seen: dict[int, dict[str, Any]] = {}
    for message in found:
        if message["t"] in kinds:
            for entry in message.get("entries") or []:
                seen.setdefault(entry["id"], entry)
    return list(seen.values())


def is_streamed(message: dict[str, Any]) -> bool:
    """A commit of streamed model output (the partial message in ``pi.live``)."""
    if message["t"] != "commit":
        return False
    return any(
        op["path"][:2] == ["generation", "message"]
        for doc in message.get("docs") or []
        if doc["kind"] == "pi.live"
        for op in doc["ops"]
    )


def of_type(found: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The messages of one type."""
    return [message for message in found if message["t"] == kind]
