"""One model request from a context's messages: ``build_request``.

A context (``ContextView.messages``) may hold system messages anywhere: the
first preparation writes one, later preparations append patches (R77-R80), and
a rebaseline after a head marker (R81) lands after the kept entries. Providers
take one system prompt and one tool list, so:

- The first run of consecutive system messages becomes ``system_prompt`` (its
  replay from nothing: content, then sections, blank-line separated). R75 has
  usually moved it to the front already; when it has not (a rebaseline after the
  kept entries of a compaction), it is still a complete prompt, because it is
  replayed from an empty state, so it is taken as the initial prompt as well.
- Each later run of system messages stays where it is, as a user message
  ``<system-update>`` ... ``</system-update>`` holding the changed sections'
  rendered text (``Section <key> removed.`` for a removal). The request prefix
  up to that point stays byte-identical, so a provider's prompt cache survives a
  mid-conversation prompt change. A run that changes only tools adds no message.
- The tools offered are the final replayed tool list (R79), which is also what
  the tool round offers (``offered_tools``, R89).

Every other message validates into its ``pi_durable_tui.ai`` type. Stored
messages are immutable and a conversation's active range stays cached between
requests (R127), so ``ValidatedMessages`` remembers each stored dict's validated
message, and the scan of the last request: a request whose messages begin with the
last one's (the same dicts) scans only the new ones, so a round of a long
conversation neither validates nor visits its old messages (speed only).
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import TypeAdapter, ValidationError

from pi_durable_tui.ai import Context, Message, TextContent, ToolSpec, UserMessage
from pi_durable_tui.harness.context._prompt_state import PromptState
from pi_durable_tui.storage import JsonObject

_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


class ValidatedMessages:
    """The validated model message of each recently requested stored message dict.

    Keyed by the dict's identity: the cache holds the dict itself, so its ``id``
    cannot be reused while it is remembered.

    Args:
        kept: How many messages to remember (the least recently used go first).
    """

    def __init__(self, kept: int = 8192) -> None:
        self._kept = kept
        self._messages: OrderedDict[int, tuple[JsonObject, Message]] = OrderedDict()
        # The last request's messages and its scan before the final flush; holding
        # the dicts keeps their ids from being reused.
        self._last: tuple[list[JsonObject], _Scan] | None = None

    def __len__(self) -> int:
        return len(self._messages)

    def validated(self, index: int, message: JsonObject) -> Message:
        """The model message of ``message``, validated on its first request.

        Raises:
            ValueError: As ``build_request`` does.
        """
        found = self._messages.get(id(message))
        if found is not None and found[0] is message:
            self._messages.move_to_end(id(message))
            return found[1]
        converted = _validated(index, message)
        self._messages[id(message)] = (message, converted)
        while len(self._messages) > self._kept:
            self._messages.popitem(last=False)
        return converted

    def resumed(self, messages: Sequence[JsonObject]) -> tuple[int, _Scan]:
        """Where a scan of ``messages`` starts: past the last request's, when they begin it."""
        last = self._last
        if last is not None:
            prefix, scan = last
            if len(prefix) <= len(messages) and all(map(operator.is_, prefix, messages)):
                return len(prefix), scan.copy()
        return 0, _Scan()

    def remember(self, messages: Sequence[JsonObject], scan: _Scan) -> None:
        """Keep ``scan`` (of all of ``messages``, before its final flush) for the next request."""
        self._last = (list(messages), scan.copy())


@dataclass(slots=True)
class _Scan:
    """``build_request``'s state after some messages: what a later request resumes."""

    initial: PromptState = field(default_factory=PromptState)
    final: PromptState = field(default_factory=PromptState)
    converted: list[Message] = field(default_factory=list)
    update: list[JsonObject] = field(default_factory=list)
    seen_system: bool = False
    in_first_run: bool = False

    def copy(self) -> _Scan:
        return _Scan(
            self.initial.copy(),
            self.final.copy(),
            list(self.converted),
            list(self.update),
            self.seen_system,
            self.in_first_run,
        )


