"""The editor's shell mode on screen: ``!cmd`` and ``!!cmd`` over a real session (Pilot).

The real app runs headless over a started screen rig (faux model, SQLite store,
real bash): the card shows only what was committed, marked as the user's; the
model's next request carries ``!cmd`` (a ``history`` match rule answers only
then); Esc stops a running command; while the agent works it is refused.
"""

from __future__ import annotations

from pi_durable_tui.ai import FauxMatch, FauxProvider, faux_response, faux_text
from pi_durable_tui.app import Block
from pi_durable_tui.harness import SHELL_BUSY
from tests.app.screen_support import ScreenFactory, ScreenRig, call, gate_command, say
from tests.tui.test_real_harness import (
    Run,
    busy,
    notices,
    pidurable,
    shown_text,
    transcript,
    type_line,
    until,
)

__all__ = ["pidurable"]


def stored_shell(rig: ScreenRig) -> list[Block]:
    """The shell cards of committed ``pi.shell`` entries (not the live one while it runs)."""
    return [b for b in rig.blocks("shell") if b.entry_id is not None]


def seen_only_with(marker: str) -> FauxProvider:
    """A model that answers ``seen <marker>`` only when its request holds ``marker``."""
    return FauxProvider(
        [
            faux_response(faux_text(f"seen {marker}"), match=FauxMatch(history=marker)),
            say("nothing seen"),
        ]
    )


async def test_a_bang_line_shows_the_users_card_and_the_next_prompt_carries_its_output(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(faux=seen_only_with("a001"))
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "!echo a001")
        await until(pilot, lambda: bool(stored_shell(rig)), "the stored shell card")
        [block] = stored_shell(rig)
        await until(pilot, lambda: "a001" in shown_text(app, block.key), "its output")
        card = shown_text(app, block.key)
        assert card.startswith("! echo a001  (you)  ✓")
        assert "exit 0" in card
        assert app.editor.text == ""
        assert rig.faux.call_count == 0  # no turn started
        await type_line(pilot, "what did I run?")
        await until(pilot, lambda: "seen a001" in transcript(app), "the answer that saw it")


async def test_a_double_bang_line_is_shown_sanitised_and_the_model_never_sees_it(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(faux=seen_only_with("b002"))
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, r"!!printf 'b002\033]0;pwned\007 \033[31mred\n'")
        await until(pilot, lambda: bool(stored_shell(rig)), "the stored shell card")
        [block] = stored_shell(rig)
        await until(pilot, lambda: "red" in shown_text(app, block.key), "its output")
        card = shown_text(app, block.key)
        assert "(you, not sent to the model)" in card
        assert "\x1b" not in card
        assert "\x07" not in card
        await type_line(pilot, "what did I run?")
        await until(pilot, lambda: "nothing seen" in transcript(app), "the answer")
        assert "seen b002" not in transcript(app)


async def test_esc_stops_a_running_command_and_its_card_says_aborted(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen()
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "!echo started; sleep 30")
        await until(
            pilot,
            lambda: "started" in shown_text(app, "live/shell"),
            "the live card with committed output",
        )
        assert "(esc to stop)" in rig.model.status
        await pilot.press("escape")
        await until(
            pilot,
            lambda: any(b.tool and b.tool.status == "aborted" for b in rig.blocks("shell")),
            "the aborted entry",
        )
        [block] = rig.blocks("shell")
        await until(pilot, lambda: "[aborted]" in shown_text(app, block.key), "the mark")
        assert "live/shell" not in app.transcript.mounted_keys


async def test_a_bang_line_while_the_agent_works_is_refused_and_goes_back_into_the_editor(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(call("bash", command=gate_command()), say("Done."))
    async with pidurable(rig) as (app, pilot):
        await busy(pilot, rig)
        await type_line(pilot, "!touch ran.txt")
        await until(pilot, lambda: SHELL_BUSY in notices(app), "the refusal")
        assert app.editor.text == "!touch ran.txt"
        rig.release()
        await until(pilot, lambda: "Done." in transcript(app), "the answer")
        assert not (rig.workdir / "ran.txt").exists()
        assert rig.blocks("shell") == []
