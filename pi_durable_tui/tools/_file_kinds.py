"""What kind of file a few leading bytes show: image or binary (reference 3.1).

``read`` looks at the head of a file before decoding it: a supported image is
refused with ``unsupported_image`` and a binary file with a clear message,
instead of decoding noise into the model's context. Both checks need only the
first bytes (``SNIFF_BYTES``), so a huge file costs one small read.

Images are recognised by their signatures, with a second structural check
where the signature alone is short enough to occur in text: PNG must open with
its ``IHDR`` chunk header, WebP must carry a ``VP8``/``VP8L``/``VP8X`` chunk,
and BMP (whose signature is just ``BM``) must have a known DIB header size.
"""

from __future__ import annotations

import codecs

SNIFF_BYTES = 8192
"""How many leading bytes ``looks_binary`` inspects (8 KiB)."""

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_IHDR = b"\x00\x00\x00\x0dIHDR"  # length 13, then the chunk type
_WEBP_CHUNKS = (b"VP8 ", b"VP8L", b"VP8X")
_BMP_DIB_HEADER_SIZES = frozenset({12, 16, 40, 52, 56, 64, 108, 124})


def sniff_image(head: bytes) -> str | None:
    """Return the MIME type of a supported image, judged by its first bytes.

    Supported: PNG, JPEG, GIF (87a and 89a), WebP and BMP.

    Args:
        head: The first bytes of the file (32 are enough).

    Returns:
        ``"image/png"``, ``"image/jpeg"``, ``"image/gif"``, ``"image/webp"``,
        ``"image/bmp"``, or ``None`` when the bytes are not one of them.
    """
    if head.startswith(_PNG_SIGNATURE):
        return "image/png" if head[8:16] == _PNG_IHDR else None
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP" and head[12:16] in _WEBP_CHUNKS:
        return "image/webp"
    if head.startswith(b"BM") and len(head) >= 18:
        dib_header_size = int.from_bytes(head[14:18], "little")
        return "image/bmp" if dib_header_size in _BMP_DIB_HEADER_SIZES else None
    return None


def looks_binary(head: bytes) -> bool:
    """Tell whether a file's head is binary rather than UTF-8 text.

    Only the first ``SNIFF_BYTES`` bytes count. They are binary when they hold
    a NUL byte or are not valid UTF-8; a multi-byte character cut by the end of
    ``head`` is not held against it, since the cut is usually the caller's.

    Args:
        head: The first bytes of the file.

    Returns:
        True for binary content, False for (possibly empty) UTF-8 text.
    """
    sample = head[:SNIFF_BYTES]
    if b"\x00" in sample:
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        decoder.decode(sample, final=False)
    except UnicodeDecodeError:
        return True
    return False
