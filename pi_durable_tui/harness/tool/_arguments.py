"""What the model is told when a tool call's arguments cannot be used (R93).

Two problems, each with its own words, because the model can only fix what it
is told: arguments that were not a JSON object at all (a provider keeps that
text in the call's ``raw_arguments`` field, ``ai.RAW_ARGUMENTS_FIELD``, and
gives ``{}`` as the arguments), and a JSON object that does not fit the tool's
parameters (pydantic's complaints, one per field). Without the first, text that
was not JSON reached validation as ``{}`` and the model read ``path: Field
required`` for a call that had sent a path.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from pi_durable_tui.ai import RAW_ARGUMENTS_FIELD
from pi_durable_tui.harness.extensions import Tool

SHOWN_RAW = 200
"""Characters of the text that was not JSON quoted back to the model (it may be megabytes)."""


def raw_arguments(block: dict[str, Any]) -> str | None:
    """The argument text of a stored tool-call block that was not a JSON object, if any."""
    raw = block.get(RAW_ARGUMENTS_FIELD)
    return raw if isinstance(raw, str) else None


def not_json_problem(tool_name: str, raw: str) -> str:
    """The tool error for arguments that were not a JSON object: what came, and what to send."""
    shown = raw[:SHOWN_RAW] + ("..." if len(raw) > SHOWN_RAW else "")
    return (
        f"Invalid arguments for {tool_name}: they are not a JSON object "
        f"({len(raw)} characters: {shown!r}); send the arguments again as one JSON object "
        "of the tool's parameters"
    )


def validate(tool: Tool[Any], arguments: dict[str, Any]) -> tuple[BaseModel | None, str]:
    """Validate ``arguments`` against the tool's parameters.

    Returns:
        The validated model and ``""``; or ``None`` and the problem, one
        ``field: message`` per complaint.
    """
    try:
        return tool.parameters.model_validate(arguments), ""
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in item['loc']) or '(root)'}: {item['msg']}"
            for item in error.errors()
        )
        return None, f"Invalid arguments for {tool.name}: {problems}"
