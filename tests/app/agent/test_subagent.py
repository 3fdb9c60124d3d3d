"""The ``subagent`` tool's child conversations and their agent (reference 5.4, R25).

A child is created owned by the call's task (foreground) or by its
``pi.subagent`` task (background), in the commit that configures it with the
parent's agent minus the ``subagent`` extension: the child works with the
parent's model and tools, and is never offered ``subagent`` itself (no
recursion). Issue 12: the creation hook used to overwrite that change with the
parent's copy, so a child could start subagents of its own.
"""

from __future__ import annotations

from pi_durable_tui.ai import faux_response, faux_text, faux_tool_call
from pi_durable_tui.ai.faux import FauxRequest
from pi_durable_tui.harness import AGENT_DOC
from tests.app.screen_support import BACKGROUND, FOREGROUND, ScreenFactory, say
from tests.harness.run_support import within


def offered(request: FauxRequest) -> list[str]:
    return [tool.name for tool in request.context.tools or []]


def text_of_message(message: object) -> str:
    """A context message's text (its text blocks joined)."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(getattr(b, "text", "") for b in content)


def asked_by(requests: list[FauxRequest], prefix: str) -> list[FauxRequest]:
    """The requests whose first message is a user prompt starting with ``prefix``."""
    found = []
    for request in requests:
        first = request.context.messages[0]
        if first.role == "user" and text_of_message(first).startswith(prefix):
            found.append(request)
    return found


async def test_foreground_and_background_children_work_with_the_parent_tools_but_subagent(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        faux_response(faux_text("Checked."), match=FOREGROUND),
        faux_response(faux_text("Reviewed."), match=BACKGROUND),
        faux_response(
            faux_tool_call("subagent", {"task": "[fg] check the tests"}),
            faux_tool_call("subagent", {"task": "[bg] review the docs", "background": True}),
        ),
        say("Started both."),
        say("Read the report."),
    )

    await rig.ask("delegate")
    await rig.until(lambda: "Read the report." in rig.texts("assistant"), "the report arrives")

    [main, *_] = rig.faux.requests
    assert "subagent" in offered(main)
    for prefix in ("[fg]", "[bg]"):
        [child] = asked_by(rig.faux.requests, prefix)
        assert offered(child) == [name for name in offered(main) if name != "subagent"]
        assert child.model.id == main.model.id
    storage = rig.app.harness.session.storage
    children = (await storage.scan_conversations(limit=10)).items
    owned = [c for c in children if c.owner is not None]
    assert len(owned) == 2
    for record in owned:
        agent = await within(rig.app.harness.conversation(record.id).snapshot(AGENT_DOC))
        assert agent is not None
        assert agent["extensions"] == {"add": [], "remove": ["subagent"]}


def message_texts(request: FauxRequest, role: str) -> list[str]:
    """The texts of one role's messages in a request's context."""
    return [text_of_message(m) for m in request.context.messages if m.role == role]


async def test_a_background_subagent_s_result_text_names_it_by_its_task_never_by_an_id(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        faux_response(faux_text("Reviewed."), match=BACKGROUND),
        faux_response(
            faux_tool_call("subagent", {"task": "[bg] review the docs", "background": True})
        ),
        say("Started it."),
        say("Read the report."),
    )

    await rig.ask("delegate")
    await rig.until(lambda: "Read the report." in rig.texts("assistant"), "the report arrives")

    last = rig.faux.requests[-1]
    assert message_texts(last, "toolResult") == [
        'Subagent "[bg] review the docs" started in the background. Its report will arrive '
        "as a message when it finishes; carry on meanwhile."
    ]
    assert rig.card_output("subagent").startswith('Subagent "[bg] review the docs" started')


async def test_a_failed_foreground_subagent_is_named_by_its_task(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        faux_response(faux_text(""), match=FOREGROUND, stop_reason="error"),
        faux_response(faux_tool_call("subagent", {"task": "[fg] check the tests"})),
        say("Noted."),
    )

    await rig.ask("delegate")
    await rig.until(lambda: "Noted." in rig.texts("assistant"), "the parent answers")

    [result] = message_texts(rig.faux.requests[-1], "toolResult")
    assert '[error] Subagent "[fg] check the tests" failed: model_error' in result
