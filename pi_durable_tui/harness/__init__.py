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

This module is its one public face: every name below is imported from here.
Behind it the harness has nine parts (sub-packages of private modules, each
with a face of its own that the other parts import) and a few private modules
of its own. They stack in levels; each imports only levels listed before it, so
imports run one way:

0. ``permissions/``: the permission engine (modes, rules, protected paths, the
   read-only command reader; pure, it imports nothing else of the harness);
1. ``_errors``, ``_settings``, ``_submission_types``, ``_progress``: the error
   tree, run policy, what a host submits, and throttled progress commits (streamed
   partials and tool output); ``context/``: the model's context, the system prompt
   and the request (pure, it imports nothing else of the harness);
2. ``extensions/``: what authors write (tools, sections, hooks, wrappers, tasks)
   and the registry;
3. ``state/``: the built-in documents and entries, ``pi.live``, ``pi.usage`` and
   the agent;
4. ``views/``: views, watches and agent events; ``_services``: what the parts
   share (session, models, registry, settings, environments);
5. ``conversations/``: the ``Conversation`` handle, the inbox, submissions and
   the ends of a run;
6. ``_runtime``: what a harness task's phases receive; ``_session_hooks``: the
   harness's answers to the kernel's hooks;
7. the tasks ``compaction/`` (``pi.compaction``) and ``tool/`` (``pi.tool``);
8. ``generation/`` (``pi.generation``, which uses compaction's estimates);
9. ``_builtins`` (the registry of the three built-in tasks) and ``_harness``
   (the ``Harness``);
10. this face.

``tests/test_architecture.py`` holds the same levels (``PARTS``) and checks them.
"""

from pi_durable_tui.harness._builtins import create_registry
from pi_durable_tui.harness._errors import (
    ConversationBusy,
    HarnessClosed,
    HarnessError,
    RegistryIncomplete,
    SubmissionRejected,
    UnknownSubmission,
)
from pi_durable_tui.harness._harness import Harness
from pi_durable_tui.harness._progress import ProgressThrottle
from pi_durable_tui.harness._runtime import BoundConversation, HarnessRuntime
from pi_durable_tui.harness._services import EnvFactory, EnvTarget
from pi_durable_tui.harness._settings import (
    CompactionSettings,
    ProgressSettings,
    RetrySettings,
    Settings,
)
from pi_durable_tui.harness._submission_types import EntryDraft, Input, WhenBusy, Write
from pi_durable_tui.harness.context import ContextView
from pi_durable_tui.harness.conversations import (
    INTERRUPTED_PARTIAL,
    SHELL_BUSY,
    SHELL_RUNNING,
    Conversation,
    ShellOutcome,
    ShellRefused,
    ShellStatus,
    Submission,
    shell_message_text,
)
from pi_durable_tui.harness.extensions import (
    BoundedText,
    Continue,
    Diagnostic,
    EntryMessage,
    Extension,
    HarnessTask,
    HookSet,
    OutputLimits,
    Registry,
    RegistrySnapshot,
    SchemaArguments,
    Section,
    SectionInput,
    SectionWrapper,
    Tool,
    ToolAccess,
    ToolApi,
    ToolBlock,
    ToolCallInfo,
    ToolControl,
    ToolConversation,
    ToolResult,
    ToolWrapper,
    bound_text,
    define_extension,
    define_task,
    define_tool,
    format_size,
    hook,
    schema_parameters,
    section,
    truncation_notice,
    wrap_section,
    wrap_tool,
)
from pi_durable_tui.harness.mcp import (
    McpConnection,
    McpServerConfig,
    McpServerError,
    mcp_extension,
    parse_mcp_servers,
)
from pi_durable_tui.harness.permissions import (
    MODES,
    Decision,
    PermissionCall,
    PermissionMode,
    PermissionPolicy,
    PermissionSettings,
    Rule,
    RuleError,
    RuleSpec,
    decide,
    is_read_only_command,
    parse_rule,
)
from pi_durable_tui.harness.state import (
    AGENT_DOC,
    ASSISTANT,
    COMPACTION,
    INBOX_DOC,
    LIVE_DOC,
    PERMISSIONS_DOC,
    PROVIDER_DOC,
    RESET,
    SHELL,
    SYSTEM,
    TOOL_RESULT,
    UNSET,
    USAGE_DOC,
    USER,
    AgentChange,
    ExtensionEdit,
    ResolvedAgent,
    ToolRemoval,
    configure,
    stored_model,
    text_of,
)
from pi_durable_tui.harness.tool import (
    CHOICES,
    Choice,
    DecisionRejected,
    OutputChange,
    ToolOutputBuffer,
)
from pi_durable_tui.harness.views import (
    EventStream,
    UnknownConversation,
    ViewState,
    ViewWatch,
    watch_events,
)

__all__ = [
    "AGENT_DOC",
    "ASSISTANT",
    "CHOICES",
    "COMPACTION",
    "INBOX_DOC",
    "INTERRUPTED_PARTIAL",
    "LIVE_DOC",
    "MODES",
    "PERMISSIONS_DOC",
    "PROVIDER_DOC",
    "RESET",
    "SHELL",
    "SHELL_BUSY",
    "SHELL_RUNNING",
    "SYSTEM",
    "TOOL_RESULT",
    "UNSET",
    "USAGE_DOC",
    "USER",
    "AgentChange",
    "BoundConversation",
    "BoundedText",
    "Choice",
    "CompactionSettings",
    "ContextView",
    "Continue",
    "Conversation",
    "ConversationBusy",
    "Decision",
    "DecisionRejected",
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
    "McpConnection",
    "McpServerConfig",
    "McpServerError",
    "OutputChange",
    "OutputLimits",
    "PermissionCall",
    "PermissionMode",
    "PermissionPolicy",
    "PermissionSettings",
    "ProgressSettings",
    "ProgressThrottle",
    "Registry",
    "RegistryIncomplete",
    "RegistrySnapshot",
    "ResolvedAgent",
    "RetrySettings",
    "Rule",
    "RuleError",
    "RuleSpec",
    "SchemaArguments",
    "Section",
    "SectionInput",
    "SectionWrapper",
    "Settings",
    "ShellOutcome",
    "ShellRefused",
    "ShellStatus",
    "Submission",
    "SubmissionRejected",
    "Tool",
    "ToolAccess",
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
    "decide",
    "define_extension",
    "define_task",
    "define_tool",
    "format_size",
    "hook",
    "is_read_only_command",
    "mcp_extension",
    "parse_mcp_servers",
    "parse_rule",
    "schema_parameters",
    "section",
    "shell_message_text",
    "stored_model",
    "text_of",
    "truncation_notice",
    "watch_events",
    "wrap_section",
    "wrap_tool",
]
