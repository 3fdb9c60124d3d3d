"""Extensions: what authors write, and the registry that holds it (7.1-7.4; R30-R35, R117).

A part of the harness, not a public face: authors import the public names
(``define_tool``, ``define_extension``, ``Tool``, ``ToolApi``, ``Registry``,
``define_task``, ``OutputLimits`` ...) from ``pi_durable_tui.harness``. The other
parts of the harness use the rest.

Its private modules, lowest first (each imports only the ones before it):

- ``_bounds``: output limits and the retention rules that bound a tool's text
  (R97, R102, section 3.5);
- ``_task_def``: ``define_task`` and ``HarnessTask``, durable tasks written against
  the harness runtime (R35);
- ``_hook_calls``: calling a callback that may be sync or async (R78, R117);
- ``_ports``: ``ToolApi`` and ``ToolConversation``, what a tool's ``execute`` holds
  (R102-R107, R118);
- ``_schema_parameters``: tool parameters given as a raw JSON schema (issue 16);
- ``_define``: tools, sections, hooks, wrappers and extensions (R30, R31, R89, R95);
- ``_registry``: the registry of extensions and tasks, and the built-in task
  names (R32, R35).

The lowest part of the harness but one: outside itself it imports only
``harness._submission_types`` (for the ``ToolConversation`` protocol).
"""

from pi_durable_tui.harness.extensions._bounds import (
    BoundedText,
    OutputLimits,
    bound_text,
    decode_output,
    encode_output,
    format_size,
    head_window,
    tail_window,
    truncation_notice,
)
from pi_durable_tui.harness.extensions._define import (
    Continue,
    Diagnostic,
    EntryMessage,
    Extension,
    HookSet,
    Section,
    SectionInput,
    SectionWrapper,
    Tool,
    ToolAccess,
    ToolBlock,
    ToolCallInfo,
    ToolControl,
    ToolResult,
    ToolWrapper,
    define_extension,
    define_tool,
    hook,
    section,
    wrap_section,
    wrap_tool,
)
from pi_durable_tui.harness.extensions._hook_calls import HOOK_FAILED, call_hook, invoke
from pi_durable_tui.harness.extensions._ports import Severity, ToolApi, ToolConversation
from pi_durable_tui.harness.extensions._registry import BUILTIN_TASKS, Registry, RegistrySnapshot
from pi_durable_tui.harness.extensions._schema_parameters import (
    SchemaArguments,
    schema_parameters,
)
from pi_durable_tui.harness.extensions._task_def import HarnessTask, define_task

__all__ = [
    "BUILTIN_TASKS",
    "HOOK_FAILED",
    "BoundedText",
    "Continue",
    "Diagnostic",
    "EntryMessage",
    "Extension",
    "HarnessTask",
    "HookSet",
    "OutputLimits",
    "Registry",
    "RegistrySnapshot",
    "SchemaArguments",
    "Section",
    "SectionInput",
    "SectionWrapper",
    "Severity",
    "Tool",
    "ToolAccess",
    "ToolApi",
    "ToolBlock",
    "ToolCallInfo",
    "ToolControl",
    "ToolConversation",
    "ToolResult",
    "ToolWrapper",
    "bound_text",
    "call_hook",
    "decode_output",
    "define_extension",
    "define_task",
    "define_tool",
    "encode_output",
    "format_size",
    "head_window",
    "hook",
    "invoke",
    "schema_parameters",
    "section",
    "tail_window",
    "truncation_notice",
    "wrap_section",
    "wrap_tool",
]
