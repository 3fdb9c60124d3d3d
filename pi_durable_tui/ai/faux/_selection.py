"""Which scripted step answers a request: by queue (in-code tests) or by position (scripts).

Owns ``conversation_position`` (the number of assistant messages in a request's
context), the two ways of choosing a step, ``StepQueue`` and ``StepsByPosition``
(both ``Steps``), and the policy for a request nothing answers (``WhenExhausted``). Implements the
scripting of model-layer.md 1.6 and the restart rule of issue 7.

Why two ways. A test that builds a ``FauxProvider`` in code queues steps and
watches them being used up: the first step that fits a request is taken and
removed, exactly like pi-ai's faux provider. A script file must instead survive
a restart: a process killed after three responses and started again has an
empty memory, yet it must give the same next response for the same context.
So a script chooses by *position*: a request whose context holds ``k``
assistant messages is answered by the ``k``-th step (0-based) among the steps
without a ``match`` rule, unless matched steps fit the request; then the
``k``-th of those that fit answers (the last of them when fewer fit), so a
subagent's own conversation can walk through its matched steps while a
``tool_result`` rule can still react at any position. Nothing is consumed and
nothing depends on earlier requests: the choice is a function of the script and
the request's context alone.

REMINDER: failed and aborted responses never enter a context (R73), so a retry
asks for the same position again and a scripted error at position ``k`` answers
every retry. A script that must fail once and then succeed cannot be expressed
by position; in-code tests use the queue for that.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from pi_durable_tui.ai._types import AssistantMessage, Context, StreamOptions
from pi_durable_tui.ai.faux._steps import (
    FauxFactory,
    FauxMatch,
    FauxResponse,
    FauxStep,
    faux_text,
    newest_user_text,
)

WhenExhausted = Literal["error", "repeat_last", "echo"]
"""What a request gets when no step answers it:

- ``error``: an error event naming the request (not retryable);
- ``repeat_last``: by queue, the last response served again; by position, the
  last step without a ``match`` rule (an error when there is none);
- ``echo``: a text answer repeating the newest user text.
"""
WHEN_EXHAUSTED: tuple[WhenExhausted, ...] = ("error", "repeat_last", "echo")


def conversation_position(context: Context) -> int:
    """Return a request's position: how many assistant messages its context holds.

    Args:
        context: The request's context.

    Returns:
        ``k`` for a request that asks for the conversation's ``k+1``-th answer.
    """
    return sum(1 for message in context.messages if isinstance(message, AssistantMessage))


def rule_of(step: FauxStep) -> FauxMatch | None:
    """Return a step's ``match`` rule (only responses carry one)."""
    return step.match if isinstance(step, FauxResponse) else None


@dataclass(frozen=True, slots=True)
class Request:
    """What the choice of a step may look at."""

    context: Context
    options: StreamOptions
    position: int
    """Assistant messages in the context (``conversation_position``)."""
    call_index: int
    """Requests this provider received before this one (factories get it)."""


class Steps:
    """The steps of a faux provider, and what a request gets when none answers it.

    Args:
        steps: The steps, in order.
        when_exhausted: What a request gets when no step answers it.
        factory: Builds a response for a request no step answers (before
            ``when_exhausted`` applies).
    """

    def __init__(
        self,
        steps: Iterable[FauxStep],
        when_exhausted: WhenExhausted,
        factory: FauxFactory | None,
    ) -> None:
        self.steps = list(steps)
        self._when_exhausted = when_exhausted
        self._factory = factory

    @property
    def pending(self) -> int:
        """Steps not used up (choosing by position never uses one up)."""
        return len(self.steps)

    def choose(self, request: Request) -> FauxStep | str:
        """Return the step answering ``request``, or why there is none."""
        raise NotImplementedError

    def _fallback(self, request: Request, last: FauxStep | None) -> FauxStep | None:
        """The factory, else ``when_exhausted`` applied (``last`` is what to repeat)."""
        if self._factory is not None:
            return self._factory
        if self._when_exhausted == "repeat_last" and last is not None:
            return last
        if self._when_exhausted == "echo":
            return echo(request.context)
        return None


class StepQueue(Steps):
    """Steps taken in queue order: the first that fits a request is removed and used."""

    def __init__(
        self,
        steps: Iterable[FauxStep],
        when_exhausted: WhenExhausted,
        factory: FauxFactory | None,
    ) -> None:
        super().__init__(steps, when_exhausted, factory)
        self._last_served: FauxStep | None = None

    def choose(self, request: Request) -> FauxStep | str:
        """Take the first queued step that fits ``request``, or return why there is none."""
        for index, step in enumerate(self.steps):
            rule = rule_of(step)
            if rule is None or rule.fits(request.context):
                self._last_served = self.steps.pop(index)
                return self._last_served
        fallback = self._fallback(request, self._last_served)
        if fallback is not None:
            return fallback
        if self.steps:
            return (
                f"No queued faux response matches request {request.call_index + 1} "
                f"({len(self.steps)} queued, none fits; newest user text: "
                f"{newest_user_text(request.context)[:80]!r})"
            )
        return (
            f"No more faux responses queued "
            f"(request {request.call_index + 1} found the queue empty)"
        )


class StepsByPosition(Steps):
    """Steps chosen by the request's position in its conversation; none is used up."""

    def choose(self, request: Request) -> FauxStep | str:
        """Return the step at the request's position, or why there is none."""
        position = request.position
        fitting = [step for step in self.steps if _fits(step, request.context)]
        if fitting:
            return fitting[min(position, len(fitting) - 1)]
        plain = [step for step in self.steps if rule_of(step) is None]
        if position < len(plain):
            return plain[position]
        fallback = self._fallback(request, plain[-1] if plain else None)
        if fallback is not None:
            return fallback
        return _past_the_end(position, plain)


def echo(context: Context) -> FauxResponse:
    """Return a response repeating the newest user text."""
    return FauxResponse((faux_text(newest_user_text(context)),))


def _fits(step: FauxStep, context: Context) -> bool:
    rule = rule_of(step)
    return rule is not None and rule.fits(context)


def _past_the_end(position: int, plain: Sequence[FauxStep]) -> str:
    return (
        f"No more faux responses: the request at position {position + 1} (its context "
        f"holds {position} assistant messages) is past the script's {len(plain)} "
        f"response(s) without a match rule, and no match rule fits it"
    )
