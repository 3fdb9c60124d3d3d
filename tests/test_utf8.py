"""Where UTF-8 may be cut (``pi_durable_tui._utf8``), the one rule env, harness and tools share."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui._utf8 import character_start

PROPERTY = settings(max_examples=200, database=None, derandomize=True, deadline=None)


@PROPERTY
@given(st.text(min_size=1), st.data())
def test_valid_text_is_cut_at_the_start_of_the_character_a_position_falls_in(
    text: str, data: st.DataObject
) -> None:
    encoded = text.encode("utf-8", "surrogatepass")
    index = data.draw(st.integers(0, len(encoded) - 1))
    cut = character_start(encoded, index)

    assert (
        encoded[:cut].decode("utf-8", "surrogatepass")
        + encoded[cut:].decode("utf-8", "surrogatepass")
        == text
    )
    assert index - cut < 4


@PROPERTY
@given(st.binary(min_size=1), st.data())
def test_any_bytes_decode_the_same_in_two_pieces_cut_at_a_boundary_as_whole(
    raw: bytes, data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(raw)))
    cut = character_start(raw, index)

    pieces = raw[:cut].decode("utf-8", "replace") + raw[cut:].decode("utf-8", "replace")
    assert pieces == raw.decode("utf-8", "replace")


def test_a_run_of_stray_continuation_bytes_is_a_boundary_in_a_text_and_in_a_chunk() -> None:
    # The decision for invalid bytes (module docstring): no lead byte claims them.
    assert character_start(b"ab" + b"\x80" * 5, 6) == 6
    assert character_start(b"a\x80\x80\x80\x80", 4, "unknown") == 4


def test_a_continuation_byte_claimed_by_its_lead_is_inside_a_character() -> None:
    euro = "€".encode()

    assert [character_start(euro, index) for index in range(3)] == [0, 0, 0]


def test_what_lies_before_the_bytes_decides_a_character_cut_by_their_start() -> None:
    tail_of_euro = b"\x82\xacx"

    assert character_start(tail_of_euro, 1, "nothing") == 1
    assert character_start(tail_of_euro, 1, "unknown") == 0
    assert character_start(tail_of_euro, 1, "gone") == -1
