"""Starting the screen's view model and controller on an open session (issue 8).

What ``pidurable`` does between opening a session and painting the first screen,
without Textual, so print-free tests and the TUI run the same path:

1. on a reopened session, read the recovery report from committed state BEFORE
   scheduling resumes (what the killed process left: the turn that resumes, the
   cut calls, the background tasks);
2. mount the conversation shown when the session was left (``_shown``: a fork, a
   subagent's, else the main one) and put the report
   into the transcript as a ``resumed`` separator;
3. resume scheduling (``Harness.resume``), so interrupted work carries on;
4. a new demo session sends the demo's first prompt; a demo says how to kill and
   continue it; a session without a model says how to choose one (reference 5.1),
   and one whose model's key is not set names the variable before the first prompt;
5. a prompt from the command line (``pidurable "PROMPT"``, issue 12) is sent as
   the first message, as if typed (after a demo's own).
"""

from __future__ import annotations

from pi_durable_tui.app._view import missing_key_hint
from pi_durable_tui.app.agent import UNSERVED_MODEL_ADVICE, AgentApp
from pi_durable_tui.app.files import discover_commands
from pi_durable_tui.app.screen._controller import AgentController
from pi_durable_tui.app.screen._recovery import recovery_report
from pi_durable_tui.app.screen._screen_model import LiveScreenModel
from pi_durable_tui.app.screen._session_name import mirror_name
from pi_durable_tui.app.screen._shown import shown_conversation

NO_MODEL = (
    "No model configured: export ANTHROPIC_API_KEY or OPENAI_API_KEY and start pidurable "
    "again (its default model is used), or select one with /model."
)


async def start_screen(
    app: AgentApp, *, reopened: bool, verbose: bool = False, prompt: str | None = None
) -> tuple[LiveScreenModel, AgentController]:
    """Attach a view model and a controller to an open session and resume its work.

    Args:
        app: The open session; the controller owns it from here (``close()``).
        reopened: The session existed before (``--continue``, ``--resume``,
            ``--session``): show what recovery does.
        verbose: Show system-prompt changes in the transcript.
        prompt: Sent as the first message, as the controller sends a typed one (a
            custom command line, ``/review calc.py``, sends that command's text).

    Returns:
        ``(model, controller)``, following the shown conversation.
    """
    model = LiveScreenModel(app, verbose=verbose)
    controller = AgentController(app, model)
    try:
        report = await recovery_report(app) if reopened else []
        await model.attach(await shown_conversation(app) if reopened else app.root.id)
        await controller.read_permission_mode()
        if reopened:
            await mirror_name(app)  # a crash between ``/name``'s commit and its mirror
        model.show_recovery(report)
        app.harness.resume()
        if app.demo is not None:
            if app.created:
                await controller.submit(app.demo.prompt)
            model.add_notice("info", app.demo_banner())
        elif not model.footer.model:
            model.add_notice("warning", NO_MODEL)
        elif app.models.get(model.footer.model) is None:
            # Said now, not at the first prompt: a continued session whose model
            # nothing serves (a local server's, without its --base-url).
            unserved = f"Model {model.footer.model} is not available ({UNSERVED_MODEL_ADVICE})"
            model.add_notice("warning", f"{unserved}; pick another with /model.")
        else:
            missing = _missing_key(app, model.footer.model)
            if missing is not None:
                model.add_notice("warning", missing_key_hint(model.footer.model, missing))
        controller.skills()  # listed once at start, so an unusable skill file is a notice now
        for problem in discover_commands(app.cwd).problems:
            model.add_notice("warning", problem)
        if prompt:
            await controller.submit_line(prompt)
    except BaseException:
        await controller.close()
        raise
    return model, controller


def _missing_key(app: AgentApp, ref: str) -> str | None:
    """The variable the session's model needs and lacks (``None``: none, or not a known model)."""
    found = app.models.get(ref)
    return None if found is None else app.models.missing_key(found)
