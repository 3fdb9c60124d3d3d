"""Run policy: the harness settings and their defaults (R34), and the retry decision (R86, R87).

Settings are never stored. The harness takes either a ``Settings`` value or a
zero-argument callable returning one, and reads it again at every decision, so a
settings file edited while the agent runs applies at the next use (R33, R34).
Object fields merge key by key over the defaults: ``Settings(retry={"enabled":
False})`` keeps ``max_retries=3``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pi_durable_tui.ai import AssistantMessage, is_retryable_error, retry_after_ms
from pi_durable_tui.harness.permissions import PermissionSettings


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RetrySettings(_Section):
    """Retries of failed model requests (R86, R87)."""

    enabled: bool = True
    max_retries: int = Field(default=3, ge=0)
    """Retries after the first attempt."""
    base_delay_ms: int = Field(default=2000, ge=0)
    max_agent_delay_ms: int = Field(default=60000, ge=0)
    """The longest wait the harness accepts, its own backoff or a provider's retry-after."""


class CompactionSettings(_Section):
    """Automatic compaction thresholds (R108)."""

    enabled: bool = True
    reserve_tokens: int = Field(default=16384, ge=0)
    keep_recent_tokens: int = Field(default=20000, ge=0)
    background_tokens: int = Field(default=32768, ge=0)


class ProgressSettings(_Section):
    """How often streamed partials and tool output are committed (R85, R103)."""

    partial_interval_ms: int = Field(default=100, ge=0)
    output_interval_ms: int = Field(default=100, ge=0)


QueueMode = Literal["one-at-a-time", "all"]


class Settings(_Section):
    """The harness's run policy. Every field has the reference default (R34)."""

    stream: dict[str, Any] = Field(default_factory=dict)
    """Extra stream options pinned in each request (R84); unknown keys pass through."""
    retry: RetrySettings = Field(default_factory=RetrySettings)
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    progress: ProgressSettings = Field(default_factory=ProgressSettings)
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    steering_mode: QueueMode = "one-at-a-time"
    follow_up_mode: QueueMode = "one-at-a-time"
    context_retention_ms: int = Field(default=600000, ge=0)
    extensions: list[str] | None = None
    """The host default extension selection; ``None`` means every installed one (R30)."""
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    """The permission engine's mode, rules and protected paths (issue 13; default: all run)."""
    tool_search_share: float = Field(default=0.1, ge=0, le=1)
    """The share of the context window deferred tools' schemas may take before the
    model gets ``tool_search`` instead of them (issue 16)."""


SettingsSource = Settings | Callable[[], Settings]
"""A settings value, or a callable the harness calls at every decision."""


def read_settings(source: SettingsSource) -> Settings:
    """Return the current settings of a source (R34)."""
    return source() if callable(source) else source


def retry_wait_ms(policy: RetrySettings, message: AssistantMessage, attempt: int) -> int | None:
    """Decide whether a failed response is sent again, and after how long (R86, R111).

    The one retry decision of the harness: generation and compaction both ask
    it. A response is retried when it failed (stop reason ``error``), the
    failure can change on retry (``is_retryable_error``: not a context
    overflow, not a 4xx other than 408/429, not a server that cannot parse the
    model's output), retries are enabled, ``attempt`` is within
    ``max_retries`` and the provider does not ask for a longer wait than the
    policy accepts.

    Args:
        policy: The retry settings read now (R33).
        message: The final message of the failed attempt.
        attempt: The attempt that failed, from 1.

    Returns:
        Milliseconds to wait before the next attempt, or ``None`` to give up.
    """
    if message.stop_reason != "error" or not is_retryable_error(message):
        return None
    if not policy.enabled or attempt > policy.max_retries:
        return None
    return retry_delay_ms(policy, attempt, retry_after_ms(message))


def retry_delay_ms(policy: RetrySettings, attempt: int, retry_after_ms: int | None) -> int | None:
    """Return how long to wait before retrying ``attempt``, or ``None`` to give up.

    The delay doubles from ``base_delay_ms`` (2 s, 4 s, 8 s ...), capped at
    ``max_agent_delay_ms``; a provider's retry-after wins when it is longer, but a
    provider asking for more than ``max_agent_delay_ms`` is not waited for: the
    attempt fails instead, as Pi does.

    Args:
        policy: The retry settings read now (R33).
        attempt: The attempt that failed, from 1.
        retry_after_ms: What the provider asked for, if anything.

    Returns:
        Milliseconds to wait, or ``None`` when the provider's wait is too long.
    """
    if retry_after_ms is not None and retry_after_ms > policy.max_agent_delay_ms:
        return None
    delay = min(policy.base_delay_ms * (2 ** max(0, attempt - 1)), policy.max_agent_delay_ms)
    return max(delay, retry_after_ms or 0)
