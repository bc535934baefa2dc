"""The Ray executor gives the same records as the local one.

Ray runs locally with 2 CPUs; the target is ChatOpenAIDirect (the client of
``openai:`` model strings) against the in-process mock OpenAI server (so the
chat model is rebuilt inside the Ray tasks), the metric an objective exact match.
"""

from __future__ import annotations

import asyncio

import pytest

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import GENERIC, InputError, Item, MetricSpec, RunStore
from sgieval.agents.executors import evaluate_with_executor, pack_models, shard, unpack_models
from sgieval.metric_pool.base import FunctionMetric, MetricResult, ScoringContext
from sgieval.models.accounting import Ledger
from sgieval.models.base import NamedModel

ray = pytest.importorskip("ray")

N = 24


def test_shard_sizes_and_order():
    # 10 units over 3 shards: divmod(10, 3) = (3, 1) -> sizes 4, 3, 3
    assert shard(list(range(10)), 3) == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert shard([1, 2], 5) == [[1], [2]]
    assert shard([], 3) == []


async def test_unknown_executor(tmp_path):
    with pytest.raises(InputError) as ei:
        await evaluate_with_executor(RunStore(tmp_path), _items(), [], [], ScoringContext(), executor="dask")
    assert str(ei.value) == "--executor: unknown executor 'dask'. Fix: use one of local, ray"


def _items() -> list[Item]:
    return [
        Item(id=f"t/{n}", benchmark="t", task=GENERIC, prompt=f"q{n}", reference={"answer": f"echo: q{n}"})
        for n in range(N)
    ]


def _reply(body, i):
    text = body["messages"][-1]["content"]
    n = int(text[1:])
    # every third item answered wrong; usage fixed for ledger totals
    return {"content": f"echo: {text}" if n % 3 else "wrong", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}


def _metric() -> FunctionMetric:
    spec = MetricSpec(name="exact_match", tasks=[GENERIC], source="test")
    return FunctionMetric(spec, lambda item, resp: MetricResult(float(resp.text == item.reference["answer"]), "exact"))


def _records(store: RunStore):
    resp = sorted((r.item_id, r.model, r.text, r.status, str(r.tokens)) for r in store.read("responses"))
    scores = sorted(s.model_dump_json() for s in store.read("scores"))
    return resp, scores


@pytest.fixture(scope="module")
def ray_local():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


@pytest.mark.parametrize("cls_name", ["ChatOpenAI", "ChatOpenAIDirect"])
def test_pack_rebuilds_chatopenai(cls_name):
    from langchain_openai import ChatOpenAI

    from sgieval.models.openai_direct import ChatOpenAIDirect

    cls = {"ChatOpenAI": ChatOpenAI, "ChatOpenAIDirect": ChatOpenAIDirect}[cls_name]
    chat = cls(model="m", api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=7)
    (m,) = unpack_models(pack_models([NamedModel(name="openai:m", role="target", chat=chat, provider="p")]))
    assert type(m.chat) is cls
    assert (
        m.name,
        m.provider,
        m.chat.model_name,
        m.chat.openai_api_base,
        m.chat.max_retries,
        m.chat.request_timeout,
    ) == ("openai:m", "p", "m", "http://127.0.0.1:9/v1", 0, 7.0)
    if cls is ChatOpenAI:
        assert m.chat is not chat  # its SDK clients do not pickle: rebuilt from its fields
        return
    # ChatOpenAIDirect holds no client (its session belongs to the event loop): it ships as it is (cloudpickle)
    from ray import cloudpickle

    assert m.chat is chat
    shipped = cloudpickle.loads(cloudpickle.dumps(chat))
    assert (shipped.model_name, shipped.openai_api_base, shipped.request_timeout) == ("m", "http://127.0.0.1:9/v1", 7.0)


@pytest.mark.ray
def test_ray_executor_same_records_as_local(tmp_path, ray_local):
    # ChatOpenAIDirect (the client of openai: strings) pools one connection session per event loop;
    # langchain's ChatOpenAI keeps one httpx client per process, whose pooled connections may belong to
    # an earlier test's closed loop
    from sgieval.models.openai_direct import ChatOpenAIDirect

    items, metric = _items(), _metric()
    with MockOpenAI(replies=_reply) as mock:

        def target():
            # no temperature -> no call cache: both executors really call the server
            return NamedModel(
                name="openai:mock",
                role="target",
                provider="mock",
                chat=ChatOpenAIDirect(model="mock", base_url=mock.url, api_key="test", max_retries=0),
            )

        local = RunStore(tmp_path / "local")
        asyncio.run(evaluate_with_executor(local, items, [target()], [metric], ScoringContext(), executor="local"))
        assert mock.stats()["served"] == N
        mock.reset()

        dist = RunStore(tmp_path / "ray")
        ledger = Ledger(prices={"openai:mock": (1000.0, 0.0)})  # a --price: the shards price with it too

        async def go():
            with ledger.activate():
                return await evaluate_with_executor(
                    dist, items, [target()], [metric], ScoringContext(), executor="ray", num_shards=3
                )

        prog = asyncio.run(go())
        assert mock.stats()["served"] == N  # each item called once, from the Ray tasks
        # everything was done by the shards (counted as new, as the local executor would); the local
        # pass only checked
        assert (prog.responses_new, prog.responses_skipped, prog.scores_new) == (N, 0, N)

        # a completed run rerun with the ray executor makes no call
        asyncio.run(evaluate_with_executor(dist, items, [target()], [metric], ScoringContext(), executor="ray"))
        assert mock.stats()["served"] == N

    (dr, ds), (lr, ls) = _records(dist), _records(local)
    assert set(dr) ^ set(lr) == set() and len(dr) == len(lr)
    assert set(ds) ^ set(ls) == set() and len(ds) == len(ls)
    resp, scores = _records(local)
    assert len(resp) == N and len(scores) == N
    # items 0, 3, ..., 21 answered "wrong": 8 of 24 -> 16 correct
    assert sum(s.value for s in local.read("scores")) == 16
    (t,) = ledger.totals().values()
    # ledger records merged from the tasks: 24 calls x 10 in / 2 out tokens
    assert (t.calls, t.input_tokens, t.output_tokens) == (N, 240, 48)
    assert t.cost == pytest.approx(0.24)  # 240 input tokens x 1000 USD / 1M


@pytest.mark.ray
def test_ray_resume_computes_only_missing(tmp_path, ray_local):
    from sgieval.models.openai_direct import ChatOpenAIDirect

    items, metric = _items(), _metric()
    with MockOpenAI(replies=_reply) as mock:
        model = NamedModel(
            name="openai:mock",
            role="target",
            provider="mock",
            chat=ChatOpenAIDirect(model="mock", base_url=mock.url, api_key="test", max_retries=0),
        )
        store = RunStore(tmp_path / "r")

        async def go():
            # first 10 items done (responses + scores), items 10-11 have a response but no score
            await evaluate_with_executor(store, items[:10], [model], [metric], ScoringContext())
            await evaluate_with_executor(store, items[10:12], [model], [], ScoringContext())
            served_before = mock.stats()["served"]
            await evaluate_with_executor(
                store, items, [model], [metric], ScoringContext(), executor="ray", num_shards=2
            )
            return served_before

        assert asyncio.run(go()) == 12
        # only the 12 items without a response were called, from the Ray tasks
        assert mock.stats()["served"] == N
    assert len(store.read("responses")) == N
    assert sorted(s.item_id for s in store.read("scores")) == sorted(i.id for i in items)
