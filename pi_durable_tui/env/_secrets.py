"""Which inherited environment variables a child process never sees (issue 7).

A coding agent runs commands the model wrote; those commands must not be able
to read the API keys the agent itself runs with (``env | curl ...``). So the
local environment drops, from the environment a child *inherits*, every
variable whose name looks like a secret, unless the name is allow-listed
(``LocalEnv(allow_env=[...])``, fed from settings). Variables the caller passes
explicitly to ``exec(env=...)`` are always kept: the caller chose them.

A name is a secret when its upper-cased form matches one of
``SECRET_NAME_PATTERNS`` (shell-style globs):

- keys: ``*API_KEY``, ``*APIKEY``, ``*_ACCESS_KEY``, ``*_ACCESS_KEY_ID``,
  ``*_SECRET_KEY``, ``*_PRIVATE_KEY``, ``*_ACCOUNT_KEY``, ``*_STORAGE_KEY``,
  ``*_SIGNING_KEY``, ``*_ENCRYPTION_KEY``, ``*_MASTER_KEY``, ``*_AUTH_KEY``;
- tokens: ``*TOKEN`` (``GITHUB_TOKEN``, ``HF_TOKEN``, ``AWS_SESSION_TOKEN``;
  not ``TOKENIZERS_PARALLELISM``), ``*_TOKEN_*``;
- secrets and passwords: ``*SECRET*`` (``AWS_SECRET_ACCESS_KEY``,
  ``AZURE_CLIENT_SECRET``), ``*PASSWORD*``, ``*PASSWD*``, ``*PASSPHRASE*``,
  ``*_PWD`` (``MYSQL_PWD``; not ``PWD`` or ``OLDPWD``);
- credentials: ``*_CREDENTIAL``, ``*_CREDENTIALS`` (``GOOGLE_APPLICATION_CREDENTIALS``),
  ``*_CREDS``, ``*_AUTH`` (``NPM_CONFIG__AUTH``), ``*_CONNECTION_STRING``
  (``AZURE_STORAGE_CONNECTION_STRING``), ``*_SAS_TOKEN``, ``*WEBHOOK_URL``;
- cloud names the patterns above would miss: ``AWS_ACCESS_KEY_ID`` (caught by
  ``*_ACCESS_KEY_ID``) and the exact names in ``SECRET_NAMES``.

An allow-list entry is an exact name or a glob (``GITHUB_*``), matched
case-sensitively against the variable's real name.

A variable a configured provider reads its key from is a secret whatever its
name (``LLAMA_KEY``): the app names those (``LocalEnv(secret_names=...)``), and
they are dropped and redacted like the others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase, translate

SECRET_NAME_PATTERNS: tuple[str, ...] = (
    "*API_KEY",
    "*APIKEY",
    "*_ACCESS_KEY",
    "*_ACCESS_KEY_ID",
    "*_SECRET_KEY",
    "*_PRIVATE_KEY",
    "*_ACCOUNT_KEY",
    "*_STORAGE_KEY",
    "*_SIGNING_KEY",
    "*_ENCRYPTION_KEY",
    "*_MASTER_KEY",
    "*_AUTH_KEY",
    "*TOKEN",
    "*_TOKEN_*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*_PWD",
    "*_CREDENTIAL",
    "*_CREDENTIALS",
    "*_CREDS",
    "*_AUTH",
    "*_CONNECTION_STRING",
    "*WEBHOOK_URL",
)
"""Globs over upper-cased variable names; a match makes the variable a secret."""

SECRET_NAMES: frozenset[str] = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AZURE_CLIENT_CERTIFICATE_PASSWORD",
        "CLOUDSDK_AUTH_ACCESS_TOKEN",
        "GOOGLE_OAUTH_ACCESS_TOKEN",
        "GH_ENTERPRISE_TOKEN",
    }
)
"""Exact upper-cased names that are secrets whatever the patterns say."""

# One regex for all globs: scrubbing runs on every exec, over every inherited name.
_SECRET_PATTERN = re.compile("|".join(translate(p) for p in SECRET_NAME_PATTERNS))


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name looks like it holds a secret.

    Args:
        name: The variable name, in any case.

    Returns:
        True when the name is in ``SECRET_NAMES`` or matches a ``SECRET_NAME_PATTERNS`` glob.
    """
    upper = name.upper()
    return upper in SECRET_NAMES or _SECRET_PATTERN.match(upper) is not None


def scrub_environment(
    environ: Mapping[str, str], allow: Iterable[str] = (), secret_names: Iterable[str] = ()
) -> dict[str, str]:
    """Copy ``environ`` without the variables that look like secrets.

    Args:
        environ: The environment a child would inherit.
        allow: Names or globs kept even when they look like secrets.
        secret_names: Exact names that are secrets whatever they look like (the
            variables configured providers read their keys from).

    Returns:
        A new dict holding every variable that is not a secret or is allowed.
    """
    allowed = tuple(allow)
    declared = frozenset(secret_names)

    def kept(name: str) -> bool:
        if not is_secret_name(name) and name not in declared:
            return True
        return any(name == entry or fnmatchcase(name, entry) for entry in allowed)

    return {name: value for name, value in environ.items() if kept(name)}
