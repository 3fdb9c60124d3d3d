"""Conversation state: documents, entries, run control, spend, the agent (R25, R29-R31, R115).

A part of the harness, not a public face: the public names (the document and
entry kinds such as ``AGENT_DOC`` and ``USER``, ``AgentChange``, ``configure``,
``text_of`` ...) are imported from ``pi_durable_tui.harness``. The other parts of
the harness use the rest: the readers and writers of ``pi.live``, ``pi.usage``
and the entries, shared by conversations, tasks and views.

Its private modules, lowest first (each imports only the ones before it):

- ``_docs``: the built-in documents and entry kinds (reference 1.4, R25);
- ``_live``: run control in ``pi.live``: the run, the streamed partial, the tool
  round (reference 1.5);
- ``_usage``: the spend ledger ``pi.usage`` (R115, R116);
- ``_entries``: building the entries the harness appends (R98);
- ``_agent``: a conversation's agent in ``pi.agent``: ``configure`` and
  resolution against the registry (R29-R31);
- ``_exposure``: which resolved tools a request offers (deferred tools and
  ``tool_search``, issue 16).

Outside itself this part imports only ``harness.extensions`` (the tool and
section types an agent and a diagnostic entry name) and ``ai`` (token counts).
"""

from pi_durable_tui.harness.state._agent import (
    UNSET,
    AgentChange,
    ExtensionEdit,
    ResolvedAgent,
    ToolRemoval,
    configure,
    resolve_agent,
    stored_model,
)
from pi_durable_tui.harness.state._docs import (
    AGENT_DOC,
    ASSISTANT,
    BUILTIN_DOCS,
    COMPACTION,
    INBOX_DOC,
    LIVE_DOC,
    LOADED_TOOLS_DOC,
    PERMISSIONS_DOC,
    PROVIDER_DOC,
    RESET,
    SHELL,
    SYSTEM,
    TOOL_RESULT,
    USAGE_DOC,
    USER,
)
from pi_durable_tui.harness.state._entries import (
    append_assistant,
    append_tool_result,
    append_user,
    dump,
    message_of,
    text_of,
    tool_result_message,
    user_message,
)
from pi_durable_tui.harness.state._exposure import (
    TOOL_SEARCH,
    deferred_names,
    exposed_tools,
    schema_tokens,
)
from pi_durable_tui.harness.state._live import (
    compaction_of,
    end_run,
    is_busy,
    remove_compaction,
    run_inputs,
    slot_of_task,
)
from pi_durable_tui.harness.state._usage import add_model_usage, add_tool_usage, total_usage

__all__ = [
    "AGENT_DOC",
    "ASSISTANT",
    "BUILTIN_DOCS",
    "COMPACTION",
    "INBOX_DOC",
    "LIVE_DOC",
    "LOADED_TOOLS_DOC",
    "PERMISSIONS_DOC",
    "PROVIDER_DOC",
    "RESET",
    "SHELL",
    "SYSTEM",
    "TOOL_RESULT",
    "TOOL_SEARCH",
    "UNSET",
    "USAGE_DOC",
    "USER",
    "AgentChange",
    "ExtensionEdit",
    "ResolvedAgent",
    "ToolRemoval",
    "add_model_usage",
    "add_tool_usage",
    "append_assistant",
    "append_tool_result",
    "append_user",
    "compaction_of",
    "configure",
    "deferred_names",
    "dump",
    "end_run",
    "exposed_tools",
    "is_busy",
    "message_of",
    "remove_compaction",
    "resolve_agent",
    "run_inputs",
    "schema_tokens",
    "slot_of_task",
    "stored_model",
    "text_of",
    "tool_result_message",
    "total_usage",
    "user_message",
]
