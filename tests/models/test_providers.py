"""Model references and the provider registry: a model string parsed once into a ModelRef (provider, name, base
URL, key variable); a base URL per model (``openai-api:<service>/<model>`` with ``<SERVICE>_BASE_URL``); a new
provider prefix with its own base URL is one registration line; a run with a vLLM-style target and an
OpenAI-style judge on two different servers works against two mock servers."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

import sgieval
from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import InputError, ModelRef
from sgieval.core import modelref
from sgieval.models import providers
from sgieval.models.base import NamedModel
from sgieval.models.calls import ainvoke
from sgieval.models.providers import openai_compatible, register_provider
from sgieval.models.registry import resolve_model
from sgieval.tests.conftest import FIXTURES

pytestmark = pytest.mark.usefixtures("fresh_call_cache")


@pytest.fixture
def registry_restored(monkeypatch):
    """The provider registry and the known prefixes as they were before the test."""
    monkeypatch.setattr(providers, "PROVIDERS", dict(providers.PROVIDERS))
    monkeypatch.setattr(modelref, "_prefixes", set(modelref._prefixes))


@pytest.mark.parametrize(
    "spec, provider, name, service, url_var, key_var",
    [
        ("openai:gpt-4.1", "openai", "gpt-4.1", "", "OPENAI_BASE_URL", "OPENAI_API_KEY"),
        ("openai-api:vllm/Qwen2.5-7B", "openai-api", "Qwen2.5-7B", "vllm", "VLLM_BASE_URL", "VLLM_API_KEY"),
        ("openai-api:my-lab/org/m:1", "openai-api", "org/m:1", "my-lab", "MY_LAB_BASE_URL", "MY_LAB_API_KEY"),
        ("anthropic:claude-opus-4", "anthropic", "claude-opus-4", "", None, "ANTHROPIC_API_KEY"),
        ("google_genai:gemini-2.5-pro", "google_genai", "gemini-2.5-pro", "", None, "GOOGLE_API_KEY"),
        ("replay:llama3.3:latest", "replay", "llama3.3:latest", "", None, None),
        ("phi4:latest", "", "phi4:latest", "", None, None),  # a stored model name, no provider
        ("qwen2.5:7b", "", "qwen2.5:7b", "", None, None),  # an Ollama size tag: a stored model name too
        ("scripted:judge-1", "scripted", "judge-1", "", None, "SCRIPTED_API_KEY"),  # a provider sgieval does not know
    ],
)
def test_a_model_string_is_parsed_once_into_a_model_ref(spec, provider, name, service, url_var, key_var):
    ref = ModelRef.parse(spec)
    assert (ref.provider, ref.name, ref.service, ref.base_url_var, ref.key_var, ref.base_url) == (
        provider,
        name,
        service,
        url_var,
        key_var,
        None,
    )


@pytest.mark.parametrize("spec", ["openai-api:vllm", "openai-api:/m", "openai-api:vllm/"])
def test_an_openai_api_string_without_service_and_model_is_a_clear_error(spec):
    with pytest.raises(InputError) as ei:
        resolve_model(spec, "target")
    assert "openai-api:<service>/<model>" in ei.value.one_line()


def test_a_per_model_server_needs_its_base_url_variable(monkeypatch):
    monkeypatch.delenv("VLLM_BASE_URL", raising=False)
    with pytest.raises(InputError) as ei:
        resolve_model("openai-api:vllm/qwen", "target")
    assert "VLLM_BASE_URL is not set" in ei.value.one_line() and "export VLLM_BASE_URL=" in ei.value.one_line()


def test_base_urls_and_keys_come_through_the_settings_object(monkeypatch):
    """A run reads its endpoints once (its settings object): a variable changed afterwards does not move it."""
    from sgieval.core.settings import load_settings

    monkeypatch.setenv("VLLM_BASE_URL", "http://user:sk-in-url-123456@127.0.0.1:9/v1")
    settings = load_settings()
    monkeypatch.setenv("VLLM_BASE_URL", "http://127.0.0.1:1/v1")
    m = resolve_model("openai-api:vllm/qwen", "target", settings=settings)
    assert m.ref.base_url == "http://127.0.0.1:9/v1" and m.provider == "http://127.0.0.1:9/v1"
    assert m.chat.openai_api_key.get_secret_value() == "sk-in-url-123456"  # the key in the URL, never kept in it
    assert "sk-in-url" not in json.dumps(settings.shown())


async def test_a_provider_prefix_with_its_own_base_url_is_one_registration_line(monkeypatch, registry_restored):
    with MockOpenAI(replies=["acme says hi"]) as mock:
        monkeypatch.setenv("ACME_BASE_URL", mock.url)
        monkeypatch.setenv("ACME_API_KEY", "k-acme")
        register_provider("acme", openai_compatible(base_url_var="ACME_BASE_URL", key_var="ACME_API_KEY"))
        m = resolve_model("acme:m1", "judge")
        out = await ainvoke(m, [HumanMessage("hello")])
        (entry,) = mock.log()
    assert out.content == "acme says hi"
    assert (m.name, m.ref.provider, m.ref.name, m.provider) == ("acme:m1", "acme", "m1", mock.url)
    assert entry["authorization"] == "Bearer k-acme"
    # an unregistered prefix is still an error naming the fix
    with pytest.raises(InputError, match="unknown provider 'acmee'"):
        resolve_model("acmee:m1", "judge")


async def test_a_refused_key_names_the_variable_of_the_models_own_server(monkeypatch):
    """A 401 from an ``openai-api:`` server names that server (without credentials) and its key variable."""
    from sgieval.core import CredentialsError

    with MockOpenAI(faults=lambda index, body: "401") as mock:
        monkeypatch.setenv("VLLM_BASE_URL", mock.url)
        m = resolve_model("openai-api:vllm/qwen", "target")
        with pytest.raises(CredentialsError) as ei:
            await ainvoke(m, [HumanMessage("hi")])
    line = ei.value.one_line()
    assert f"the OpenAI-compatible server at {mock.url} refused the credentials (HTTP 401)" in line
    assert "set VLLM_API_KEY to a valid key" in line


def test_a_typo_of_a_prefix_is_named():
    with pytest.raises(InputError) as ei:
        resolve_model("opnai:gpt-4.1", "target")
    assert "did you mean openai:gpt-4.1?" in ei.value.one_line()


TEXT = "A careful answer with its assumptions stated."
CRITERIA = re.compile(r"^- (.+?) \(weight [^)]*\):", re.M)


def _judge_reply(body: dict, index: int) -> str:
    names = CRITERIA.findall("\n".join(str(m.get("content")) for m in body["messages"]))
    return json.dumps({"scores": [{"criterion": c, "score": 7, "rationale": "r", "evidence": []} for c in names]})


def test_a_vllm_target_and_an_openai_judge_on_two_servers(tmp_path, monkeypatch):
    """The target ``openai-api:vllm/qwen-mock`` on one server (``VLLM_BASE_URL``) and the judge
    ``openai:gpt-judge`` on another (``base_url``, as ``--base-url``): each server sees only its model's calls,
    with its own key, and the run scores every response."""
    with MockOpenAI(replies=[TEXT], log_bodies=True) as vllm, MockOpenAI(replies=_judge_reply) as judge_server:
        monkeypatch.setenv("VLLM_BASE_URL", vllm.url)
        monkeypatch.setenv("VLLM_API_KEY", "k-vllm")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        run = sgieval.evaluate(
            "Which model is most rigorous?",
            models="openai-api:vllm/qwen-mock",
            judge="openai:gpt-judge",
            base_url=judge_server.url,
            benchmark=str(FIXTURES / "jsonl" / "sample_qa.jsonl"),
            out_dir=tmp_path,
            run_id="two-servers",
            bootstrap_resamples=99,
        )
        target_log, judge_log = vllm.log(), judge_server.log()
    n = len(run.items)
    assert n == 3 and len(target_log) == n and len(judge_log) == n
    assert {json.loads(e["body"])["model"] for e in target_log} == {"qwen-mock"}
    assert {e["authorization"] for e in target_log} == {"Bearer k-vllm"}
    assert {e["authorization"] for e in judge_log} == {"Bearer not-needed"}
    assert [(r.model, r.text, r.status) for r in run.responses] == [("openai-api:vllm/qwen-mock", TEXT, "ok")] * n
    # the report names the server each model was called on
    assert (
        f"openai-api:vllm/qwen-mock: {vllm.url} (VLLM_BASE_URL); openai:gpt-judge: {judge_server.url}"
        in run.report.read_text()
    )
    rigor = [s for s in run.scores if s.metric == "rigor"]
    # every criterion 7 -> weighted mean 7 x 10 = 70 (0-100), judged by the OpenAI-style judge
    assert [(s.value, s.judge, s.status) for s in rigor] == [(70.0, "openai:gpt-judge", "ok")] * n


class _Slow(BaseChatModel):
    """Answers after 20 ms, counting the calls in flight at once."""

    peak: list[int]

    @property
    def _llm_type(self) -> str:
        return "slow-fake"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        raise NotImplementedError

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.peak[0] += 1
        self.peak[1] = max(self.peak[1], self.peak[0])
        await asyncio.sleep(0.02)
        self.peak[0] -= 1
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=str(messages[-1].content)))])


async def _peak_in_flight(max_in_flight: int | None, provider: str) -> int:
    chat = _Slow(peak=[0, 0])
    m = NamedModel(name=provider, role="judge", chat=chat, provider=provider, max_in_flight=max_in_flight)
    await asyncio.gather(*(ainvoke(m, [HumanMessage(f"q{k}")]) for k in range(6)))
    return chat.peak[1]


async def test_a_model_with_its_own_limit_has_that_many_calls_in_flight():
    """``local:`` models set ``max_in_flight=1`` (one call per loaded model, whatever --max-concurrency says);
    other models take the run's per-provider limit (16 by default); a limit set for that provider key wins."""
    from sgieval.models.calls import set_max_concurrency

    assert await _peak_in_flight(1, "local:fake") == 1
    assert await _peak_in_flight(None, "http://server-a/v1") == 6
    set_max_concurrency("local:fake-2", 3)
    assert await _peak_in_flight(1, "local:fake-2") == 3


def test_score_takes_the_judges_model_options(monkeypatch):
    """``sgieval.score`` resolves its judges like ``evaluate``: an ``openai-api:`` judge on its own server, an
    ``openai:`` judge on ``base_url``, the judge temperature sent as given."""
    text = "We propose a controlled study ..."
    with MockOpenAI(replies=_judge_reply, log_bodies=True) as own, MockOpenAI(replies=_judge_reply) as shared:
        monkeypatch.setenv("JUDGESRV_BASE_URL", own.url)
        (a,) = sgieval.score([text], "rigor", judge="openai-api:judgesrv/j1", judge_temperature=0.3)
        (b,) = sgieval.score([text], "rigor", judge="openai:j2", base_url=shared.url)
        (entry,) = own.log()
        assert len(shared.log()) == 1
    assert (a.value, a.judge, b.value, b.judge) == (70.0, "openai-api:judgesrv/j1", 70.0, "openai:j2")
    body = json.loads(entry["body"])
    assert (body["model"], body["temperature"]) == ("j1", 0.3)
