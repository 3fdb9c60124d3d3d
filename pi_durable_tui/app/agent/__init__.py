"""The coding agent without a screen: settings, models, prompt, subagents, headless (R34, R77).

A part of the app, not a public face: the public names (``AgentApp``,
``AppOptions``, ``AppSettings``, ``load_settings``, ``build_models``,
``CODING_PROMPT``, ``SUBAGENTS``, ``DEMOS``, ``run_headless``, ``export_main`` ...)
are imported from ``pi_durable_tui.app``, lazily (its face's ``_LAZY``).

Its private modules, lowest first (each imports only the ones before it):

- ``_permissions``: the permission mode and rules from the settings and the
  command line (issue 13);
- ``_config``: the settings files validated and merged into ``AppSettings`` (R34),
  a project's widening keys only as far as the user trusted them (issue 13);
- ``_live_settings``: ``SettingsFiles``, the settings of an open session, re-read
  when a file changes, with the trust requests of changed project settings;
- ``_model_setup``: which models the agent can use, and which one a session
  starts with;
- ``_remote_context``: the project's context files on another host, read
  through the execution environment (issue 17);
- ``_prompt_sections``: the coding system prompt, as harness sections (R77);
- ``_subagent``, ``_demos``, ``_uncancelled``: the subagent tool, the offline
  demos, and steps that run to their end when cancelled;
- ``_printed``: printed output redacted like committed output (issue 13);
- ``_job_exit``: the background jobs at exit (ended, or left running), the
  recovery line of each after a reopen, ``/tasks stop`` (issue 13);
- ``_earlier_runs``: what earlier runs left running, ended at an opening;
- ``_stop_marker``: how the previous run ended (the live tasks an orderly close
  stopped, and the signal), for the recovery report;
- ``_agent_app``: ``AgentApp``, the product opened on one session;
- ``_headless``: print and JSON modes (R59, R87, R125);
- ``_export``: ``pidurable export``, a session's transcript as a file.

Outside itself this part imports ``app.files``, ``app._location`` and the layers
below the app.
"""

from pi_durable_tui.app.agent._agent_app import AgentApp, AppOptions
from pi_durable_tui.app.agent._config import AppSettings, load_settings
from pi_durable_tui.app.agent._demos import DEMOS, Demo
from pi_durable_tui.app.agent._export import export_main, export_transcript
from pi_durable_tui.app.agent._headless import (
    Follow,
    Following,
    HeadlessMode,
    answer_text,
    run_headless,
)
from pi_durable_tui.app.agent._job_exit import live_jobs, moved_notice, stop_task
from pi_durable_tui.app.agent._live_settings import SettingsFiles
from pi_durable_tui.app.agent._model_setup import (
    UNSERVED_MODEL_ADVICE,
    ModelChoiceError,
    ModelSelection,
    build_models,
    choose_model,
    list_models_text,
)
from pi_durable_tui.app.agent._permissions import PermissionChoices
from pi_durable_tui.app.agent._printed import RedactedWriter, TextSink, json_line, output_redactor
from pi_durable_tui.app.agent._prompt_sections import CODING_PROMPT
from pi_durable_tui.app.agent._subagent import SUBAGENTS, SubagentArgs

__all__ = [
    "CODING_PROMPT",
    "DEMOS",
    "SUBAGENTS",
    "UNSERVED_MODEL_ADVICE",
    "AgentApp",
    "AppOptions",
    "AppSettings",
    "Demo",
    "Follow",
    "Following",
    "HeadlessMode",
    "ModelChoiceError",
    "ModelSelection",
    "PermissionChoices",
    "RedactedWriter",
    "SettingsFiles",
    "SubagentArgs",
    "TextSink",
    "answer_text",
    "build_models",
    "choose_model",
    "export_main",
    "export_transcript",
    "json_line",
    "list_models_text",
    "live_jobs",
    "load_settings",
    "moved_notice",
    "output_redactor",
    "run_headless",
    "stop_task",
]
