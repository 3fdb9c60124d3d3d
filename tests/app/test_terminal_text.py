"""``terminal_safe`` and the view values built with it: no escape sequence reaches the screen.

One test per sequence family (reference: ECMA-48 / the xterm control sequences):
CSI, OSC (BEL- and ST-terminated, unterminated), DCS, SOS, PM, APC, other ESC
sequences, their 8-bit C1 introducers, lone C0 and C1 characters and DEL; what
is printable (and newline, tab) is kept (issue 13).
"""

from __future__ import annotations

import pytest

from pi_durable_tui.app import Block, Footer, Notice, ThinkingPart, ToolCard, terminal_safe
from pi_durable_tui.bench.hostile_escapes import EVIL


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ("a\x1b[2Jb", "ab"),  # CSI: clear the screen
        ("a\x1b[31;1mred\x1b[0mb", "aredb"),  # CSI: colours
        ("a\x1b[?1049hb", "ab"),  # CSI with a private parameter: the alternate screen
        ("a\x1b]52;c;aGFja2Vk\x07b", "ab"),  # OSC 52 (clipboard), BEL-terminated
        ("a\x1b]0;pwned\x1b\\b", "ab"),  # OSC 0 (title), ST-terminated
        ("a\x1b]8;;https://x\x07link\x1b]8;;\x07b", "alinkb"),  # OSC 8 (a hyperlink)
        ("a\x1b]0;no end\nnext", "a\nnext"),  # unterminated: up to the end of the line
        ("a\x1b]2;to the end", "a"),  # unterminated at the end of the text
        ("a\x1bPq#0;2;0;0;0\x1b\\b", "ab"),  # DCS (sixel)
        ("a\x1bXsos\x1b\\b", "ab"),  # SOS
        ("a\x1b^pm\x1b\\b", "ab"),  # PM
        ("a\x1b_Gf=100;AAAA\x1b\\b", "ab"),  # APC (the kitty graphics protocol)
        ("a\x1bcb", "ab"),  # RIS: a full reset
        ("a\x1b7b\x1b8c", "abc"),  # save / restore the cursor
        ("a\x1b(0b", "ab"),  # a character set designation (three bytes)
        ("a\x9b2Jb", "ab"),  # 8-bit CSI
        ("a\x9d0;pwned\x9cb", "ab"),  # 8-bit OSC and ST
        ("a\x90dcs\x9cb\x98sos\x9cc\x9epm\x9cd\x9fapc\x9ce", "abcde"),  # 8-bit DCS SOS PM APC
        ("a\x1bb", "a"),  # ESC and a final byte is a sequence (``ESC b``): both go
        ("a\x1b", "a"),  # a lone ESC at the end
        ("bell\x07 back\x08space\r\n\x00nul\x7fdel\x85nel", "bell backspace\nnuldelnel"),
        ("tabs\tand\nnewlines stay", "tabs\tand\nnewlines stay"),
        ("unicode: é ✓ 日本 🙂 [b]markup[/b]", "unicode: é ✓ 日本 🙂 [b]markup[/b]"),
    ],
)
def test_terminal_safe_removes_each_sequence_family_and_keeps_text(raw: str, safe: str) -> None:
    assert terminal_safe(raw) == safe
    assert terminal_safe(safe) == safe  # idempotent


def test_a_clean_text_is_returned_as_the_same_object() -> None:
    text = "nothing to remove\n" * 100
    assert terminal_safe(text) is text


def test_every_string_of_a_view_value_is_made_safe_when_it_is_built() -> None:
    card = ToolCard(
        "c",
        "bash",
        "error",
        arguments={"command": f"echo {EVIL}", EVIL: [EVIL]},
        path=f"a{EVIL}.txt",
        command=f"echo {EVIL}",
        output=f"out{EVIL}",
        diff=f"+{EVIL}",
        preview=EVIL,
        error=f"failed {EVIL}",
    )
    block = Block(
        "e1", "assistant", 1, text=f"hi {EVIL}", thinking=(ThinkingPart(f"hm {EVIL}"),), tool=card
    )
    values = [
        block,
        Notice("error", f"n {EVIL}"),
        Footer(cwd=f"/tmp/{EVIL}", model=EVIL),
    ]

    assert "\x1b" not in repr(values)
    assert "\x07" not in repr(values)
    assert block.text == "hi "
    assert card.arguments == {"command": "echo ", "": [""]}
    assert card.path == "a.txt"
