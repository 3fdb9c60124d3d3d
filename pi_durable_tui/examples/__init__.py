"""Runnable examples of the durable kernel and the agent harness; each works offline.

Run one with ``python -m pi_durable_tui.examples.<name>`` (after ``pip install``;
the model is the scripted faux provider, so nothing needs a key or the network).

The kernel:

- ``documents``: typed JSON documents, deltas and rewindable history;
- ``forks``: forking a conversation and what each fork policy copies;
- ``watches``: document states and watches fed by commits;
- ``tasks``: a durable task with phases, a child task, a wait and a memo;
- ``recovery``: a task process killed with SIGKILL, reopened, finishing where it stopped.

The agent harness:

- ``chat``: two turns on SQLite, the answer streamed through commits, then usage;
- ``inbox``: a steer, a follow-up and a refused input while a command runs, and
  ``abort()`` withdrawing queued inputs but keeping a queued write;
- ``subagent_foreground``: a tool call that waits for a child conversation's answer;
- ``subagent_background``: a subagent that survives Esc and reports back as a follow-up;
- ``compaction``: older context summarized by hand and at the context threshold;
- ``tool_override``: a wrapper around ``bash`` refusing ``rm -rf``, a hook guarding a path;
- ``kill_and_continue``: an agent killed with SIGKILL mid-command, resumed from the store.

Shared by them: ``_coding_agent`` (a faux model with the coding tools), ``_transcript``
and ``_task_tree`` (printing entries and the task graph), ``_workers`` (a worker
process killed and run again).
"""
