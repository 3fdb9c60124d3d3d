"""The model's context: derivation, the system prompt and the request (R71-R82, R89, R127).

A part of the harness, not a public face: ``ContextView`` is imported from
``pi_durable_tui.harness``. The other parts use the rest: ``load_context`` and
``RangeCache`` (the active range of a conversation), the prompt's replay and
planning, and ``build_request``.

Its private modules, lowest first (each imports only the ones before it):

- ``_prompt_state``: the prompt system messages replay to (R79);
- ``_context``: the active range, context edits and tool-result order, derived
  whole or grown by newer entries, each view with its replayed prompt (R71-R76, R127);
- ``_loading``: ``load_context`` and the ``RangeCache`` that spares its reads (R71, R127);
- ``_prompt``: system prompt sections and dynamic tools as transcript patches
  (R77-R82);
- ``_request``: one model request from a context's messages (R75, R79, R81, R89).

Pure derivation over entries: this part imports nothing else of the harness.
"""

from pi_durable_tui.harness.context._context import ContextView, order_tool_results, tool_calls
from pi_durable_tui.harness.context._loading import RangeCache, load_context
from pi_durable_tui.harness.context._prompt import (
    SystemEntryDraft,
    plan_system_entries,
    render_section,
)
from pi_durable_tui.harness.context._prompt_state import PromptState, replay_prompt
from pi_durable_tui.harness.context._request import ValidatedMessages, build_request

__all__ = [
    "ContextView",
    "PromptState",
    "RangeCache",
    "SystemEntryDraft",
    "ValidatedMessages",
    "build_request",
    "load_context",
    "order_tool_results",
    "plan_system_entries",
    "render_section",
    "replay_prompt",
    "tool_calls",
]
