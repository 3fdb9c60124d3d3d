"""Tool parameters given as a raw JSON schema instead of a pydantic model (issue 16).

A tool whose schema comes from elsewhere (an MCP server's ``inputSchema``) has no
pydantic model to write. ``schema_parameters(schema)`` builds one: its
``model_json_schema()`` returns that schema unchanged (so ``Tool.spec`` offers the
model exactly what the source declared), and validating arguments only checks that
they are a JSON object, keeping every field (``args.model_dump()`` returns them).
Checking them against the schema is left to the tool's source, which reports a
bad argument as a tool error (R96), rather than to a second, possibly different
JSON-schema implementation here.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from pi_durable_tui.storage.json_ops import JsonObject


class SchemaArguments(BaseModel):
    """Arguments of a tool declared by a raw JSON schema: every field is kept as sent."""

    model_config = ConfigDict(extra="allow", frozen=True)

    declared_schema: ClassVar[JsonObject] = {"type": "object"}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Return (a copy of) the declared schema, whatever pydantic would generate."""
        return copy.deepcopy(cls.declared_schema)


def schema_parameters(
    schema: JsonObject, *, name: str = "SchemaArguments"
) -> type[SchemaArguments]:
    """Return a parameters model for ``define_tool`` that offers ``schema`` as it is.

    Args:
        schema: A JSON schema of an object (``{"type": "object", ...}``); a schema
            without a ``type`` is taken as an object schema.
        name: The model's class name (shows in validation errors).

    Returns:
        A model class whose instances hold the arguments the model sent.

    Raises:
        ValueError: When the schema declares a type other than ``object``.
    """
    declared = copy.deepcopy(schema)
    kind = declared.setdefault("type", "object")
    if kind != "object":
        raise ValueError(f"A tool's parameters must be an object schema, got type {kind!r}")
    return type(name, (SchemaArguments,), {"declared_schema": declared})
