"""Where UTF-8 may be cut (``pi_durable_tui._utf8``), the rules env, harness and tools share."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui._utf8 import continuation_start, inside_character

PROPERTY = settings(max_examples=200, database=None, derandomize=True, deadline=None)


@PROPERTY
@given(st.text(min_size=1), st.data())
def test_both_rules_cut_valid_text_at_the_start_of_the_character_a_position_falls_in(
    text: str, data: st.DataObject
) -> None:
    encoded = text.encode("utf-8", "surrogatepass")
    index = data.draw(st.integers(0, len(encoded) - 1))
    cut = continuation_start(encoded, index)

    assert cut == index - inside_character(encoded, index)
    assert encoded[cut:].decode("utf-8", "surrogatepass")


def test_a_run_of_stray_continuation_bytes_is_a_boundary_for_the_harness_rule() -> None:
    assert inside_character(b"ab" + b"\x80" * 5, 6) == 0


def test_a_continuation_byte_claimed_by_its_lead_is_inside_a_character() -> None:
    euro = "€".encode()

    assert [inside_character(euro, index) for index in range(3)] == [0, 1, 2]


def test_a_suffix_starting_with_continuation_bytes_starts_inside_a_character() -> None:
    assert inside_character(b"\x82\xacx", 0, suffix=True) == 1
    assert inside_character(b"\x82\xacx", 0) == 0


def test_the_chunk_rule_moves_back_over_every_continuation_byte_to_the_chunk_start() -> None:
    assert continuation_start(b"a\x80\x80\x80\x80", 4) == 0
    assert continuation_start(b"\x80\x80", 1) == 0
