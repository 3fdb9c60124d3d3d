"""Layer 3: the harness. Conversations, submissions, extensions and the built-in tasks.

A ``Harness`` is a kernel Session plus conversations, a registry of extensions
(tools, prompt sections, hooks, wrappers, tasks), run policy (``Settings``), an
environment factory, and three built-in durable tasks: ``pi.generation`` (a model
turn), ``pi.tool`` (a tool call) and ``pi.compaction`` (a summary of older
context). Everything a screen shows is committed state: views, watches and the
task graph (DESIGN.md section 3; reference rules R21-R127).

Usage::

    registry = create_registry(my_extension)
    harness = await Harness.open(storage, models=models, registry=registry)
    root = await harness.root(agent=AgentChange(model=ModelRef("faux", "faux-1")))
    submission = await root.submit(Input("Fix the failing test"))
    record = await submission.wait()
    await harness.close()
"""

from pi_durable_tui.harness._agent import (
    UNSET,
    AgentChange,
    ExtensionEdit,
    ResolvedAgent,
    ToolRemoval,
    configure,
)
from pi_durable_tui.harness._bounds import (
    BoundedText,
    OutputLimits,
    bound_text,
    format_size,
    truncation_notice,
)
from pi_durable_tui.harness._builtins import create_registry
from pi_durable_tui.harness._context import ContextView
from pi_durable_tui.harness._conversation import Conversation
from pi_durable_tui.harness._define import (
    Continue,
    Diagnostic,
    EntryMessage,
    Extension,
    HookSet,
    Section,
    SectionInput,
    SectionWrapper,
    Tool,
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
from pi_durable_tui.harness._docs import (
    AGENT_DOC,
    ASSISTANT,
    COMPACTION,
    INBOX_DOC,
    LIVE_DOC,
    PROVIDER_DOC,
    RESET,
    SYSTEM,
    TOOL_RESULT,
    USAGE_DOC,
    USER,
)
from pi_durable_tui.harness._entries import text_of
from pi_durable_tui.harness._errors import (
    ConversationBusy,
    HarnessClosed,
    HarnessError,
    RegistryIncomplete,
    SubmissionRejected,
    UnknownSubmission,
)
from pi_durable_tui.harness._events import EventStream, watch_events
from pi_durable_tui.harness._harness import Harness
from pi_durable_tui.harness._output import OutputChange, ToolOutputBuffer
from pi_durable_tui.harness._ports import ToolApi, ToolConversation
from pi_durable_tui.harness._registry import Registry, RegistrySnapshot
from pi_durable_tui.harness._runtime import BoundConversation, HarnessRuntime
from pi_durable_tui.harness._services import EnvFactory, EnvTarget
from pi_durable_tui.harness._settings import (
    CompactionSettings,
    ProgressSettings,
    RetrySettings,
    Settings,
)
from pi_durable_tui.harness._submission_types import EntryDraft, Input, WhenBusy, Write
from pi_durable_tui.harness._submissions import Submission
from pi_durable_tui.harness._task_def import HarnessTask, define_task
from pi_durable_tui.harness._throttle import ProgressThrottle
from pi_durable_tui.harness._view_mount import UnknownConversation
from pi_durable_tui.harness._views import ViewState, ViewWatch

__all__ = [
    "AGENT_DOC",
    "ASSISTANT",
    "COMPACTION",
    "INBOX_DOC",
    "LIVE_DOC",
    "PROVIDER_DOC",
    "RESET",
    "SYSTEM",
    "TOOL_RESULT",
    "UNSET",
    "USAGE_DOC",
    "USER",
    "AgentChange",
    "BoundConversation",
    "BoundedText",
    "CompactionSettings",
    "ContextView",
    "Continue",
    "Conversation",
    "ConversationBusy",
    "Diagnostic",
    "EntryDraft",
    "EntryMessage",
    "EnvFactory",
    "EnvTarget",
    "EventStream",
    "Extension",
    "ExtensionEdit",
    "Harness",
    "HarnessClosed",
    "HarnessError",
    "HarnessRuntime",
    "HarnessTask",
    "HookSet",
    "Input",
    "OutputChange",
    "OutputLimits",
    "ProgressSettings",
    "ProgressThrottle",
    "Registry",
    "RegistryIncomplete",
    "RegistrySnapshot",
    "ResolvedAgent",
    "RetrySettings",
    "Section",
    "SectionInput",
    "SectionWrapper",
    "Settings",
    "Submission",
    "SubmissionRejected",
    "Tool",
    "ToolApi",
    "ToolBlock",
    "ToolCallInfo",
    "ToolControl",
    "ToolConversation",
    "ToolOutputBuffer",
    "ToolRemoval",
    "ToolResult",
    "ToolWrapper",
    "UnknownConversation",
    "UnknownSubmission",
    "ViewState",
    "ViewWatch",
    "WhenBusy",
    "Write",
    "bound_text",
    "configure",
    "create_registry",
    "define_extension",
    "define_task",
    "define_tool",
    "format_size",
    "hook",
    "section",
    "text_of",
    "truncation_notice",
    "watch_events",
    "wrap_section",
    "wrap_tool",
]
