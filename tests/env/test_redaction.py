"""``SecretRedactor``, the one redactor: texts, growing texts, JSON, byte streams (issue 13)."""

from __future__ import annotations

import pytest

from pi_durable_tui.env import SecretRedactor

KEY = "sk-live-0123456789abcdef"


def test_only_secret_looking_variables_with_long_values_are_secrets() -> None:
    redact = SecretRedactor.from_environ(
        {"OPENAI_API_KEY": KEY, "GITHUB_TOKEN": "1", "HOME": "/home/someone-long"}
    )

    assert redact.text(f"{KEY} 1 /home/someone-long") == "[redacted] 1 /home/someone-long"


def test_the_longest_secret_wins_when_one_contains_another() -> None:
    redact = SecretRedactor([KEY, KEY[:12]])

    assert redact.text(f"a {KEY} b {KEY[:12]} c") == "a [redacted] b [redacted] c"


def test_a_complete_text_redacts_pieces_of_a_secret_cut_at_its_edges() -> None:
    redact = SecretRedactor([KEY])

    assert redact.text(f"{KEY[-9:]} middle {KEY[:9]}") == "[redacted] middle [redacted]"
    assert redact.text(f"{KEY[-3:]} short pieces stay {KEY[:3]}") == (
        f"{KEY[-3:]} short pieces stay {KEY[:3]}"
    )


def test_a_growing_text_withholds_what_could_start_a_secret() -> None:
    redact = SecretRedactor([KEY])

    assert redact.streaming(f"key={KEY[:3]}") == "key="
    assert redact.streaming(f"key={KEY}\n") == "key=[redacted]\n"
    assert redact.streaming("nothing to hide") == "nothing to hide"


def test_json_values_and_keys_are_redacted() -> None:
    redact = SecretRedactor([KEY])

    assert redact.json({KEY: [KEY, 1, None, {"k": f"x{KEY}"}]}) == {
        "[redacted]": ["[redacted]", 1, None, {"k": "x[redacted]"}]
    }


def test_provider_keys_given_as_extra_are_secrets_whatever_their_variable() -> None:
    redact = SecretRedactor.from_environ({"HOME": "/home/someone"}, extra=[KEY])

    assert redact.text(f"my key is {KEY}.") == "my key is [redacted]."


def test_json_without_a_secret_is_returned_as_the_same_object() -> None:
    redact = SecretRedactor([KEY])
    value = {"a": ["b", {"c": "d"}], "n": 1}

    assert redact.json(value) is value


def growing(redact: SecretRedactor, text: str, cuts: tuple[int, ...]) -> list[str]:
    """What a stream commits after each chunk: its whole text so far, through ``streaming``."""
    ends = [*cuts, len(text)]
    return [redact.streaming(text[:end]) for end in ends]


@pytest.mark.parametrize("chunks", [2, 3, 5, len(KEY)])
def test_a_secret_split_over_n_chunks_at_every_split_point_is_never_shown(chunks: int) -> None:
    redact = SecretRedactor([KEY])
    text = f"the key is {KEY} ok"
    start = text.index(KEY)
    for first in range(1, len(KEY)):
        # chunk boundaries: one at ``first`` inside the key, the rest spread after it
        step = max(1, (len(KEY) - first) // max(1, chunks - 1))
        cuts = tuple(sorted({start + first, *range(start + first, start + len(KEY), step)}))
        for shown in growing(redact, text, cuts):
            for size in range(1, len(KEY) + 1):
                piece = KEY[:size]
                if size > 1:
                    assert piece not in shown.removeprefix("the key is "), (cuts, shown)
        assert growing(redact, text, cuts)[-1] == "the key is [redacted] ok"


def test_a_withheld_start_is_released_once_the_text_shows_it_is_no_secret() -> None:
    redact = SecretRedactor([KEY])

    assert redact.streaming("x sk-li") == "x "
    assert redact.streaming("x sk-lizard") == "x sk-lizard"


def test_a_byte_stream_redacts_a_secret_cut_at_any_point() -> None:
    redact = SecretRedactor([KEY])
    data = f"<{KEY}>".encode()
    for cut in range(1, len(data)):
        out, held = redact.chunk(data[:cut])
        rest, held = redact.chunk(held + data[cut:], final=True)
        assert out + rest == b"<[redacted]>"
        assert held == b""
