"""The approval and trust prompts over the main screen, one at a time (issue 13).

``ModalPrompts`` is a mixin of ``PidurableApp``: the names it declares are the
app's attributes. The approval prompt (``_approval_prompt``) opens whenever a
call waits for a decision and the trust prompt (``_trust_prompt``) whenever the
model's ``trust_question`` changes; each waits behind the other, and neither
opens until no key arrived for ``SETTLE`` (never into a word being typed; a
timer tries again). A decision goes to the controller; text typed in the
approval prompt's line and not sent ends up at the end of the editor. A prompt
shows the app's notices at its bottom, as every screen over the main one does
(``_overlay``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pi_durable_tui.tui._approval_prompt import ApprovalAnswer, ApprovalScreen
from pi_durable_tui.tui._commands import as_message
from pi_durable_tui.tui._prompt_keys import SETTLE
from pi_durable_tui.tui._trust_prompt import TrustScreen

if TYPE_CHECKING:
    from pi_durable_tui.app import Controller, ScreenModel
    from pi_durable_tui.tui._editor import PromptEditor
    from pi_durable_tui.tui._notices import NoticeBar

PROMPT_RETRY = 0.1
"""Seconds between tries to open a prompt held back by typing."""


class ModalPrompts:
    """Opens, sequences and answers the approval and trust prompts; mixed into the app."""

    if TYPE_CHECKING:
        model: ScreenModel
        controller: Controller
        editor: PromptEditor
        clock: Callable[[], float]
        screen: Any

        call: Callable[..., Any]  # PidurableApp.call(what, action, then, on_error=...)
        push_screen: Callable[..., Any]  # Textual's App methods
        set_timer: Callable[..., Any]
        call_after_refresh: Callable[..., bool]

        notice_bar: NoticeBar

        def _restore_aborted(self, texts: list[str]) -> None: ...

    def init_prompts(self) -> None:
        """Nothing asked yet (called by the app's constructor)."""
        self._trust_screen: TrustScreen | None = None
        self._approval_screen: ApprovalScreen | None = None
        self._last_key: float | None = None
        self._prompt_retry = False

    def _ask_approval(self) -> None:
        """Show the oldest call waiting for a decision (once); take down a decided one."""
        question = self.model.approval
        shown = self._approval_screen
        if shown is not None:
            if question is not None and shown.question.call_id == question.call_id:
                return
            self._approval_screen = None  # decided (here or elsewhere), or aborted
            if self.screen is shown:
                shown.dismiss(None)
        if question is None:
            return
        if self._trust_screen is not None:
            # REMINDER: one prompt at a time. A prompt that appears over another
            # takes the key meant for the one the user reads (an `n` for the trust
            # question opened this prompt's message line; a `y` for this prompt
            # trusted a hostile settings file). Nothing runs while the call waits.
            return
        if self._held_back():
            return
        screen = ApprovalScreen(
            question, self._send_line, self.notice_bar, self.clock, self._last_key
        )
        self._approval_screen = screen

        def decided(answer: ApprovalAnswer | None) -> None:
            if self._approval_screen is screen:
                self._approval_screen = None
            if answer is not None:
                self._decided(question.call_id, answer)
            self.call_after_refresh(self._ask_trust)  # one that waited behind this prompt

        self.push_screen(screen, decided)

    def _decided(self, call_id: str, answer: ApprovalAnswer) -> None:
        if answer.unsent:
            # Typed in the prompt's line and not sent: the end of the editor keeps it.
            current = self.editor.text
            self.editor.text = current + ("\n" if current.strip() else "") + answer.unsent
            self.editor.move_cursor(self.editor.document.end)
        if answer.choice == "abort":
            self.call("abort", self.controller.abort, self._restore_aborted)
            return
        choice, message = answer.choice, answer.message
        self.call("decide", lambda: self.controller.decide(call_id, choice, message))

    def _send_line(self, text: str, follow_up: bool) -> None:
        """Send what the approval prompt's line holds: a steer, or a follow-up."""
        self.call(
            "follow-up" if follow_up else "steer",
            lambda: self.controller.submit(as_message(text), follow_up=follow_up),
        )

    def _held_back(self) -> bool:
        """Whether a prompt must wait: a key arrived less than ``SETTLE`` ago (try again)."""
        if self._last_key is None or self.clock() - self._last_key >= SETTLE:
            return False
        if not self._prompt_retry:
            self._prompt_retry = True
            self.set_timer(PROMPT_RETRY, self._retry_prompts)
        return True

    def _retry_prompts(self) -> None:
        self._prompt_retry = False
        self._ask_approval()
        self._ask_trust()

    def _ask_trust(self) -> None:
        """Show the waiting trust question (once), or take down one that was answered."""
        question = self.model.trust_question
        shown = self._trust_screen
        if shown is not None:
            if question is not None and shown.question.id == question.id:
                return
            self._trust_screen = None  # answered, or replaced by a newer content
            if self.screen is shown:
                shown.dismiss(None)
        if question is None or self._approval_screen is not None:
            return  # one prompt at a time (``_ask_approval``): asked once the call is decided
        if self._held_back():
            return
        screen = TrustScreen(question, self.notice_bar, self.clock, self._last_key)
        self._trust_screen = screen

        def answered(trusted: bool | None) -> None:
            if self._trust_screen is screen:
                self._trust_screen = None
            if trusted is not None:
                self.call("trust", lambda: self.controller.answer_trust(question.id, trusted))
            self.call_after_refresh(self._ask_approval)  # one that waited behind this prompt

        self.push_screen(screen, answered)
