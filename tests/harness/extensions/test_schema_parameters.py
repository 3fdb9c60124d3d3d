"""A tool declared by a raw JSON schema offers it unchanged and keeps every argument (issue 16)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pi_durable_tui.harness import ToolResult, define_tool, schema_parameters

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}},
    "required": ["path"],
}


async def _echo(args: object, api: object) -> ToolResult:
    return ToolResult(content="ok")


def test_the_tool_spec_offers_the_declared_schema_unchanged() -> None:
    tool = define_tool(
        "srv_tool", description="d", parameters=schema_parameters(SCHEMA), execute=_echo
    )
    assert tool.spec() == {"name": "srv_tool", "description": "d", "parameters": SCHEMA}


def test_a_tool_shares_one_declaration_and_hands_out_copies_of_it() -> None:
    tool = define_tool(
        "srv_tool", description="d", parameters=schema_parameters(SCHEMA), execute=_echo
    )
    assert tool.declaration is tool.declaration  # built once, read by every request
    copied = tool.spec()
    assert copied == tool.declaration
    copied["parameters"]["required"].append("depth")
    assert tool.declaration["parameters"]["required"] == ["path"]


def test_validated_arguments_keep_every_field_the_model_sent() -> None:
    model = schema_parameters(SCHEMA)
    args = model.model_validate({"path": "a", "depth": 2, "extra": [1]})
    assert args.model_dump() == {"path": "a", "depth": 2, "extra": [1]}


def test_arguments_that_are_not_an_object_are_rejected() -> None:
    with pytest.raises(ValidationError):
        schema_parameters(SCHEMA).model_validate(["a"])


def test_a_schema_that_is_not_an_object_schema_is_refused() -> None:
    with pytest.raises(ValueError, match="object schema"):
        schema_parameters({"type": "string"})


def test_a_schema_without_a_type_is_taken_as_an_object_schema() -> None:
    assert schema_parameters({"properties": {}}).model_json_schema() == {
        "type": "object",
        "properties": {},
    }
