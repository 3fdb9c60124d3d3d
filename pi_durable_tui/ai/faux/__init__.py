"""The faux provider: scripted responses streamed like a real provider, offline.

The public face of a small package (model-layer.md 1.6; DESIGN.md section 5,
"the faux provider is a first-class provider"). ``_steps`` holds what a script
is made of (responses, match rules, errors, usage overrides) and their
builders; ``_selection`` chooses the step that answers a request, by queue
(in-code tests) or by position in the conversation (script files, so a
restarted process answers the same context the same way); ``_provider`` streams
the chosen step as events; ``_script`` reads and validates script files.
Imports run one way: ``_steps`` <- ``_selection`` <- ``_provider`` <- ``_script``.

The names most callers need are re-exported by ``pi_durable_tui.ai``.
"""

from pi_durable_tui.ai.faux._provider import ChooseBy, FauxProvider
from pi_durable_tui.ai.faux._script import (
    FauxScript,
    FauxScriptError,
    load_demo_script,
    load_faux_script,
    parse_faux_script,
)
from pi_durable_tui.ai.faux._selection import WhenExhausted, conversation_position
from pi_durable_tui.ai.faux._steps import (
    FauxError,
    FauxFactory,
    FauxMatch,
    FauxRequest,
    FauxResponse,
    FauxStep,
    FauxUsage,
    faux_error,
    faux_model,
    faux_response,
    faux_text,
    faux_thinking,
    faux_tool_call,
)

__all__ = [
    "ChooseBy",
    "FauxError",
    "FauxFactory",
    "FauxMatch",
    "FauxProvider",
    "FauxRequest",
    "FauxResponse",
    "FauxScript",
    "FauxScriptError",
    "FauxStep",
    "FauxUsage",
    "WhenExhausted",
    "conversation_position",
    "faux_error",
    "faux_model",
    "faux_response",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "load_demo_script",
    "load_faux_script",
    "parse_faux_script",
]
