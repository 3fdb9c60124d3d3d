"""The permission engine as a table: mode x tool x rule x path (issue 13; reliability.md X2).

Deny wins over allow; protected paths (pidurable's own files) always ask,
whatever the mode and the allow rules; plan mode refuses what is not a read;
``auto-edit`` lets edits inside the workspace and read-only commands run.
"""

from __future__ import annotations

import pytest

from pi_durable_tui.harness import (
    PermissionCall,
    PermissionPolicy,
    PermissionSettings,
    RuleError,
    RuleSpec,
    decide,
    parse_rule,
)

CWD = "/work/project"
PROTECTED = (".pidurable", ".git", "/home/user/.pidurable/*.json", "/home/user/.pidurable/sessions")


def call(tool: str, argument: str | None) -> PermissionCall:
    kind = {"bash": "command", "read": "path", "write": "path", "edit": "path"}.get(tool)
    return PermissionCall(tool, tool == "read", kind, argument, CWD)  # type: ignore[arg-type]


def policy(mode: str, allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> PermissionPolicy:
    specs = (
        *(RuleSpec(rule=r, effect="deny", source="user settings") for r in deny),
        *(RuleSpec(rule=r, effect="allow", source="user settings") for r in allow),
    )
    settings = PermissionSettings(mode=mode, rules=specs, protected=PROTECTED)  # type: ignore[arg-type]
    return settings.policy()


# (mode, tool, argument, allow, deny, expected outcome)
TABLE = [
    # plan: reads only
    ("plan", "read", "src/a.py", (), (), "allow"),
    ("plan", "read", "/etc/hosts", (), (), "allow"),
    ("plan", "bash", "ls -la", (), (), "allow"),
    ("plan", "bash", "npm test", ("bash(npm test)",), (), "deny"),
    ("plan", "write", "src/a.py", (), (), "deny"),
    ("plan", "edit", "src/a.py", ("edit",), (), "deny"),
    ("plan", "probe", None, (), (), "deny"),
    # ask: every change asks unless a rule allows it
    ("ask", "read", "src/a.py", (), (), "allow"),
    ("ask", "bash", "ls", (), (), "ask"),
    ("ask", "bash", "npm test", ("bash(npm test)",), (), "allow"),
    ("ask", "write", "src/a.py", (), (), "ask"),
    ("ask", "write", "src/a.py", ("write(src/**)",), (), "allow"),
    ("ask", "write", "docs/a.md", ("write(src/**)",), (), "ask"),
    ("ask", "edit", "src/a.py", ("edit",), (), "allow"),
    ("ask", "probe", None, (), (), "ask"),
    ("ask", "probe", None, ("probe",), (), "allow"),
    # auto-edit (the default): edits inside the workspace, read-only commands
    ("auto-edit", "write", "src/a.py", (), (), "allow"),
    ("auto-edit", "edit", "./src/../b.py", (), (), "allow"),
    ("auto-edit", "write", "/tmp/outside.txt", (), (), "ask"),
    ("auto-edit", "write", "../sibling/a.txt", (), (), "ask"),
    ("auto-edit", "write", "/tmp/outside.txt", ("write(/tmp/**)",), (), "allow"),
    ("auto-edit", "bash", "git status && ls", (), (), "allow"),
    ("auto-edit", "bash", "ls; rm -rf x", (), (), "ask"),
    ("auto-edit", "bash", "cat $(rm x)", (), (), "ask"),
    ("auto-edit", "bash", "npm test", (), (), "ask"),
    ("auto-edit", "bash", "npm test", ("bash(npm test)",), (), "allow"),
    ("auto-edit", "bash", "npm test --watch", ("bash(npm test)",), (), "ask"),
    ("auto-edit", "bash", "git commit -m 'x y'", ("bash(git commit:*)",), (), "allow"),
    ("auto-edit", "bash", "git commit -m x && ls", ("bash(git commit:*)",), (), "allow"),
    ("auto-edit", "bash", "git commit -m x; rm -rf /", ("bash(git commit:*)",), (), "ask"),
    ("auto-edit", "bash", "git commit -m $(rm x)", ("bash(git commit:*)",), (), "ask"),
    ("auto-edit", "bash", "git commit > log", ("bash(git commit:*)",), (), "ask"),
    ("auto-edit", "bash", "git commitx", ("bash(git commit:*)",), (), "ask"),
    ("auto-edit", "bash", "anything at all", ("bash",), (), "allow"),
    ("auto-edit", "probe", None, (), (), "ask"),
    # auto: nothing waits
    ("auto", "bash", "rm -rf build", (), (), "allow"),
    ("auto", "write", "/tmp/outside.txt", (), (), "allow"),
    ("auto", "probe", None, (), (), "allow"),
    # deny wins over allow, in every mode
    ("auto", "bash", "curl http://x", ("bash",), ("bash(curl:*)",), "deny"),
    ("auto", "bash", "ls && curl http://x", (), ("bash(curl:*)",), "deny"),
    ("auto", "bash", "echo $(curl http://x)", (), ("bash(curl:*)",), "deny"),
    ("auto", "bash", "sudo curl http://x", (), ("bash(curl:*)",), "deny"),
    ("auto", "bash", "env A=1 nohup curl x", (), ("bash(curl:*)",), "deny"),
    ("auto", "bash", "timeout 5 curl x", (), ("bash(curl:*)",), "deny"),
    ("auto-edit", "read", ".env", (), ("read(.env)",), "deny"),
    ("auto-edit", "read", "config/.env", (), ("read(.env)",), "deny"),
    ("auto-edit", "read", ".env.example", (), ("read(.env)",), "allow"),
    ("plan", "read", "secrets/key.pem", (), ("read(secrets)",), "deny"),
    ("auto", "write", "src/a.py", ("write",), ("write(src/**)",), "deny"),
    ("auto", "probe", None, ("probe",), ("probe",), "deny"),
    # protected paths always ask (never refused outright outside plan), rules or not
    ("auto", "write", ".pidurable/settings.json", (), (), "ask"),
    ("auto", "edit", "sub/.pidurable/settings.json", ("edit",), (), "ask"),
    ("auto-edit", "write", ".git/config", ("write",), (), "ask"),
    ("auto", "write", "/home/user/.pidurable/settings.json", (), (), "ask"),
    ("auto", "write", "AGENTS.md", (), (), "allow"),
    ("auto-edit", "write", "docs/AGENTS.md", (), (), "allow"),
    ("auto", "bash", "echo '{}' > .pidurable/settings.json", ("bash",), (), "ask"),
    ("auto", "bash", "cp x .pidurable/settings.json", (), (), "ask"),
    ("plan", "write", ".pidurable/settings.json", (), (), "deny"),
    ("auto", "read", ".pidurable/settings.json", (), (), "allow"),
    ("auto", "write", "/home/user/.pidurable/sessions/x/session.sqlite", (), (), "ask"),
]


@pytest.mark.parametrize(("mode", "tool", "argument", "allow", "deny", "expected"), TABLE)
def test_the_decision_follows_the_table(
    mode: str,
    tool: str,
    argument: str | None,
    allow: tuple[str, ...],
    deny: tuple[str, ...],
    expected: str,
) -> None:
    decision = decide(call(tool, argument), policy(mode, allow, deny))
    assert decision.outcome == expected, decision


def test_a_deny_names_its_rule_and_where_it_came_from() -> None:
    decision = decide(call("bash", "curl x"), policy("auto", deny=("bash(curl:*)",)))
    assert decision.rule is not None
    assert decision.rule.source == "user settings"
    assert "bash(curl:*)" in decision.reason
    assert "user settings" in decision.reason


def test_an_ask_suggests_the_exact_rule_that_allow_always_would_add() -> None:
    decision = decide(call("bash", "npm test"), policy("auto-edit"))
    assert decision.suggestion == "bash(npm test)"


def test_a_protected_path_asks_without_offering_a_rule() -> None:
    decision = decide(call("write", ".pidurable/settings.json"), policy("auto"))
    assert decision.protected
    assert decision.suggestion is None


def test_a_workspace_inside_a_protected_directory_is_matched_below_the_workspace_only() -> None:
    inside = PermissionCall("write", False, "path", "calc.py", "/home/user/.pidurable/demos/ws")
    assert decide(inside, policy("auto")).outcome == "allow"
    own = PermissionCall("write", False, "path", ".pidurable/x", "/home/user/.pidurable/demos/ws")
    assert decide(own, policy("auto")).outcome == "ask"


def test_a_symlink_to_a_protected_directory_is_protected(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / ".pidurable").mkdir()
    (tmp_path / "innocent").symlink_to(tmp_path / ".pidurable")
    found = PermissionCall("write", False, "path", "innocent/settings.json", str(tmp_path))
    assert decide(found, policy("auto")).outcome == "ask"


def test_session_rules_and_mode_come_on_top_of_the_settings() -> None:
    settings = PermissionSettings(mode="ask")
    chosen = settings.policy(mode="plan", session_rules=["bash(make)"])
    assert chosen.mode == "plan"
    assert [(r.text, r.source) for r in chosen.rules] == [("bash(make)", "session")]


@pytest.mark.parametrize("text", ["", "bash(", "bash()", "(x)", "two words"])
def test_a_malformed_rule_is_refused_with_a_message(text: str) -> None:
    with pytest.raises(RuleError, match="tool or tool\\(pattern\\)"):
        parse_rule(text, "allow", "command line")


@pytest.mark.parametrize(
    ("kind", "argument"),
    [
        ("command", "rm -rf /:*"),
        ("command", "make test)"),
        ("path", "src/**"),
        ("path", "a?.txt"),
        ("path", "[ab].txt"),
    ],
)
def test_an_argument_holding_pattern_characters_is_offered_no_rule(
    kind: str, argument: str
) -> None:
    tool = "bash" if kind == "command" else "write"
    call = PermissionCall(tool, False, kind, argument, "/work")  # type: ignore[arg-type]
    decision = decide(call, PermissionSettings(mode="ask").policy())
    assert decision.outcome == "ask"
    assert decision.suggestion is None  # "allow always" would widen past what was shown


def test_a_plain_command_is_offered_the_rule_that_names_exactly_it() -> None:
    call = PermissionCall("bash", False, "command", "make test", "/work")
    assert decide(call, PermissionSettings(mode="ask").policy()).suggestion == "bash(make test)"
