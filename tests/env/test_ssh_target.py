"""``ssh://user@host[:port]/path``: what ``--env`` and the ``"env"`` setting accept (issue 17)."""

from __future__ import annotations

import pytest

from pi_durable_tui.env.ssh import SshTarget, parse_ssh_url


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("ssh://bob@build.example/srv/app", SshTarget("bob", "build.example", 22, "/srv/app")),
        ("ssh://bob@10.0.0.7:2222/srv/./app/", SshTarget("bob", "10.0.0.7", 2222, "/srv/app")),
        ("ssh://bob@h/srv/my%20app", SshTarget("bob", "h", 22, "/srv/my app")),
        ("ssh://bob@h/~", SshTarget("bob", "h", 22, "~")),
        ("ssh://bob@h:22/~/work/x", SshTarget("bob", "h", 22, "~/work/x")),
        ("ssh://bob@[::1]:2200/x", SshTarget("bob", "::1", 2200, "/x")),
    ],
)
def test_a_good_url_names_user_host_port_and_working_directory(url: str, target: SshTarget) -> None:
    assert parse_ssh_url(url) == target


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://bob@h/x", "it must start with ssh://"),
        ("bob@h:/x", "it must start with ssh://"),
        ("ssh://h/x", "it names no user"),
        ("ssh://bob@/x", "it names no host"),
        ("ssh://bob@h", "it names no working directory"),
        ("ssh://bob@h:0/x", "the port must be a number from 1 to 65535"),
        ("ssh://bob@h:99999/x", "the port must be a number from 1 to 65535"),
        ("ssh://bob@h:port/x", "the port must be a number from 1 to 65535"),
        ("ssh://bob:hunter2@h/x", "passwords are not taken from URLs"),
        ("ssh://bob@h/x?y=1", "it may not have a ?query or #fragment"),
        ("ssh://bob@h/x\n", "it contains a control character"),
    ],
)
def test_a_bad_url_is_one_line_saying_what_is_wrong(url: str, reason: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_ssh_url(url)
    message = str(caught.value)
    assert reason in message
    assert "\n" not in message
    assert message.endswith("expected ssh://user@host[:port]/absolute/path")
    assert "hunter2" not in message


def test_a_target_prints_back_as_its_url() -> None:
    assert parse_ssh_url("ssh://bob@h/~/x").url() == "ssh://bob@h:22/~/x"
    assert SshTarget("bob", "::1", 2200, "/x").authority == "bob@[::1]:2200"
