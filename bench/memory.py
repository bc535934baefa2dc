"""Peak RSS of a 10,000-item objective-metric run ("Done when": target < 1 GiB).

Generates ``--items`` (10,000) Items and Responses, then scores them with an
objective :class:`~sgieval.metric_pool.base.FunctionMetric` (exact match)
through the evaluation agent's :func:`sgieval.agents.evaluation.run_evaluation`
(records appended to a temporary run folder).  The target is a scripted model
answering instantly through :func:`sgieval.models.calls.ainvoke`.

Prints the peak resident set size (``resource.getrusage(RUSAGE_SELF).ru_maxrss``,
KiB on Linux) in MiB, the baseline after imports, and the records written.

Usage: ``python -m sgieval.bench.memory [--items 10000]``
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time

from langchain_core.messages import AIMessage


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _Echo:
    """Answers ``"answer-<n>"`` for prompt ``"question <n>"`` (odd n answered wrong)."""

    async def ainvoke(self, messages):
        text = messages[-1].content if isinstance(messages, list) else str(messages)
        n = int(text.rsplit(" ", 1)[1])
        return AIMessage(
            f"answer-{n if n % 2 == 0 else n + 1}",
            usage_metadata={"input_tokens": 2, "output_tokens": 1, "total_tokens": 3},
        )


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(prog="python -m sgieval.bench.memory")
    ap.add_argument("--items", type=int, default=10_000)
    a = ap.parse_args(argv)

    from sgieval.agents.evaluation import run_evaluation
    from sgieval.core import GENERIC, Item, MetricSpec, RunStore
    from sgieval.metric_pool.base import FunctionMetric, MetricResult, ScoringContext
    from sgieval.models.accounting import Ledger
    from sgieval.models.base import NamedModel
    from sgieval.models.calls import set_max_concurrency

    base = _rss_mib()
    spec = MetricSpec(name="exact_match", tasks=[GENERIC], range=(0.0, 1.0), source="bench")
    metric = FunctionMetric(
        spec, lambda item, resp: MetricResult(float(resp.text.strip() == item.reference["answer"]), "exact")
    )
    items = [
        Item(
            id=f"bench/{n}",
            benchmark="bench",
            task=GENERIC,
            prompt=f"question {n}",
            reference={"answer": f"answer-{n}"},
        )
        for n in range(a.items)
    ]
    target = NamedModel(name="scripted", role="target", chat=_Echo(), provider="bench")
    set_max_concurrency("bench", 64)
    ledger = Ledger()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, ledger.activate():
        store = RunStore(tmp)
        path = "agents.evaluation.run_evaluation"
        asyncio.run(run_evaluation(store, items, [target], [metric], ScoringContext(), max_parallel=64))
        n_resp, scores = len(store.read("responses")), store.read("scores")
    wall = time.perf_counter() - t0
    peak = _rss_mib()
    ok = sum(1 for s in scores if s.ok)
    mean = sum(s.value for s in scores if s.ok) / max(ok, 1)
    print(
        f"items={a.items} path={path} responses={n_resp} scores={len(scores)} mean exact_match={mean:.3f} "
        f"(expected 0.500) wall={wall:.1f} s"
    )
    print(f"RSS after imports {base:.0f} MiB; peak RSS {peak:.0f} MiB = {peak / 1024:.3f} GiB (target < 1 GiB)")
    return {"peak_mib": peak, "base_mib": base, "wall_s": wall}


if __name__ == "__main__":
    main()
