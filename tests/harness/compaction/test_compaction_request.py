"""The summarizer's request and the summary entry, field by field (R111, R112).

R111: no tools; the built-in summarizer prompt as the system prompt; one user
message: the serialized history inside ``<conversation>`` tags, the
structured-checkpoint prompt, ``Additional focus: <instructions>`` when given;
options: the pinned stream options minus ``deferred``, ``cache_retention
"none"``, the pinned ``max_tokens``, ``reasoning`` unless ``off``, the
``session_id`` of ``pi.provider``. R112: the entry is ``pi.compaction`` with
``head`` = the first kept entry, one user message wrapping the summary, and
``data`` exactly ``{reason}``, whether placed as a write or appended by a
blocking compaction. The rest of the task is in ``test_compaction``.
"""

from __future__ import annotations

from pi_durable_tui.ai import ModelRef, TextContent, UserMessage, faux_model, faux_response
from pi_durable_tui.harness import (
    COMPACTION,
    PROVIDER_DOC,
    AgentChange,
    CompactionSettings,
    Settings,
)
from pi_durable_tui.harness.compaction._compaction_range import (
    SUMMARY_SYSTEM_PROMPT,
    checkpoint_prompt,
    serialize_conversation,
)
from tests.harness.compaction.test_compaction import (
    SUMMARY_TEXT,
    finished,
    history,
    past_threshold,
    summary,
)
from tests.harness.run_support import RigFactory, texts, within

STREAM = {"temperature": 0.25, "deferred": {"poll_ms": 50}}
"""``settings.stream``: one option the summarizer keeps, one it drops (``deferred``)."""


async def test_r111_the_summarizer_request_is_exactly_the_reference_request(
    open_rig: RigFactory,
) -> None:
    settings = Settings(compaction=CompactionSettings(keep_recent_tokens=100), stream=STREAM)
    rig = await history(
        open_rig,
        summary(),
        models=[faux_model("small-out", max_tokens=1000, reasoning=True)],
        settings=settings,
    )
    change = AgentChange(model=ModelRef("faux", "small-out"), thinking_level="high")
    await within(rig.root.configure(change))

    await finished(rig, await within(rig.root.compact("  focus on tests ")))

    request = rig.faux.requests[-1]
    assert request.model.id == "small-out"
    assert request.context.system_prompt == SUMMARY_SYSTEM_PROMPT
    assert request.context.tools in (None, [])
    [prompt] = request.context.messages
    assert isinstance(prompt, UserMessage)
    # The cut keeps the 200-token answer: only ``first`` is summarized.
    history_text = serialize_conversation([{"role": "user", "content": "first"}])
    expected = checkpoint_prompt(history_text, "  focus on tests ")
    text = (
        prompt.content
        if isinstance(prompt.content, str)
        else "".join(item.text for item in prompt.content if isinstance(item, TextContent))
    )
    assert text == expected
    assert text.endswith("\n\nAdditional focus:   focus on tests ")  # as given (R111)
    options = request.options
    provider = await rig.root.snapshot(PROVIDER_DOC)
    assert provider is not None
    assert options.session_id == provider["session_id"]
    assert options.cache_retention == "none"
    assert options.max_tokens == 1000  # min(floor(0.8 x 16384), the model's 1000)
    assert options.reasoning == "high"
    dumped = options.model_dump(exclude_unset=True)
    assert dumped["temperature"] == 0.25
    assert "deferred" not in dumped


async def test_r111_reasoning_is_left_out_when_the_thinking_level_is_off(
    open_rig: RigFactory,
) -> None:
    rig = await history(open_rig, summary())

    await finished(rig, await within(rig.root.compact()))

    request = rig.faux.requests[-1]
    assert request.options.reasoning is None
    [prompt] = request.context.messages
    assert "Additional focus" not in str(prompt.content)


async def test_r112_a_placed_summary_entry_holds_exactly_its_reason_as_data(
    open_rig: RigFactory,
) -> None:
    rig = await history(open_rig, summary())

    await finished(rig, await within(rig.root.compact()))

    [entry] = [e for e in await rig.transcript() if e.kind == COMPACTION]
    assert entry.data == {"reason": "manual"}
    assert entry.head is not None
    assert len(entry.model or []) == 1
    assert texts(entry) == SUMMARY_TEXT
    assert "compactions" not in await rig.live()  # placing it removed the status


async def test_r112_a_blocking_summary_entry_holds_exactly_its_reason_as_data(
    open_rig: RigFactory,
) -> None:
    rig = await past_threshold(open_rig, summary(), faux_response("after"), window=1100)

    await rig.ask("second")

    [entry] = [e for e in await rig.transcript() if e.kind == COMPACTION]
    assert entry.data == {"reason": "threshold"}
