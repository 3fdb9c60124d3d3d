"""``Models`` resolves models, prices usage, serves custom providers and dispatches streams."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from pi_durable_tui.ai import (
    AssistantStream,
    Context,
    ErrorEvent,
    FauxProvider,
    Model,
    ModelCost,
    ModelRef,
    Models,
    StreamOptions,
    Usage,
    calculate_cost,
    default_models,
    faux_model,
    faux_response,
)
from pi_durable_tui.ai.providers import ModelDeclaration, ProviderDeclaration
from tests.ai.contexts import user_context
from tests.ai.sse_server import SseServer
from tests.ai.streams import collect

SECRET = "sk-test-0123456789abcdef"


class RefusingProvider:
    """A provider whose ``stream`` breaks the contract by raising."""

    api = "anthropic-messages"

    def stream(
        self,
        model: Model,
        context: Context,
        options: StreamOptions,
        *,
        abort: asyncio.Event | None = None,
    ) -> AssistantStream:
        raise RuntimeError("boom")


class RecordingProvider(FauxProvider):
    """A faux provider registered under a real api, to observe dispatch."""

    def __init__(self, api: str) -> None:
        super().__init__([faux_response("dispatched")], api=api)
        self.seen: list[Model] = []

    def stream(
        self,
        model: Model,
        context: Context,
        options: StreamOptions,
        *,
        abort: asyncio.Event | None = None,
    ) -> AssistantStream:
        self.seen.append(model)
        return super().stream(model.model_copy(update={"api": self.api}), context, options)


def test_cost_is_price_per_million_times_tokens_and_total_is_the_sum() -> None:
    model = Models().resolve("anthropic/claude-sonnet-4-5")
    usage = Usage(input=1000, output=500, cache_read=2000, cache_write=100)

    cost = Models.cost(model, usage)

    assert cost.input == pytest.approx(0.003)
    assert cost.output == pytest.approx(0.0075)
    assert cost.cache_read == pytest.approx(0.0006)
    assert cost.cache_write == pytest.approx(0.000375)
    assert cost.total == pytest.approx(0.011475)
    assert calculate_cost(model, Usage()).total == 0


def test_get_returns_none_and_resolve_lists_what_the_provider_has() -> None:
    models = Models()

    assert models.get("anthropic/claude-nope") is None
    assert models.get("not a reference") is None
    with pytest.raises(LookupError) as caught:
        models.resolve("anthropic/claude-nope")
    message = str(caught.value)
    assert "anthropic/claude-nope" in message
    assert "claude-sonnet-4-5" in message
    assert "gpt-5" not in message
    with pytest.raises(LookupError, match=r"no provider 'mistral' \(known: anthropic, openai\)"):
        models.resolve("mistral/large")


def test_list_filters_by_provider_in_catalog_order() -> None:
    models = Models()

    openai_ids = [m.id for m in models.list("openai")]

    assert openai_ids[:3] == ["gpt-5.2", "gpt-5.1", "gpt-5"]
    assert {m.provider for m in models.list()} == {"anthropic", "openai"}


def test_user_models_add_local_servers_and_override_catalog_fields() -> None:
    models = Models(
        user_models=[
            {
                "provider": "ollama",
                "id": "qwen3",
                "api": "openai-completions",
                "base_url": "http://localhost:11434/v1",
                "context_window": 32768,
            },
            {"provider": "anthropic", "id": "claude-sonnet-4-6", "context_window": 1_000_000},
            {"provider": "openai", "id": "gpt-9", "max_tokens": 1000},
        ]
    )

    qwen = models.resolve("ollama/qwen3")
    assert (qwen.api, qwen.base_url, qwen.context_window, qwen.name) == (
        "openai-completions",
        "http://localhost:11434/v1",
        32768,
        "qwen3",
    )
    sonnet = models.resolve("anthropic/claude-sonnet-4-6")
    assert sonnet.context_window == 1_000_000
    assert sonnet.cost.input == 3  # the rest of the catalog row is kept
    gpt9 = models.resolve("openai/gpt-9")
    assert (gpt9.api, gpt9.base_url) == ("openai-responses", "https://api.openai.com/v1")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"provider": "x", "id": "y", "api": "faux", "contextWindow": 5},
            "unknown key(s) contextWindow",
        ),
        ({"provider": "ollama", "id": "q"}, "user model 0 (ollama/q): 'api' is required"),
        ({"id": "q", "api": "faux"}, "'provider' and 'id' must be non-empty strings"),
        (
            {"provider": "ollama", "id": "q", "api": "faux", "context_window": "big"},
            "user model 0 (ollama/q): context_window",
        ),
    ],
)
def test_a_malformed_user_model_is_rejected_naming_the_row(row: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Models(user_models=[row])


async def test_registered_faux_models_resolve_and_stream_through_models() -> None:
    faux = FauxProvider([faux_response("offline answer")], models=[faux_model("demo")])
    models = Models()
    models.register_faux(faux)

    final = await models.stream("faux/demo", user_context("hi")).result()

    assert models.resolve("faux/demo").api == "faux"
    assert final.text() == "offline answer"
    assert final.model == "demo"


async def test_stream_dispatches_on_the_models_api() -> None:
    anthropic = RecordingProvider("anthropic-messages")
    openai = RecordingProvider("openai-responses")
    models = Models([anthropic, openai])

    final = await models.stream("openai/gpt-5", user_context("hi")).result()

    assert final.text() == "dispatched"
    assert [m.id for m in openai.seen] == ["gpt-5"]
    assert anthropic.seen == []


async def test_an_unknown_model_yields_an_error_event_instead_of_raising() -> None:
    events = await collect(Models().stream("anthropic/claude-nope", user_context("hi")))

    assert len(events) == 1
    event = events[0]
    assert isinstance(event, ErrorEvent)
    assert "Unknown model anthropic/claude-nope" in (event.error.error_message or "")
    assert event.error.retryable is False


async def test_a_model_whose_api_has_no_provider_yields_an_error_event() -> None:
    models = Models(user_models=[{"provider": "p", "id": "m", "api": "martian-rpc"}])

    final = await models.stream("p/m", user_context("hi")).result()

    assert final.stop_reason == "error"
    assert "No provider for api 'martian-rpc'" in (final.error_message or "")


async def test_a_missing_key_names_the_variable_to_set_and_never_a_key() -> None:
    keys = {"openai": SECRET}
    models = Models(
        [RecordingProvider("anthropic-messages"), RecordingProvider("openai-responses")],
        keys=keys.get,
    )

    missing = await models.stream("anthropic/claude-sonnet-4-5", user_context("hi")).result()
    present = await models.stream("openai/gpt-5", user_context("hi")).result()

    assert missing.error_message == (
        "ANTHROPIC_API_KEY is not set: export it to use anthropic/claude-sonnet-4-5"
    )
    assert present.text() == "dispatched"
    assert SECRET not in repr(missing)
    assert SECRET not in repr(present)


async def test_a_catalog_provider_at_another_base_url_needs_no_key() -> None:
    models = Models(
        [RecordingProvider("openai-responses")],
        user_models=[{"provider": "openai", "id": "gpt-5", "base_url": "http://127.0.0.1:9/v1"}],
        keys=lambda provider: None,
    )

    final = await models.stream("openai/gpt-5", user_context("hi")).result()

    assert final.text() == "dispatched"


async def test_a_provider_that_raises_is_contained_in_an_error_event() -> None:
    models = Models([RefusingProvider()])

    final = await models.stream("anthropic/claude-haiku-4-5", user_context("hi")).result()

    assert final.stop_reason == "error"
    assert final.error_message == "RuntimeError: boom"


def test_default_models_builds_http_providers_from_the_environment() -> None:
    models = default_models(environ={"ANTHROPIC_API_KEY": SECRET})

    assert models.provider_for("anthropic-messages") is not None
    assert models.provider_for("openai-completions") is not None
    assert models.missing_key(models.resolve("anthropic/claude-haiku-4-5")) is None
    assert models.missing_key(models.resolve("openai/gpt-5")) == "OPENAI_API_KEY"


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"ANTHROPIC_API_KEY": SECRET}, "anthropic/claude-sonnet-4-6"),
        ({"OPENAI_API_KEY": SECRET}, "openai/gpt-5.2"),
        ({"ANTHROPIC_API_KEY": SECRET, "OPENAI_API_KEY": SECRET}, "anthropic/claude-sonnet-4-6"),
        ({"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": SECRET}, "openai/gpt-5.2"),
        ({}, None),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, None),
    ],
)
def test_the_default_model_is_the_catalog_default_of_the_first_provider_with_a_key_set(
    environ: dict[str, str], expected: str | None
) -> None:
    found = default_models(environ=environ).default_model()

    assert (f"{found.provider}/{found.id}" if found else None) == expected


def test_models_built_without_a_key_resolver_have_no_default_model() -> None:
    assert Models().default_model() is None


def test_openai_base_url_from_the_environment_moves_openai_models_and_drops_the_key_need() -> None:
    models = default_models(environ={"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"})

    gpt5 = models.resolve("openai/gpt-5")
    assert gpt5.base_url == "http://127.0.0.1:8080/v1"
    assert models.missing_key(gpt5) is None
    assert models.resolve("anthropic/claude-haiku-4-5").base_url == "https://api.anthropic.com"


LLAMA = ProviderDeclaration(
    name="llama",
    base_url="http://127.0.0.1:9/v1",
    api="openai-completions",
    models=[ModelDeclaration(id="qwen3", context_window=32768, max_tokens=8192)],
)


def test_a_declared_model_resolves_to_its_api_url_and_limits_at_zero_cost() -> None:
    models = Models(declarations=[LLAMA])

    qwen = models.resolve("llama/qwen3")

    assert (qwen.api, qwen.base_url) == ("openai-completions", "http://127.0.0.1:9/v1")
    assert (qwen.context_window, qwen.max_tokens) == (32768, 8192)
    assert qwen.cost == ModelCost()
    assert models.missing_key(qwen) is None  # no key variable: no key needed


async def test_a_declared_provider_speaks_its_api_with_the_key_read_at_each_request(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    declared = ProviderDeclaration(
        name="local",
        base_url=sse_server.url,
        api="anthropic-messages",
        api_key_env="LOCAL_KEY",
        models=[ModelDeclaration(id="claude-local", context_window=100_000, max_tokens=4096)],
    )
    environ = {"LOCAL_KEY": SECRET}
    models = default_models(declarations=[declared], environ=environ, client=http_client)
    sse_server.sse("anthropic-messages", "text")
    sse_server.sse("anthropic-messages", "text")

    first = await models.stream("local/claude-local", user_context("hi")).result()
    environ["LOCAL_KEY"] = "sk-rotated-key"
    second = await models.stream("local/claude-local", user_context("hi")).result()

    assert (first.text(), second.text()) == ("Hello, world!", "Hello, world!")
    assert [r.path for r in sse_server.requests] == ["/v1/messages", "/v1/messages"]
    assert [r.headers["x-api-key"] for r in sse_server.requests] == [SECRET, "sk-rotated-key"]
    assert first.usage.cost.total == 0
    stored = models.resolve("local/claude-local").model_dump_json() + first.model_dump_json()
    assert SECRET not in stored


async def test_a_declared_provider_without_a_key_variable_sends_no_auth_header(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    declared = LLAMA.model_copy(update={"base_url": sse_server.url + "/v1"})
    models = default_models(
        declarations=[declared], environ={"OPENAI_API_KEY": SECRET}, client=http_client
    )
    sse_server.sse("openai-completions", "text")

    final = await models.stream("llama/qwen3", user_context("hi")).result()

    assert final.text() == "Hello, world!"
    [request] = sse_server.requests
    assert request.path == "/v1/chat/completions"
    assert "authorization" not in request.headers


async def test_an_unset_declared_key_variable_fails_naming_it_before_any_request() -> None:
    declared = LLAMA.model_copy(update={"api_key_env": "LLAMA_KEY"})
    models = default_models(declarations=[declared], environ={})

    final = await models.stream("llama/qwen3", user_context("hi")).result()

    assert final.error_message == "LLAMA_KEY is not set: export it to use llama/qwen3"
    assert final.retryable is False


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["openai"], "custom provider 'openai': the name belongs to a built-in provider"),
        (["faux"], "custom provider 'faux': the name belongs to a built-in provider"),
        (["llama", "llama"], "custom provider 'llama' is declared twice"),
    ],
)
def test_a_declaration_may_not_reuse_a_provider_name(names: list[str], message: str) -> None:
    declarations = [LLAMA.model_copy(update={"name": name}) for name in names]

    with pytest.raises(ValueError, match=message):
        Models(declarations=declarations)


def test_base_url_serves_an_unknown_id_through_openai_completions_at_zero_cost() -> None:
    models = Models()

    local = models.use_base_url("ollama/qwen3", "http://localhost:11434/v1/")

    assert (local.provider, local.id, local.api) == ("ollama", "qwen3", "openai-completions")
    assert local.base_url == "http://localhost:11434/v1"
    assert local.cost == ModelCost()
    assert models.resolve("ollama/qwen3") == local  # the harness resolves it by reference later


def test_base_url_serves_an_unknown_id_of_a_known_provider_through_that_providers_api() -> None:
    models = Models()

    proxied = models.use_base_url("anthropic/claude-next", "http://127.0.0.1:8080")

    assert (proxied.api, proxied.cost) == ("anthropic-messages", ModelCost())
    assert models.missing_key(proxied) is None  # not Anthropic's own URL: no key required


def test_base_url_moves_a_known_model_to_a_remote_proxy_keeping_its_api_and_prices() -> None:
    models = Models()
    catalog_row = models.resolve("openai/gpt-5")

    proxied = models.use_base_url(ModelRef("openai", "gpt-5"), "https://proxy.example.com/v1")

    assert proxied.base_url == "https://proxy.example.com/v1"
    assert (proxied.api, proxied.cost) == (catalog_row.api, catalog_row.cost)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1",
        "http://localhost:11434/v1",
        "http://[::1]:8080",
        "http://192.168.1.20:8000/v1",
        "http://10.0.0.5/v1",
        "http://gpu-box:8080/v1",
        "http://llama.local:8080/v1",
    ],
)
def test_a_catalog_model_on_a_local_server_is_not_charged_catalog_prices(url: str) -> None:
    models = Models()
    catalog_row = models.resolve("anthropic/claude-sonnet-4-5")

    local = models.use_base_url("anthropic/claude-sonnet-4-5", url)

    assert catalog_row.cost.input > 0
    assert (local.api, local.max_tokens) == (catalog_row.api, catalog_row.max_tokens)
    assert local.cost == ModelCost()


def test_prices_a_settings_row_declares_are_kept_on_a_local_server() -> None:
    declared = {"input": 0.5, "output": 1.5}
    models = Models(user_models=[{"provider": "openai", "id": "gpt-5", "cost": declared}])

    local = models.use_base_url("openai/gpt-5", "http://127.0.0.1:8080/v1")

    assert (local.cost.input, local.cost.output) == (0.5, 1.5)


def test_an_unknown_openai_id_on_a_base_url_speaks_chat_completions_not_responses() -> None:
    models = Models()
    assert models.resolve("openai/gpt-5").api == "openai-responses"

    local = models.use_base_url("openai/qwen3-8b", "http://127.0.0.1:8080/v1")

    assert (local.api, local.cost) == ("openai-completions", ModelCost())


def test_base_url_must_be_an_http_url() -> None:
    with pytest.raises(ValueError, match="'localhost:8080' is not an http"):
        Models().use_base_url("ollama/qwen3", "localhost:8080")


def test_openai_base_url_serves_openai_ids_the_catalog_lacks_and_drops_prices_locally() -> None:
    models = default_models(environ={"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1/"})

    local = models.resolve("openai/qwen3:8b")
    assert (local.api, local.base_url, local.cost) == (
        "openai-completions",
        "http://127.0.0.1:8080/v1",
        ModelCost(),
    )
    assert models.missing_key(local) is None  # a local server needs no key
    assert models.resolve("openai/gpt-5").cost == ModelCost()  # not OpenAI's server
    with pytest.raises(LookupError, match="no provider 'ollama'"):
        models.resolve("ollama/qwen3")  # the variable is OpenAI's, not every provider's


def test_openai_base_url_on_a_remote_proxy_keeps_the_catalog_prices() -> None:
    models = default_models(environ={"OPENAI_BASE_URL": "https://proxy.example.com/v1"})

    assert models.resolve("openai/gpt-5").cost.input > 0


def test_an_openai_base_url_that_is_not_http_is_refused_with_an_example() -> None:
    with pytest.raises(ValueError, match=r"OPENAI_BASE_URL 'localhost:8080' is not an http\(s\)"):
        default_models(environ={"OPENAI_BASE_URL": "localhost:8080"})


def test_unknown_ids_served_from_a_base_url_resolve_when_looked_up_and_known_ones_stay() -> None:
    models = Models()
    models.serve_unknown_from("http://localhost:11434/v1")

    found = models.get("ollama/llama3.2")
    assert found is not None
    assert (found.api, found.base_url, found.cost) == (
        "openai-completions",
        "http://localhost:11434/v1",
        ModelCost(),
    )
    assert models.resolve("anthropic/claude-haiku-4-5").base_url == "https://api.anthropic.com"
    assert models.get("not a ref") is None


def test_a_declared_providers_unknown_id_is_refused_not_sent_to_the_base_url() -> None:
    models = Models(declarations=[LLAMA])
    models.serve_unknown_from("http://localhost:11434/v1")

    with pytest.raises(LookupError, match=r"Unknown model llama/qwen9\. Models of llama: qwen3"):
        models.resolve("llama/qwen9")


@pytest.mark.parametrize(
    ("model", "environ", "hint"),
    [
        # --base-url with a provider name nothing declares: no key is ever sent.
        (
            "ollama/qwen3",
            {},
            'no key was sent: declare this server as a provider in settings with "api_key_env", '
            "or use --model openai/<id> with OPENAI_API_KEY set",
        ),
        ("openai/qwen3", {}, "no key was sent: set OPENAI_API_KEY"),
        (
            "openai/qwen3",
            {"OPENAI_API_KEY": SECRET},
            "the server refused the key in OPENAI_API_KEY: check it",
        ),
        (
            "llama/qwen3",
            {},
            'no key was sent: name the variable holding it with "api_key_env" in the '
            "'llama' provider of your settings, and export it",
        ),
    ],
)
async def test_a_server_refusing_the_credentials_is_told_which_variable_to_set(
    sse_server: SseServer,
    http_client: httpx.AsyncClient,
    model: str,
    environ: dict[str, str],
    hint: str,
) -> None:
    url = f"{sse_server.url}/v1"
    declared = LLAMA.model_copy(update={"base_url": url})
    models = default_models(declarations=[declared], environ=environ, client=http_client)
    models.serve_unknown_from(url)
    sse_server.error(401, '{"error": {"message": "Invalid API key"}}')

    final = await models.stream(model, user_context("hi")).result()

    assert final.error_status == 401
    assert final.error_message == f"HTTP 401: Invalid API key ({hint})"
    assert SECRET not in final.model_dump_json()
