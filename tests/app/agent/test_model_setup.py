"""Models of a run: custom providers speaking their wire API, --base-url, --list-models.

The providers talk to a real HTTP server on 127.0.0.1 serving recorded streams.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.app import (
    AppSettings,
    ModelChoiceError,
    build_models,
    choose_model,
    list_models_text,
)
from tests.ai.sse_server import SseServer
from tests.app.conftest import OpenApp
from tests.app.support import run, write_script, write_settings

ENDPOINTS = {
    "openai-completions": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic-messages": "/v1/messages",
}

LIMIT_FIELDS = {
    "openai-completions": "max_tokens",
    "openai-responses": "max_output_tokens",
    "anthropic-messages": "max_tokens",
}


def local_provider(base_url: str, api: str = "openai-completions", **fields: Any) -> dict[str, Any]:
    """A custom provider declaration as a settings file holds it."""
    model = {"id": "qwen3-8b", "context_window": 32768, "max_tokens": 4096}
    return {"name": "local", "base_url": base_url, "api": api, "models": [model], **fields}


@pytest.mark.parametrize("api", list(ENDPOINTS))
async def test_a_custom_provider_from_settings_is_spoken_to_in_its_declared_wire_api(
    open_app: OpenApp,
    home: Path,
    sse_server: SseServer,
    monkeypatch: pytest.MonkeyPatch,
    api: str,
) -> None:
    monkeypatch.setenv("LOCAL_KEY", "local-key-123")
    declaration = local_provider(f"{sse_server.url}/v1", api, api_key_env="LOCAL_KEY")
    write_settings(home / "settings.json", {"providers": [declaration]})
    sse_server.sse(api, "text")
    app = await open_app(model="local/qwen3-8b")

    printed = await run(app, "hi")

    assert (printed.status, printed.out, printed.err) == (0, "Hello, world!\n", "")
    [request] = sse_server.requests
    assert (request.method, request.path) == ("POST", ENDPOINTS[api])
    assert request.json()["model"] == "qwen3-8b"
    # The declared output limit is sent, so a looping model stops there.
    assert request.json()[LIMIT_FIELDS[api]] == 4096
    sent = request.headers.get("authorization", "") + request.headers.get("x-api-key", "")
    assert "local-key-123" in sent
    usage = await app.harness.usage()
    assert usage["input"] > 0
    assert usage["cost"]["total"] == 0  # declared without a cost: zero, never a borrowed price


# openai/<unknown id> too: the catalog's openai provider speaks Responses, which
# only OpenAI itself serves; every compatible server speaks Chat Completions.
@pytest.mark.parametrize("option", ["ollama/llama3.2", "openai/llama3.2"])
async def test_base_url_serves_an_unknown_model_id_through_chat_completions_at_zero_cost(
    open_app: OpenApp, sse_server: SseServer, option: str
) -> None:
    sse_server.sse("openai-completions", "text")
    app = await open_app(model=option, base_url=f"{sse_server.url}/v1")

    printed = await run(app, "hi")

    assert (printed.status, printed.out) == (0, "Hello, world!\n")
    [request] = sse_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.json()["model"] == "llama3.2"
    assert (await app.harness.usage())["cost"]["total"] == 0


@pytest.mark.parametrize("option", ["ollama/llama3.2", "openai/gpt-5"])
async def test_a_session_continued_with_the_same_base_url_is_answered_by_that_server(
    open_app: OpenApp, sse_server: SseServer, option: str
) -> None:
    url = f"{sse_server.url}/v1"
    api = "openai-completions" if option.startswith("ollama") else "openai-responses"
    sse_server.sse(api, "text")
    sse_server.sse(api, "text")
    first = await open_app(model=option, base_url=url)
    assert (await run(first, "hi")).status == 0
    await first.close()

    again = await open_app(base_url=url, continue_session=True)  # no --model: the session's own
    printed = await run(again, "and again")

    assert (printed.status, printed.out, printed.err) == (0, "Hello, world!\n", "")
    assert [request.json()["model"] for request in sse_server.requests] == [
        option.partition("/")[2]
    ] * 2
    assert (await again.harness.usage())["cost"]["total"] == 0


async def test_another_model_of_the_base_url_server_can_be_picked_by_name(
    open_app: OpenApp, sse_server: SseServer
) -> None:
    app = await open_app(model="ollama/llama3.2", base_url=f"{sse_server.url}/v1")

    picked = app.models.resolve("ollama/qwen3:8b")  # what /model ollama/qwen3:8b looks up

    assert (picked.api, picked.base_url) == ("openai-completions", f"{sse_server.url}/v1")


async def test_a_catalog_model_on_a_local_base_url_is_not_charged_catalog_prices(
    open_app: OpenApp, sse_server: SseServer
) -> None:
    sse_server.sse("anthropic-messages", "text")
    app = await open_app(model="anthropic/claude-sonnet-4-5", base_url=sse_server.url)

    printed = await run(app, "hi")

    assert (printed.status, printed.out) == (0, "Hello, world!\n")
    [request] = sse_server.requests
    assert request.path == "/v1/messages"
    assert request.json()["max_tokens"] > 0
    usage = await app.harness.usage()
    assert usage["input"] > 0
    assert usage["cost"]["total"] == 0


async def test_an_empty_completion_leaves_the_prompt_unanswered_with_one_line(
    open_app: OpenApp, home: Path, sse_server: SseServer
) -> None:
    write_settings(
        home / "settings.json",
        {"providers": [local_provider(f"{sse_server.url}/v1")]},
    )
    sse_server.sse("openai-completions", "empty")
    app = await open_app(model="local/qwen3-8b")

    printed = await run(app, "hi")

    assert (printed.status, printed.out) == (1, "")
    assert printed.err == (
        "pidurable: the model request failed: The model returned an empty answer\n"
    )
    assert len(sse_server.requests) == 1  # the same request would answer the same: no retry


@pytest.mark.parametrize("recorded", ["format_error", "http_400"])
async def test_a_failure_that_cannot_change_on_retry_is_sent_once(
    open_app: OpenApp, home: Path, sse_server: SseServer, recorded: str
) -> None:
    write_settings(
        home / "settings.json",
        {"providers": [local_provider(f"{sse_server.url}/v1")]},
    )
    if recorded == "http_400":
        sse_server.error(400, '{"error": {"message": "tools: invalid schema", "code": 400}}')
    else:
        sse_server.sse("openai-completions", recorded)
    app = await open_app(model="local/qwen3-8b")

    printed = await run(app, "hi")

    assert printed.status == 1
    assert printed.err.startswith("pidurable: the model request failed: ")
    assert "retrying" not in printed.err
    assert len(sse_server.requests) == 1


async def test_a_server_that_is_not_there_fails_the_run_with_one_line_naming_the_url(
    open_app: OpenApp, home: Path
) -> None:
    write_settings(
        home / "settings.json",
        {"retry": {"enabled": False}, "providers": [local_provider("http://127.0.0.1:9/v1")]},
    )
    app = await open_app(model="local/qwen3-8b")

    printed = await run(app, "hi")

    assert printed.status == 1
    assert printed.err.startswith("pidurable: the model request failed: ")
    assert "http://127.0.0.1:9/v1/chat/completions" in printed.err
    assert printed.err.count("\n") == 1


async def test_a_model_of_providers_a_project_declares_unconfirmed_says_why_it_is_unknown(
    open_app: OpenApp, home: Path, project: Path
) -> None:
    settings = project / ".pidurable" / "settings.json"
    write_settings(settings, {"providers": [local_provider("http://127.0.0.1:9/v1")]})

    with pytest.raises(ModelChoiceError) as refused:
        await open_app(model="local/qwen3-8b")

    assert str(refused.value) == (
        "Unknown model local/qwen3-8b: no provider 'local' (known: anthropic, openai) "
        f"({settings} declares providers, which apply only once you trust that file: run "
        f"pidurable in {project.resolve()} without --model and answer y, or declare them in "
        f"{home / 'settings.json'})"
    )


def test_the_model_listing_shows_custom_and_faux_models_and_the_key_each_lacks(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOCAL_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    declaration = local_provider("http://127.0.0.1:8080/v1", api_key_env="LOCAL_KEY")
    write_settings(home / "settings.json", {"providers": [declaration]})
    script = write_script(project, {"content": [{"type": "text", "text": "x"}]}, models=["tiny"])

    lines = list_models_text(project, str(script)).splitlines()

    local = next(line for line in lines if line.startswith("local/qwen3-8b "))
    assert local.split() == ["local/qwen3-8b", "32k", "(set", "LOCAL_KEY)"]
    assert any(line.split()[0] == "faux/tiny" for line in lines)
    assert any("(set ANTHROPIC_API_KEY)" in line for line in lines if line.startswith("anthropic/"))


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("local/nope", "Unknown model local/nope. Models of local: qwen3-8b"),
        ("nowhere/x", "Unknown model nowhere/x: no provider 'nowhere'"),
        ("qwen3-8b", "Model reference must look like provider/model-id, got 'qwen3-8b'"),
    ],
)
def test_a_model_that_cannot_be_chosen_is_refused_saying_what_exists(
    option: str, message: str
) -> None:
    settings = AppSettings.model_validate({"providers": [local_provider("http://h:1/v1")]})
    models = build_models(settings)

    with pytest.raises(ModelChoiceError) as caught:
        choose_model(models, option, settings)

    assert message in str(caught.value)


def test_a_bad_base_url_is_refused_with_an_example_of_a_good_one() -> None:
    settings = AppSettings()

    with pytest.raises(ModelChoiceError, match="write it like http://localhost:8080/v1"):
        choose_model(build_models(settings), "ollama/x", settings, base_url="localhost:8080")


def test_a_custom_provider_may_not_take_a_built_in_providers_name() -> None:
    settings = AppSettings.model_validate(
        {"providers": [{**local_provider("http://h:1/v1"), "name": "openai"}]}
    )

    with pytest.raises(ModelChoiceError, match="'openai': the name belongs to a built-in provider"):
        build_models(settings)


def test_the_model_option_wins_over_settings_and_keeps_a_supported_thinking_suffix(
    project: Path,
) -> None:
    deep = {"id": "deep", "reasoning": True, "thinking_levels": ["off", "high"]}
    script = write_script(
        project, {"content": [{"type": "text", "text": "x"}]}, models=["faux-1", deep]
    )
    settings = AppSettings(model="faux/faux-1")
    models = build_models(settings, faux_script=str(script))

    default = choose_model(models, None, settings)
    chosen = choose_model(models, "faux/deep:high", settings)

    assert default is not None
    assert (default.model.id, default.thinking_level) == ("faux-1", None)
    assert chosen is not None
    assert (chosen.model.id, chosen.thinking_level) == ("deep", "high")


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["ANTHROPIC_API_KEY"], "anthropic/claude-sonnet-4-6"),
        (["OPENAI_API_KEY"], "openai/gpt-5.2"),
        (["OPENAI_API_KEY", "ANTHROPIC_API_KEY"], "anthropic/claude-sonnet-4-6"),
    ],
)
def test_with_no_model_named_a_session_starts_on_the_default_of_the_provider_whose_key_is_set(
    monkeypatch: pytest.MonkeyPatch, keys: list[str], expected: str
) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name in keys:
        monkeypatch.setenv(name, "sk-test-not-a-real-key")
    settings = AppSettings(thinking_level="high")

    chosen = choose_model(build_models(settings), None, settings)

    assert chosen is not None
    assert (f"{chosen.model.provider}/{chosen.model.id}", chosen.thinking_level) == (
        expected,
        "high",
    )


def test_a_model_named_in_settings_or_a_base_url_wins_over_the_default_of_a_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    named = AppSettings(model="openai/gpt-5-mini")
    plain = AppSettings()

    from_settings = choose_model(build_models(named), None, named)
    on_a_server = choose_model(build_models(plain), None, plain, base_url="http://127.0.0.1:9/v1")

    assert from_settings is not None
    assert from_settings.model.id == "gpt-5-mini"
    assert on_a_server is None
