"""The tool task ``pi.tool``: one tool call from resolution to its result entry (R93-R107; issue 7).

A part of the harness, not a public face: ``ToolOutputBuffer`` and ``OutputChange``
are imported from ``pi_durable_tui.harness``; the
built-in registry takes ``TOOL_TASK``.

Its private modules, lowest first (each imports only the ones before it):

- ``_output``: the bounded buffer a running tool's output streams into (R102,
  R103, R105);
- ``_tool_api``: ``ToolCallApi``, the ``api`` a tool's ``execute`` receives (the
  ``ToolApi`` surface only), and ``CallProgress`` behind it, the task's side
  with the progress commits (R102-R104);
- ``_approval``: the permission gate and durable approvals (issue 13);
- ``_arguments``: validating a call's arguments, and the error for argument
  text that was not a JSON object;
- ``_tool_task``: the task: call phase, execution, result (R93-R101, R106).

Outside itself this part imports the runtime and services, and the parts
``extensions`` and ``state``; never a conversation's inbox nor the generation.
"""

from pi_durable_tui.harness.tool._approval import (
    CHOICES,
    Choice,
    DecisionRejected,
    commit_decision,
    session_policy,
    set_session_mode,
)
from pi_durable_tui.harness.tool._output import OutputChange, ToolOutputBuffer
from pi_durable_tui.harness.tool._tool_task import TOOL_TASK

__all__ = [
    "CHOICES",
    "TOOL_TASK",
    "Choice",
    "DecisionRejected",
    "OutputChange",
    "ToolOutputBuffer",
    "commit_decision",
    "session_policy",
    "set_session_mode",
]
