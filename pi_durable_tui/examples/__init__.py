"""Runnable examples of the durable kernel; each works offline after ``pip install``.

Run one with ``python -m pi_durable_tui.examples.<name>``:

- ``documents``: typed JSON documents, deltas and rewindable history;
- ``forks``: forking a conversation and what each fork policy copies;
- ``watches``: document states and watches fed by commits;
- ``tasks``: a durable task with phases, a child task, a wait and a memo;
- ``recovery``: a task process killed with SIGKILL, reopened, finishing where it stopped.
"""
