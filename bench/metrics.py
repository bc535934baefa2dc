"""Metric throughput: time per item of each objective metric, embedding sentences/s.

Run: ``.venv/bin/python -m sgieval.bench.metrics [--n 10000] [--n-embed 200] [--only NAME ...]``

Prints one line per measurement (never asserts; time per
item over 10,000 generated items, and MiniLM sentences per second batched vs
one at a time).  Metrics whose per-item cost is dominated by MiniLM inference
or by running programs are timed on a smaller sample (``--n-embed``,
``--n-exec``) and say so; the pure-Python parts run over ``--n`` items.

Adding a section: write ``def bench_<name>(args) -> None`` that prints its
lines with :func:`report`, and decorate it with ``@section("<name>")``.  Each
helper owns its own section; keep sections independent (no shared state).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from typing import Callable

import numpy as np

SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {}


def section(name: str):
    """Register a benchmark section under ``name`` (runs in registration order)."""

    def deco(fn):
        SECTIONS[name] = fn
        return fn

    return deco


def report(what: str, n: int, seconds: float, note: str = "") -> None:
    """Print ``what``: n items, total seconds, microseconds per item (and a note)."""
    per = seconds / max(n, 1)
    print(f"{what:<48} n={n:<6} total={seconds:8.3f}s  per item={per * 1e6:12.1f} us" + (f"  ({note})" if note else ""))


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


WORDS = (
    "graph neural network molecule protein energy catalyst quantum lattice climate ocean sensor signal "
    "model data training evaluation spectrum galaxy neuron synapse enzyme battery solar alloy"
).split()


def _sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


# ====================================================================== embeddings (metric_pool/embeddings.py)
@section("embeddings")
def bench_embeddings(args: argparse.Namespace) -> None:
    from sgieval.metric_pool.embeddings import get_embedder

    rng = random.Random(0)
    emb = get_embedder("minilm")
    t_load = timed(lambda: emb.encode(["warm up"]))
    print(f"MiniLM load + first encode: {t_load:.2f}s")
    sents = [_sentence(rng) for _ in range(args.n_sentences)]
    one = sents[: max(1, args.n_sentences // 4)]
    t_batch = timed(lambda: emb.encode(sents, batch_size=64))
    t_one = timed(lambda: [emb.encode([s]) for s in one])
    sps_batch, sps_one = len(sents) / t_batch, len(one) / t_one
    print(
        f"MiniLM sentences/s batched (64): {sps_batch:9.1f}   one at a time: {sps_one:9.1f}   "
        f"ratio batched/one = {sps_batch / sps_one:.1f}x"
    )


# ====================================================================== SGI idea generation (A.2)
def _idea_reply(rng: random.Random) -> str:
    n = rng.randint(3, 8)
    steps = {str(i): _sentence(rng, 6) for i in range(1, n + 1)}
    order = [f"{i}-{i + 1}" for i in range(1, n)]
    idea = {
        "Idea": " ".join(_sentence(rng) for _ in range(rng.randint(2, 6))),
        "ImplementationSteps": steps,
        "ImplementationOrder": order,
        "Dataset": _sentence(rng),
        "EvaluationMetrics": {"MAE": _sentence(rng)},
        "ExpectedOutcome": _sentence(rng),
    }
    return "```json\n" + json.dumps(idea) + "\n```\nThat is my idea."


def _idea_reference(rng: random.Random):
    from sgieval.core import Item

    n = rng.randint(3, 8)
    ref = {
        "core_idea": _sentence(rng),
        "keywords": rng.sample(WORDS, 4),
        "implementation_steps": repr({str(i): _sentence(rng, 6) for i in range(1, n + 1)}),
        "implementation_order": [f"{i}-{i + 1}" for i in range(1, n)],
        "data": "d",
        "evaluation_metrics": "{'MAE': 'error'}",
        "expected_outcome": "o",
        "related_work": repr({f"p{i}": _sentence(rng) for i in range(3)}),
        "existing_solutions": repr({f"s{i}": _sentence(rng) for i in range(2)}),
        "related_work_test": repr({f"t{i}": _sentence(rng) for i in range(3)}),
        "challenge": "c",
        "limitation": "l",
        "motivation": "m",
        "task_objective": "t",
    }
    return Item(
        id=f"sgi-bench/bench_{rng.random()}", benchmark="sgi-bench", task="idea_generation", prompt="p", reference=ref
    )


@section("sgi_idea")
def bench_sgi_idea(args: argparse.Namespace) -> None:
    from sgieval.metric_pool.embeddings import get_embedder
    from sgieval.metric_pool.sgi import idea_generation as ig

    rng = random.Random(1)
    replies = [_idea_reply(rng) for _ in range(args.n)]
    items = [_idea_reference(rng) for _ in range(args.n)]
    parsed: list = []
    report(
        "idea parse_idea (fenced + trailing text)",
        args.n,
        timed(lambda: parsed.extend(ig.parse_idea(r) for r in replies)),
    )
    refs: list = []
    report(
        "idea reference_idea (literal_eval)", args.n, timed(lambda: refs.extend(ig.reference_idea(i) for i in items))
    )
    gens = [ig.generated_fields(p) for p in parsed]
    report(
        "idea_feasibility_obj (implementation graphs)",
        args.n,
        timed(lambda: [ig.feasibility_obj(g, r) for g, r in zip(gens, refs)]),
    )
    report(
        "idea completeness + length penalty",
        args.n,
        timed(lambda: [(ig.completeness(g), ig.length_penalty(g["Idea"])) for g in gens]),
    )

    # embedding-bound parts: a hashed random embedder over all n items (the code path without model cost),
    # then the real MiniLM over --n-embed items (fresh texts, no cache hits)
    table: dict[str, np.ndarray] = {}

    def fake(texts):
        return np.stack(
            [table.setdefault(t, np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(384)) for t in texts]
        )

    report(
        "idea effectiveness+novelty+detailedness (fake emb)",
        args.n,
        timed(
            lambda: [
                (
                    ig.effectiveness_obj(g["Idea"], r["keywords"], fake),
                    ig.novelty_obj(g["Idea"], r, fake),
                    ig.detailedness_obj(g, fake),
                )
                for g, r in zip(gens, refs)
            ]
        ),
        "embedding cost excluded",
    )
    emb = get_embedder("minilm")
    emb.encode(["warm up"])
    k = min(args.n_embed, args.n)
    enc = emb.encode
    report(
        "idea_effectiveness_obj (MiniLM)",
        k,
        timed(lambda: [ig.effectiveness_obj(g["Idea"], r["keywords"], enc) for g, r in zip(gens[:k], refs[:k])]),
    )
    report(
        "idea_novelty_obj (MiniLM)",
        k,
        timed(lambda: [ig.novelty_obj(g["Idea"], r, enc) for g, r in zip(gens[:k], refs[:k])]),
    )
    report("idea_detailedness_obj (MiniLM)", k, timed(lambda: [ig.detailedness_obj(g, enc) for g in gens[:k]]))


# ====================================================================== SGI dry experiment (A.3)
@section("sgi_dry")
def bench_sgi_dry(args: argparse.Namespace) -> None:
    from sgieval.core import Item, Response
    from sgieval.metric_pool.base import ScoringContext
    from sgieval.metric_pool.sgi import dry_experiment as de

    main = (
        "import json\n\n\ndef helper(x):\n    return x\n\n\ndef f(x):\n    pass\n\n\ndef g(x):\n    pass\n\n\n"
        "def main():\n    print(f(2) + g(3))\n\n\nif __name__ == '__main__':\n    main()\n"
    )
    answers = [
        f"<answer>\n@dec\ndef f(x):\n    return x * {i}\n\ndef g(x):\n    return x + {i}\n</answer>"
        for i in range(args.n)
    ]
    report(
        "dry assemble (ast, 2 functions)", args.n, timed(lambda: [de.assemble(main, a, ["f", "g"]) for a in answers])
    )

    k = args.n_exec
    item = Item(
        id="sgi-bench/bench_dry",
        benchmark="sgi-bench",
        task="dry_experiment",
        prompt="p",
        reference={
            "incomplete_main_code": main,
            "incomplete_functions": ["f", "g"],
            "unit_tests": [{"data": "x = 1\n", "output": "7"}] * 5,
        },
    )
    m = de.DryExperimentMetric({"unsafe_local_exec": True, "dry_timeout_s": 30})

    async def run_all():
        for a in answers[:k]:
            await m.score(item, Response(item_id=item.id, model="bench", text=a), ScoringContext())

    report(
        "dry full item (5 tests, subprocess fallback)",
        k,
        timed(lambda: asyncio.run(run_all())),
        "process-bound: 10 python starts per item",
    )


# ====================================================================== (other helpers: add sections below)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="generated items for pure-Python metric parts")
    ap.add_argument("--n-embed", type=int, default=100, help="items for MiniLM-bound metric parts")
    ap.add_argument("--n-exec", type=int, default=10, help="items for sandbox-executed metrics")
    ap.add_argument("--n-sentences", type=int, default=512, help="sentences for the embedding throughput")
    ap.add_argument("--only", nargs="*", default=None, help=f"sections to run (default all): {', '.join(SECTIONS)}")
    args = ap.parse_args(argv)
    for name, fn in SECTIONS.items():
        if args.only and name not in args.only:
            continue
        print(f"== {name}")
        fn(args)


if __name__ == "__main__":
    main()
