"""The screen's view model and controller over an open ``AgentApp`` (issue 8; R95, R123, R126).

A part of the app, not a public face: ``LiveScreenModel``, ``AgentController``,
``start_screen`` and ``recovery_report`` are imported from ``pi_durable_tui.app``,
lazily. The TUI holds them only as the ``ScreenModel`` and ``Controller``
protocols of ``app._ports``.

Its private modules, lowest first (each imports only the ones before it):

- ``_blocks``: transcript blocks from committed entries and ``pi.live``;
- ``_doc_values``: the footer's figures, queue items and the approval question,
  read from committed documents;
- ``_task_tree``: the task tree, from the harness's task graph (R126);
- ``_compaction_notices``: what a compaction's end says, and the failed ones in a
  commit (issue 12);
- ``_feed``: where the view model's state comes from (``LocalFeed``: this
  process's session; ``app.remote``'s feed: a host elsewhere, issue 15);
- ``_store_failure``: the line for a store that fails under the screen, and
  ``StoreStopped`` for an action tried after it (issue 12);
- ``_screen_model``: ``LiveScreenModel``, the shown conversation (R123);
- ``_shown``: which conversation a reopened session shows (``pi.screen``);
- ``_user_shell``: the editor's shell mode (``!cmd``, ``!!cmd``): the user's
  command run in the conversation's environment, committed through the harness;
- ``_recovery``: what ``--continue`` found a killed process had left (R95);
- ``_session_name``: the session's name (``pi.session``) and its mirror for the picker;
- ``_session_details``: what ``/session`` lists;
- ``_trust_answers``: the user's answer to a trust question;
- ``_editor_aids``: ``@`` path completion and the prompt history;
- ``_controller``: ``AgentController``, every action the screen takes;
- ``_screen_start``: starting both on an open session.

``TaskTree``, ``compaction_failures`` and ``watch_store_failure`` are also what a
session's host sends its clients (``app.host``; ``StoreStopped`` is the words it
answers their intents with once its store failed); ``entry_blocks`` and
``with_result`` are how an editor's ``session/load`` turns a stored page of
history into blocks (``app.acp``); ``list_conversations`` is what a host answers a
client's ``conversations`` call with, ``conversation_title`` names a followed
subagent in a snapshot; ``session_details``, ``session_name`` and
``name_session`` are how a host answers a client's ``/session`` and ``/name``.

The highest part of the app: it imports ``app._view``, ``app._ports`` and the
parts ``agent`` and ``files``.
"""

from pi_durable_tui.app.screen._blocks import entry_blocks
from pi_durable_tui.app.screen._compaction_notices import CompactionFailure, compaction_failures
from pi_durable_tui.app.screen._controller import AgentController, KeepServing
from pi_durable_tui.app.screen._conversation_list import list_conversations
from pi_durable_tui.app.screen._doc_values import with_result
from pi_durable_tui.app.screen._feed import (
    Frame,
    LocalFeed,
    Mounted,
    ScreenFeed,
    Settled,
    TaskSource,
)
from pi_durable_tui.app.screen._names import conversation_title
from pi_durable_tui.app.screen._recovery import recovery_report
from pi_durable_tui.app.screen._screen_model import LiveScreenModel
from pi_durable_tui.app.screen._screen_start import start_screen
from pi_durable_tui.app.screen._session_details import session_details
from pi_durable_tui.app.screen._session_name import SESSION_DOC, name_session, session_name
from pi_durable_tui.app.screen._store_failure import StoreStopped, watch_store_failure
from pi_durable_tui.app.screen._task_tree import TaskTree
from pi_durable_tui.app.screen._user_shell import stop_user_command

__all__ = [
    "SESSION_DOC",
    "AgentController",
    "CompactionFailure",
    "Frame",
    "KeepServing",
    "LiveScreenModel",
    "LocalFeed",
    "Mounted",
    "ScreenFeed",
    "Settled",
    "StoreStopped",
    "TaskSource",
    "TaskTree",
    "compaction_failures",
    "conversation_title",
    "entry_blocks",
    "list_conversations",
    "name_session",
    "recovery_report",
    "session_details",
    "session_name",
    "start_screen",
    "stop_user_command",
    "watch_store_failure",
    "with_result",
]
