"""Image sniffing and binary detection from a file's first bytes (reference 3.1)."""

from __future__ import annotations

import pytest

from pi_durable_tui.tools._file_kinds import SNIFF_BYTES, looks_binary, sniff_image

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
BMP = b"BM" + b"\x46\x00\x00\x00" + b"\x00" * 4 + b"\x36\x00\x00\x00" + b"\x28\x00\x00\x00"


@pytest.mark.parametrize(
    ("head", "mime"),
    [
        pytest.param(PNG, "image/png", id="png"),
        pytest.param(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "image/jpeg", id="jpeg"),
        pytest.param(b"GIF87a\x01\x00\x01\x00", "image/gif", id="gif87a"),
        pytest.param(b"GIF89a\x01\x00\x01\x00", "image/gif", id="gif89a"),
        pytest.param(b"RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00", "image/webp", id="webp"),
        pytest.param(b"RIFF\x24\x00\x00\x00WEBPVP8L\x18\x00\x00\x00", "image/webp", id="webp-l"),
        pytest.param(BMP, "image/bmp", id="bmp"),
    ],
)
def test_supported_images_are_recognised_by_their_header(head: bytes, mime: str) -> None:
    assert sniff_image(head) == mime


@pytest.mark.parametrize(
    "head",
    [
        pytest.param(PNG[:8] + b"\x00\x00\x00\x0dIDAT", id="png-without-ihdr-first"),
        pytest.param(PNG[:8], id="png-signature-only"),
        pytest.param(b"RIFF\x24\x00\x00\x00WAVEfmt ", id="riff-wave"),
        pytest.param(b"RIFF\x24\x00\x00\x00WEBPJUNK", id="webp-without-vp8-chunk"),
        pytest.param(b"BMW cars are listed below, one per line.\n", id="text-starting-with-bm"),
        pytest.param(b"GIF88a", id="unknown-gif-version"),
        pytest.param(b"%PDF-1.7\n", id="pdf"),
        pytest.param(b"", id="empty"),
    ],
)
def test_lookalikes_and_other_files_are_not_images(head: bytes) -> None:
    assert sniff_image(head) is None


def test_utf8_text_is_not_binary() -> None:
    assert not looks_binary("caf\u00e9 \u2014 \U0001f642\n".encode())
    assert not looks_binary(b"")


def test_a_nul_byte_makes_a_file_binary() -> None:
    assert looks_binary(b"text\x00more")


def test_bytes_that_are_not_utf8_make_a_file_binary() -> None:
    assert looks_binary(b"caf\xe9 latin-1")
    assert looks_binary(b"\xff\xfe")


def test_a_character_cut_by_the_end_of_the_head_is_not_held_against_it() -> None:
    head = ("x" * (SNIFF_BYTES - 1) + "\u00e9").encode()  # the 2-byte character straddles 8 KiB

    assert not looks_binary(head)
    assert not looks_binary("\u20ac".encode()[:2])


def test_only_the_first_8_kib_count() -> None:
    assert not looks_binary(b"a" * SNIFF_BYTES + b"\x00\xff")
