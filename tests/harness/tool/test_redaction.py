"""``SecretRedactor``: secret values of the process never reach a committed entry (issue 7)."""

from __future__ import annotations

from pi_durable_tui.harness.tool._redaction import SecretRedactor

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