def build_request(
    messages: Sequence[JsonObject], cache: ValidatedMessages | None = None
) -> Context:
    """Turn a context's messages into the ``ai.Context`` of one request.

    Args:
        messages: ``ContextView.messages`` (stored message dicts, system messages
            included), possibly after ``before_request`` hooks replaced them.
        cache: Remembers validated messages between requests. REMINDER: only for
            dicts nobody changes in place (stored entries; not a hook's output).

    Returns:
        The system prompt, the model messages and the offered tools.

    Raises:
        ValueError: When a message is not a valid model message or system message;
            the error names its index and role.
    """
    start, scan = (0, _Scan()) if cache is None else cache.resumed(messages)
    initial, final, converted, update = scan.initial, scan.final, scan.converted, scan.update
    for index in range(start, len(messages)):
        message = messages[index]
        if message.get("role") == "system":
            _check_system(index, message)
            final.apply(message)
            if not scan.seen_system:
                scan.seen_system = scan.in_first_run = True
            if scan.in_first_run:
                initial.apply(message)
            else:
                update.append(message)
            continue
        scan.in_first_run = False
        if update:
            _flush_update(update, converted)
        converted.append(
            _validated(index, message) if cache is None else cache.validated(index, message)
        )
    if cache is not None:
        cache.remember(messages, scan)
    _flush_update(update, converted)
    # Every part is validated already: validating the context again would walk every
    # message of a long conversation once more on each request.
    return Context.model_construct(
        system_prompt=initial.text() or None,
        messages=converted,
        tools=[ToolSpec.model_validate(spec) for spec in final.tool_specs],
    )


def system_update_text(run: Sequence[JsonObject]) -> str | None:
    """Render a run of mid-transcript system messages as the text the model reads.

    Args:
        run: Consecutive system messages.

    Returns:
        ``<system-update>``, the changes in order (content texts, changed
        sections' rendered text, ``Section <key> removed.`` lines), then
        ``</system-update>``; ``None`` when the run changes only tools.
    """
    parts: list[str] = []
    for message in run:
        content = message.get("content")
        if isinstance(content, str) and content:
            parts.append(content)
        for key, value in (message.get("sections") or {}).items():
            parts.append(f"Section {key} removed." if value is None else value)
    if not parts:
        return None
    body = "\n\n".join(parts)
    return f"<system-update>\n{body}\n</system-update>"


def _flush_update(update: list[JsonObject], converted: list[Message]) -> None:
    if not update:
        return
    text = system_update_text(update)
    update.clear()
    if text is not None:
        converted.append(UserMessage(content=[TextContent(text=text)]))


def _validated(index: int, message: JsonObject) -> Message:
    try:
        return _MESSAGE.validate_python(message)
    except ValidationError as error:
        raise ValueError(
            f"Context message {index} (role {message.get('role')!r}) is not a valid "
            f"model message: {error}"
        ) from error


def _check_system(index: int, message: JsonObject) -> None:
    sections = message.get("sections")
    if sections is not None and not (
        isinstance(sections, dict)
        and all(value is None or isinstance(value, str) for value in sections.values())
    ):
        raise ValueError(
            f"Context message {index} is a system message whose 'sections' is not an "
            f"object of strings and nulls: {sections!r}"
        )
    added = message.get("tools_added") or []
    if not isinstance(added, list) or not all(
        isinstance(spec, dict) and isinstance(spec.get("name"), str) for spec in added
    ):
        raise ValueError(
            f"Context message {index} is a system message whose 'tools_added' is not a "
            f"list of tool specs with a name: {added!r}"
        )
    removed = message.get("tools_removed") or []
    if not isinstance(removed, list) or not all(
        isinstance(item, str) or (isinstance(item, dict) and isinstance(item.get("name"), str))
        for item in removed
    ):
        raise ValueError(
            f"Context message {index} is a system message whose 'tools_removed' is not a "
            f'list of removed tools (each {{"name": ...}}): {removed!r}'
        )
