"""The user's answer to a trust question about a project's settings (issue 13).

``AgentController.answer_trust`` runs ``answer_trust``: trusting applies the
widening keys of the content the user was shown and remembers the trust;
declining keeps them off for this session. A notice says which.
"""

from __future__ import annotations

from pi_durable_tui.app.agent import AgentApp
from pi_durable_tui.app.screen._screen_model import LiveScreenModel


def answer_trust(app: AgentApp, model: LiveScreenModel, question_id: str, trusted: bool) -> None:
    """Trust, or not, the project settings content the user was shown.

    An answer about a content that is no longer the one waiting (the file
    changed again meanwhile) does nothing: the new content is asked about.
    """
    settings = app.settings
    request = settings.waiting
    if request is None or request.digest != question_id:
        return
    keys = ", ".join(request.widening)
    if not trusted:
        settings.decline(request)
        model.add_notice(
            "info", f"Not trusted: {keys} from {request.where} stay off in this session."
        )
    else:
        try:
            settings.trust(request)
        except OSError as error:
            model.add_notice(
                "warning",
                f"Trusted for this session only: {keys} apply, but the trust could not "
                f"be remembered ({error.strerror})",
            )
        else:
            model.add_notice("info", f"Trusted: {keys} from {request.where} now apply.")
    model.trust_changed()
