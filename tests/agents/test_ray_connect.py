"""Connecting to a Ray cluster is retried, and a cluster that stays unreachable is one clear error
(agents/executors.ensure_ray, CONNECT_RETRY).  Ray itself is replaced by a stub module whose ``init`` fails
as Ray Client does when the head cannot start the client's server-side driver in time."""

from __future__ import annotations

import sys
import types

import pytest

from sgieval.agents import executors
from sgieval.core import OfflineError
from sgieval.core.retry import RetryPolicy

SERVER_FAILURE = (
    "Initialization failure from server:\nTraceback (most recent call last):\n  File proxier.py, line 770\n"
    "RuntimeError: Proxy failed to Connect to backend! Check `ray_client_server.err`\n"
)


def _stub_ray(monkeypatch, failures: int) -> list[dict]:
    calls: list[dict] = []
    state = {"up": False}

    def init(**kw):
        calls.append(kw)
        if len(calls) <= failures:
            raise ConnectionAbortedError(SERVER_FAILURE)
        state["up"] = True

    mod = types.ModuleType("ray")
    mod.init = init  # type: ignore[attr-defined]
    mod.is_initialized = lambda: state["up"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray", mod)
    monkeypatch.setattr(executors, "CONNECT_RETRY", RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.001))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return calls


@pytest.mark.parametrize("failures", [1, 2])
def test_cluster_connection_retried_until_it_succeeds(monkeypatch, failures):
    calls = _stub_ray(monkeypatch, failures)
    ray = executors.ensure_ray("ray://127.0.0.1:10001")
    assert ray is sys.modules["ray"] and ray.is_initialized()
    assert len(calls) == failures + 1
    assert calls[-1] == {"address": "ray://127.0.0.1:10001", "ignore_reinit_error": True, "log_to_driver": False}


def test_unreachable_cluster_is_one_error_with_the_server_reason(monkeypatch):
    calls = _stub_ray(monkeypatch, failures=99)
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    with pytest.raises(OfflineError) as ei:
        executors.ensure_ray()
    assert len(calls) == 3
    assert ei.value.message == (
        "could not connect to the Ray cluster at ray://head:10001 after 3 attempt(s): "
        "RuntimeError: Proxy failed to Connect to backend! Check `ray_client_server.err`"
    )
    assert ei.value.what == "--executor ray (RAY_ADDRESS)"
    assert isinstance(ei.value.__cause__, ConnectionAbortedError)


def test_local_instance_is_not_retried(monkeypatch):
    calls = _stub_ray(monkeypatch, failures=1)
    with pytest.raises(ConnectionAbortedError):
        executors.ensure_ray(num_cpus=2)
    assert calls == [{"num_cpus": 2, "include_dashboard": False, "ignore_reinit_error": True, "log_to_driver": False}]


async def test_ray_missing_is_the_needs_ray_error_before_any_model_is_packed(monkeypatch, tmp_path):
    # a live target (its chat model is packed with ray's cloudpickle): without Ray the user gets the InputError
    # that names the fix, not the ImportError of packing it
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from sgieval.core import GENERIC, InputError, Item, RunStore
    from sgieval.metric_pool import ScoringContext
    from sgieval.models import NamedModel

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    target = NamedModel(name="t", role="target", chat=GenericFakeChatModel(messages=iter([AIMessage(content="a")])))
    items = [Item(id="t/1", benchmark="t", task=GENERIC, prompt="q")]
    with pytest.raises(InputError) as ei:
        await executors.evaluate_with_executor(
            RunStore(tmp_path), items, [target], [], ScoringContext(), executor="ray"
        )
    assert str(ei.value) == (
        "--executor ray: the ray executor needs Ray. Fix: pip install 'sgieval[ray]' (or use --executor local)"
    )
