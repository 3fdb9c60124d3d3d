"""The generation task ``pi.generation``: one model turn of a run, with its tool rounds (R77-R92).

A part of the harness, not a public face: nothing here is public; the built-in
registry takes ``GENERATION_TASK``, and the harness installs
``plan_admitted_request`` as the services' ``request_planner`` (issue 14).

Its private modules, lowest first (each imports only the ones before it):

- ``_partials``: streamed partials committed to ``pi.live`` with a throttle (R85);
- ``_preparation``: a request planned outside the line and applied in a commit (R83, R108);
- ``_tool_round``: tool rounds: start, continuation, settlement (R89-R91);
- ``_generation``: the task: prompt, request, stream, retries, answer (R83-R92).

The highest task part: outside itself it imports the runtime and services, the
parts ``extensions``, ``state``, ``context``, ``conversations`` and
``compaction`` (the estimates that decide an automatic compaction, R108). It
starts tool calls by task name (``pi.tool``), so it never imports ``tool``.
"""

from pi_durable_tui.harness.generation._generation import GENERATION_TASK
from pi_durable_tui.harness.generation._preparation import plan_admitted_request

__all__ = ["GENERATION_TASK", "plan_admitted_request"]
