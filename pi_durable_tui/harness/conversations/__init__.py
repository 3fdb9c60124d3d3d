"""Conversations: the handle, the inbox, submissions and how a run ends (R24-R26, R45, R57-R70).

A part of the harness, not a public face: ``Conversation`` and ``Submission`` are
imported from ``pi_durable_tui.harness``. The tasks (generation, tool rounds,
compaction) and the harness use the rest: admission (``admit``), run boundaries
and settlement, the creation hook and the ends of a run (``answer``,
``fail_run``).

Its private modules, lowest first (each imports only the ones before it):

- ``_creation``: what every conversation gets in the commit that creates it (R25);
- ``_inbox``: admission of submissions, the inbox, boundaries and run settlement
  (R48, R57, R59-R70);
- ``_run_end``: answers, failures, aborts and scheduler cleanup (R45, R64, R65,
  R83, R84, R86, R91, R92);
- ``_shell``: the commits of a shell command the user runs from the editor
  (``!cmd``): its live output, its ``pi.shell`` entry, an interrupted one on reopen;
- ``_submissions``: the ``Submission`` handle a host holds (R23, R66, R68);
- ``_conversation``: the ``Conversation`` handle: submit, abort, configure, fork,
  compact, read (R24-R26, R57-R69, R123, R124).

Outside itself this part imports ``harness._errors``, ``_submission_types`` and
``_services``, and the parts ``state``, ``context`` and ``views``; never the
runtime nor a task (they stand above it).
"""

from pi_durable_tui.harness.conversations._conversation import Conversation, Init, finish_creation
from pi_durable_tui.harness.conversations._creation import ConversationCreated, CreationHook
from pi_durable_tui.harness.conversations._inbox import (
    admit,
    compaction_request,
    run_boundary,
    settle,
    start_run,
    withdraw,
    withdraw_inputs,
)
from pi_durable_tui.harness.conversations._run_end import (
    INTERRUPTED_PARTIAL,
    answer,
    convert_partial,
    fail_run,
)
from pi_durable_tui.harness.conversations._shell import (
    SHELL_BUSY,
    SHELL_RUNNING,
    ShellOutcome,
    ShellRefused,
    ShellStatus,
    shell_message_text,
)
from pi_durable_tui.harness.conversations._submissions import Submission

__all__ = [
    "INTERRUPTED_PARTIAL",
    "SHELL_BUSY",
    "SHELL_RUNNING",
    "Conversation",
    "ConversationCreated",
    "CreationHook",
    "Init",
    "ShellOutcome",
    "ShellRefused",
    "ShellStatus",
    "Submission",
    "admit",
    "answer",
    "compaction_request",
    "convert_partial",
    "fail_run",
    "finish_creation",
    "run_boundary",
    "settle",
    "shell_message_text",
    "start_run",
    "withdraw",
    "withdraw_inputs",
]
