"""The wire's message family: framing, the checks of what a client sends, its mirror (issue 15)."""

from __future__ import annotations

import pytest

from pi_durable_tui.app._wire import (
    MAX_MESSAGE,
    PROTOCOL,
    Mirror,
    WireError,
    check_call,
    check_hello,
    decode,
    encode,
)


def test_a_message_is_one_line_of_json_and_a_lone_surrogate_survives_the_trip() -> None:
    line = encode({"t": "commit", "seq": 3, "name": "caf\udce9"})
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert decode(line) == {"t": "commit", "seq": 3, "name": "caf\udce9"}


def test_no_line_holds_a_raw_control_character_del_and_c1_are_escaped_too() -> None:
    value = "a\x1b[2Jb\x7fc\x9b31md\u2028e"
    line = encode({"t": "commit", "text": value})
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in line.decode()[:-1])
    assert decode(line)["text"] == value


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"{nope", "malformed"),
        (b'"a string"', "malformed"),
        (b'{"seq": 1}', "malformed"),
        (b'{"t": "' + b"x" * MAX_MESSAGE + b'"}', "oversized"),
    ],
)
def test_a_line_that_is_not_a_message_is_refused_with_its_reason(line: bytes, code: str) -> None:
    with pytest.raises(WireError) as caught:
        decode(line)
    assert caught.value.code == code


def test_hello_must_come_first_with_the_hosts_protocol_version() -> None:
    check_hello({"t": "hello", "v": PROTOCOL, "name": "web", "since": 12})
    with pytest.raises(WireError, match="first message"):
        check_hello({"t": "call", "v": PROTOCOL})
    with pytest.raises(WireError, match="Protocol version 99"):
        check_hello({"t": "hello", "v": 99})
    with pytest.raises(WireError, match="window"):
        check_hello({"t": "hello", "v": PROTOCOL, "window": 100_000})


@pytest.mark.parametrize(
    ("call", "words"),
    [
        ({"t": "call", "id": True, "method": "abort"}, "call.id"),
        ({"t": "call", "id": 1, "method": "shell"}, "Unknown method 'shell'"),
        ({"t": "call", "id": 1, "method": "submit", "args": {}}, "missing argument 'text'"),
        ({"t": "call", "id": 1, "method": "submit", "args": {"text": 1}}, "submit.text"),
        ({"t": "call", "id": 1, "method": "abort", "args": {"all": True}}, "unknown argument"),
        ({"t": "call", "id": 1, "method": "older", "args": {"before": True, "count": 1}}, "older"),
    ],
)
def test_a_call_with_an_unknown_method_or_a_wrong_argument_is_refused(
    call: dict[str, object], words: str
) -> None:
    with pytest.raises(WireError, match=words):
        check_call(call)


def test_a_known_call_gives_its_id_method_and_arguments() -> None:
    call = {"t": "call", "id": 7, "method": "submit", "args": {"text": "hi", "follow_up": True}}
    assert check_call(call) == (7, "submit", {"text": "hi", "follow_up": True})


def test_the_mirror_applies_a_snapshot_then_commit_ops_and_ignores_a_stale_commit() -> None:
    mirror = Mirror()
    mirror.apply(
        {
            "t": "snapshot",
            "seq": 5,
            "conversation": 1,
            "entries": [{"id": 9, "kind": "pi.user"}],
            "has_older": True,
            "docs": {"pi.live": {"generation": {"message": {"text": "Hel"}}}},
            "tasks": [],
        }
    )
    append = {"op": "append", "path": ["generation", "message", "text"], "text": "lo"}
    assert mirror.apply({"t": "commit", "seq": 6, "docs": [{"kind": "pi.live", "ops": [append]}]})
    assert mirror.docs["pi.live"]["generation"]["message"]["text"] == "Hello"
    assert not mirror.apply({"t": "commit", "seq": 6, "entries": [{"id": 10}]})
    mirror.apply({"t": "commit", "seq": 7, "entries": [{"id": 10, "kind": "pi.assistant"}]})
    assert [e["id"] for e in mirror.entries] == [9, 10]
    assert mirror.seq == 7
    retire = {"kind": "pi.live", "ops": [], "retired": True}
    mirror.apply({"t": "commit", "seq": 8, "docs": [retire]})
    assert "pi.live" not in mirror.docs


def test_operations_that_do_not_fit_the_mirror_are_malformed() -> None:
    mirror = Mirror()
    mirror.apply({"t": "snapshot", "seq": 1, "conversation": 1, "docs": {"pi.live": {}}})
    bad = {"op": "append", "path": ["nothing", "here"], "text": "x"}
    with pytest.raises(WireError, match="do not apply"):
        mirror.apply({"t": "commit", "seq": 2, "docs": [{"kind": "pi.live", "ops": [bad]}]})
