"""Conformance tests of secret scrubbing: children never inherit secret-looking variables."""

from __future__ import annotations

import pytest

from pi_durable_tui.env._conformance.base import EnvConformanceBase
from pi_durable_tui.env._protocol import ExecutionEnv

SECRETS = {
    "CONFORMANCE_API_KEY": "sk-123",
    "CONFORMANCE_TOKEN": "tok",
    "CONFORMANCE_SECRET": "s",
    "CONFORMANCE_DB_PASSWORD": "pw",
    "CONFORMANCE_CREDENTIALS": "creds",
    "AWS_SECRET_ACCESS_KEY": "aws",
}


class SecretRules(EnvConformanceBase):
    """Inherited variables that look like secrets never reach a child (issue 7)."""

    async def test_secret_looking_variables_are_not_inherited(
        self, env: ExecutionEnv, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for name, value in SECRETS.items():
            monkeypatch.setenv(name, value)
        code, out, _ = await self.run(env, ["env"])
        assert code == 0
        names = {line.split("=", 1)[0] for line in out.splitlines()}
        assert names.isdisjoint(SECRETS)

    async def test_explicit_variables_are_kept_even_when_they_look_secret(
        self, env: ExecutionEnv
    ) -> None:
        code, out, _ = await self.run(
            env, ["sh", "-c", 'echo "$CONFORMANCE_TOKEN"'], variables={"CONFORMANCE_TOKEN": "ok"}
        )
        assert (code, out) == (0, "ok\n")
