"""``tool_search``: the model's search over deferred tools, which loads what it finds (issue 16).

When the schemas of the deferred tools (the MCP servers' tools) would take more
than ``settings.tool_search_share`` of the context window, the model gets this
tool instead of them (``state._exposure``). A query's words are matched against
each tool's name and description; the matches come back with their names,
descriptions and JSON schemas, and are added to the conversation's ``pi.tools``
loaded set in the same tool call, so they are offered from the next request on
(after a restart too: the set is a document). Replay-safe: running it again adds
nothing new.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from pi_durable_tui.harness.extensions import Tool, ToolApi, ToolResult, define_tool
from pi_durable_tui.harness.state import LOADED_TOOLS_DOC, TOOL_SEARCH
from pi_durable_tui.kernel import Tx

_WORD = re.compile(r"[a-z0-9]+")


class ToolSearchArguments(BaseModel):
    """What the model asks for."""

    query: str = Field(description="Words naming what the tool does, or a tool's full name")
    limit: int = Field(default=5, ge=1, le=20, description="At most this many tools")


def matching_tools(tools: Sequence[Tool[Any]], query: str, limit: int) -> list[Tool[Any]]:
    """The tools that best match ``query``: an exact name first, then by words in common."""
    exact = [tool for tool in tools if tool.name == query.strip()]
    if exact:
        return exact
    words = set(_WORD.findall(query.lower()))
    scored = []
    for index, tool in enumerate(tools):
        text = f"{tool.name.replace('__', ' ').replace('_', ' ')} {tool.description}".lower()
        score = len(words & set(_WORD.findall(text)))
        if score:
            scored.append((-score, index, tool))
    return [tool for _, _, tool in sorted(scored, key=lambda item: item[:2])[:limit]]


def tool_search_tool(tools: Sequence[Tool[Any]]) -> Tool[ToolSearchArguments]:
    """The search tool over ``tools`` (the deferred ones)."""
    deferred = [tool for tool in tools if tool.deferred]

    async def execute(args: ToolSearchArguments, api: ToolApi) -> ToolResult:
        found = matching_tools(deferred, args.query, args.limit)
        if not found:
            return ToolResult(content=f"No tool matches {args.query!r}; try other words.")
        names = [tool.name for tool in found]
        conversation_id = api.conversation_id

        async def load(tx: Tx) -> None:
            doc = await tx.doc(LOADED_TOOLS_DOC, conversation_id)
            loaded = list(doc.get("loaded") or [])
            doc["loaded"] = loaded + [name for name in names if name not in loaded]

        await api.commit(load)
        lines = [f"Loaded {len(found)} tool(s); call them by name from now on:"]
        for tool in found:
            spec = tool.spec()
            schema = json.dumps(spec["parameters"])
            lines.append(f"- {spec['name']}: {spec['description']}\n  schema: {schema}")
        return ToolResult(content="\n".join(lines))

    return define_tool(
        TOOL_SEARCH,
        description=(
            "Find tools that are not offered yet (MCP servers' tools) by what they do; "
            "the matches are loaded and can be called from the next step on."
        ),
        parameters=ToolSearchArguments,
        execute=execute,
        replay="safe",
        read_only=True,
    )
