"""Compare finished runs (``sgieval compare``): items matched by id and prompt, models by name; the same model in two
runs gets a paired test per shared item-level metric (:func:`paired_test`: sign-flip permutation, two-sided, 95%
bootstrap CI of second minus first), and every model is ranked together on the shared items by the report's rules."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import CORPUS, InputError, Item, RunConfig, Score
from ..core import call_in_worker
from ..metric_pool import paired_test
from ..reports import Change, Comparison, RankRow, RunSide
from ..reports import ci_text, count_phrase, fmt2, fmt_p, order_stats, rank_labels, separated_order, tie_groups
from .reporting import adjacent_pair_tests, ranking_stats

# the config.json settings a comparison lists when they differ between runs
CONFIG_FIELDS = tuple(
    "judges added_judges agent_model benchmarks k seed metric temperature judge_temperature reasoning_effort "
    "judge_repeats tools recheck corpus base_url sent_params".split()
)


@dataclass
class RunInput:
    """One run to compare; ``specs``: metric name -> (higher_is_better, scale text); ``started``: ISO UTC or ""."""

    run_id: str
    path: Path
    config: RunConfig
    items: list[Item]
    scores: list[Score]
    models: list[str]
    primary: str
    specs: dict[str, tuple[bool, str]]
    metric_plan: dict[str, Any] = field(default_factory=dict)
    started: str = ""
    added: str = ""  # the targets and ranking metric ask --into added, and when
    added_judges: str = ""  # the judges ask --into added, and when
    rubrics: dict[str, str] = field(default_factory=dict)  # rubrics/<name>.yaml -> SHA-256 of its bytes


def _values(scores: list[Score], keep: set[str]) -> dict[str, dict[str, dict[str, float]]]:
    """model -> metric -> item id -> value of the ok item-level scores on the items ``keep``."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for s in scores:
        if s.ok and s.value is not None and s.item_id != CORPUS and s.item_id in keep:
            out.setdefault(s.model, {}).setdefault(s.metric, {})[s.item_id] = float(s.value)
    return out


def _change(model: str, metric: str, a: RunInput, b: RunInput, va: dict, vb: dict, n_resamples: int, seed: int):
    keys = sorted(set(va) & set(vb))
    nan = float("nan")
    if not keys:
        return Change(model, metric, a.run_id, b.run_id, 0, nan, nan, nan, nan, nan, None, False)
    x, y = {k: vb[k] for k in keys}, {k: va[k] for k in keys}
    identical = all(x[k] == y[k] for k in keys)
    if len(keys) < 2:
        k, note = keys[0], "no CI: fewer than 2 paired items"
        return Change(
            model, metric, a.run_id, b.run_id, 1, y[k], x[k], x[k] - y[k], nan, nan, None, identical, ci_note=note
        )
    r = call_in_worker(paired_test, x, y, n_resamples=n_resamples, seed=seed)
    return Change(
        model, metric, a.run_id, b.run_id, r.n, r.mean_b, r.mean_a, r.mean_diff, r.ci_low, r.ci_high, r.p_value,
        identical, method=r.method, ci_note=r.ci_note,
    )  # fmt: skip


def _setting(run: RunInput, name: str) -> str:
    if name == "metric plan":
        plan = run.metric_plan or {}
        custom = plan.get("custom") or []
        return f"ranking {run.primary or 'unknown'}" + (f"; custom {', '.join(map(str, custom))}" if custom else "")
    v = getattr(run.config, name, None)
    if name == "sent_params" and isinstance(v, dict):  # an added judge's parameters: said under added_judges
        v = {k: x for k, x in v.items() if k not in set(run.config.added_judges)}
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v)) or "none"
    if isinstance(v, dict):
        return ", ".join(f"{k}={v[k]}" for k in sorted(v)) or "none"
    return "none" if v is None else str(v)


def compare_runs(
    runs: list[RunInput], *, metric: str | None = None, n_resamples: int = 10000, seed: int = 0
) -> Comparison:
    """Compare ``runs`` (two or more; the first is the baseline of each pair).

    Args:
        runs: the runs' records.
        metric: the ranking metric (default: the first of the runs' ranking metrics that every run scored).
        n_resamples, seed: of the paired tests and bootstrap CIs.

    Returns:
        The Comparison.

    Raises:
        InputError: fewer than two runs, no item every run shares, or a ranking metric not every run scored.
    """
    if len(runs) < 2:
        raise InputError("a comparison needs two runs or more", what="compare", fix="give two run ids or folders")
    shared, changed, items_only = _shared_items(runs)
    keep = set(shared)
    per_run = [{s.metric for s in r.scores if s.item_id != CORPUS} for r in runs]
    corpus = sorted({s.metric for r in runs for s in r.scores if s.item_id == CORPUS} - set().union(*per_run))
    shared_metrics = sorted(set(per_run[0]).intersection(*per_run[1:]))
    metrics_only = {r.run_id: sorted(m - set(shared_metrics)) for r, m in zip(runs, per_run)}
    metric, notes = _ranking_metric(runs, metric, shared_metrics)
    hib, scale = next((r.specs[metric] for r in runs if metric in r.specs), (True, ""))
    values = [_values(r.scores, keep) for r in runs]
    seen: dict[str, list[int]] = {}  # model -> the runs that have it
    for k, r in enumerate(runs):
        for m in dict.fromkeys(r.models):
            seen.setdefault(m, []).append(k)
    models_shared = [m for m, ks in seen.items() if len(ks) > 1]
    changes: list[Change] = []
    other: list[Change] = []
    for m in models_shared:  # the same model across runs
        for i, j in itertools.combinations(seen[m], 2):
            for name in [metric, *[x for x in shared_metrics if x != metric]]:
                va, vb = (values[k].get(m, {}).get(name, {}) for k in (i, j))
                c = _change(m, name, runs[i], runs[j], va, vb, n_resamples, seed)
                (changes if name == metric else other).append(c)
    entries, ranking, pairs, groups = _joint_ranking(runs, seen, values, metric, hib, keep, n_resamples, seed)
    if any(len(ks) == 1 for _, m, ks in entries if len(seen[m]) > 1):
        notes.append(
            "A model whose values differ between runs is ranked once per run, as `model [run]`; a model with the same "
            "values in every run that has it is ranked once."
        )
    sides = [
        RunSide(
            run_id=r.run_id, path=str(r.path), request=r.config.request, models=list(r.models),
            judges=list(r.config.judges), primary=r.primary, n_items=len(r.items), started=r.started, added=r.added,
            added_judges=r.added_judges,
        )
        for r in runs
    ]  # fmt: skip
    comparison = Comparison(
        runs=sides, metric=metric, scale=scale, higher_is_better=hib, shared_items=shared, items_only=items_only,
        items_changed=changed, models_shared=models_shared,
        models_only={r.run_id: [m for m in r.models if len(seen[m]) == 1] for r in runs},
        metrics_shared=shared_metrics, metrics_only=metrics_only, metrics_corpus=corpus, changes=changes,
        other_changes=other, ranking=ranking, pairs=pairs, config_diff=_config_diff(runs), notes=notes,
        n_resamples=n_resamples, seed=seed,
    )  # fmt: skip
    comparison.answer = _answer(comparison, groups)
    comparison.limits = _limits(comparison, seen)
    return comparison


def _shared_items(runs: list[RunInput]) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """(item ids every run selected with the same prompt, ids whose prompt differs, per run the ids only it has)."""
    prompts = [{i.id: i.prompt for i in r.items} for r in runs]
    common = set(prompts[0]).intersection(*prompts[1:])
    changed = sorted(i for i in common if len({p[i] for p in prompts}) > 1)
    shared = sorted(common - set(changed))
    if not shared:
        fix = "compare runs of the same benchmark items (the same request or selection)"
        what = ", ".join(r.run_id for r in runs)
        raise InputError(
            "the runs share no item (no item id selected in every run with the same prompt)", what=what, fix=fix
        )
    return shared, changed, {r.run_id: sorted(set(p) - common) for r, p in zip(runs, prompts)}


def _ranking_metric(runs: list[RunInput], metric: str | None, shared_metrics: list[str]) -> tuple[str, list[str]]:
    """(the comparison's ranking metric, notes): ``metric``, else the first run ranking metric every run scored."""
    notes: list[str] = []
    if metric is None:
        primaries = [r.primary for r in runs if r.primary]
        metric = next((m for m in primaries if m in shared_metrics), None)
        if metric is None:
            raise InputError(
                f"no ranking metric of these runs ({', '.join(primaries) or 'none'}) was scored in every run",
                what="--metric",
                fix=f"pass --metric with one of the shared metrics: {', '.join(shared_metrics) or '(none)'}",
            )
        if len(set(primaries)) > 1:
            notes.append(
                f"The runs rank by different metrics ({', '.join(f'{r.run_id}: {r.primary}' for r in runs)}); "
                f"this comparison ranks by {metric}, the first of them every run scored."
            )
    elif metric not in shared_metrics:
        raise InputError(
            f"metric {metric!r} was not scored item by item in every run",
            what="--metric",
            fix=f"use one of the shared metrics: {', '.join(shared_metrics) or '(none)'}",
        )
    if len({r.specs[metric][0] for r in runs if metric in r.specs}) > 1:
        raise InputError(
            f"the runs disagree on whether a higher {metric} is better",
            what=", ".join(r.run_id for r in runs),
            fix="compare runs whose metric definitions agree (see each report's Metric definitions)",
        )
    return metric, notes


def _joint_ranking(
    runs: list[RunInput], seen: dict[str, list[int]], values: list[dict], metric: str, hib: bool, keep: set[str],
    n_resamples: int, seed: int,
) -> tuple[list[tuple[str, str, list[int]]], list[RankRow], list[dict[str, Any]], list[list[Any]]]:  # fmt: skip
    """Every model ranked together on the shared items: (entries (label, model, run indices), rows, pairs, groups)."""
    entries: list[tuple[str, str, list[int]]] = []
    for m, ks in seen.items():
        vals = [values[k].get(m, {}).get(metric, {}) for k in ks]
        if all(v == vals[0] for v in vals[1:]):
            entries.append((m, m, ks))
        else:
            entries += [(f"{m} [{runs[k].run_id}]", m, [k]) for k in ks]
    if len(seen) < 2 or len(entries) < 2:  # one model alone: its changes are the whole comparison
        return entries, [], [], []
    pooled = [
        s.model_copy(update={"model": label}) for label, m, ks in entries for s in runs[ks[0]].scores
        if s.model == m and s.metric == metric and s.item_id in keep
    ]  # fmt: skip
    stats = order_stats(ranking_stats(pooled, metric, [e[0] for e in entries], n_resamples, seed), hib)
    ranked = [s for s in stats if s.summary is not None]
    pairs = adjacent_pair_tests(pooled, metric, ranked, n_resamples=n_resamples, seed=seed)
    groups = tie_groups(ranked, pairs)
    rank_of = rank_labels(groups)
    src = {e[0]: e for e in entries}
    ranking = []
    for s in stats:
        _, m, ks = src[s.model]
        sm = s.summary
        ranking.append(
            RankRow(
                entry=s.model, model=m, runs=[runs[k].run_id for k in ks], rank=rank_of.get(s.model, "unscored"),
                mean=sm.mean if sm is not None else None, ci=ci_text(sm) if sm is not None else s.reason,
                n=sm.n if sm is not None else 0, total=sm.total if sm is not None else None,
            )
        )  # fmt: skip
    return entries, ranking, pairs, groups


def _config_diff(runs: list[RunInput]) -> list[tuple[str, list[str]]]:
    """The settings (and rubric versions) that differ between the runs, with each run's value."""
    out: list[tuple[str, list[str]]] = []
    for name in [*CONFIG_FIELDS, "metric plan"]:
        settings = [_setting(r, name) for r in runs]
        if len(set(settings)) > 1:
            out.append((name, settings))
    for name in sorted({n for r in runs for n in r.rubrics}):  # the same rubric name, another version
        versions = [f"sha256 {r.rubrics[name][:12]}" if name in r.rubrics else "absent" for r in runs]
        if len(set(versions)) > 1:
            out.append((f"rubric {name}", versions))
    return out


def _answer(c: Comparison, groups: list[list[Any]]) -> list[str]:
    out = [ch.sentence() for ch in c.changes]
    if c.ranking and groups:
        out.append(
            f"Ranked together by {c.metric} on the {count_phrase(len(c.shared_items), 'item')} every run shares. "
            + separated_order(groups, c.pairs, c.higher_is_better)
        )
        tested = [p for p in c.pairs if p.get("p") is not None]
        sep = [f"{p['a']} from {p['b']} (p = {p['p_value']})" for p in tested if p.get("significant")]
        loose = [f"{p['a']} from {p['b']} (p = {p['p_value']})" for p in tested if not p.get("significant")]
        untested = [f"{p['a']} and {p['b']}" for p in c.pairs if p.get("p") is None]
        if sep:
            out.append(f"The paired test separates {'; '.join(sep)} at the 5% level.")
        if loose:
            out.append(
                f"It does not separate {'; '.join(loose)}: their order on these items is not evidence of a difference."
            )
        if untested:
            out.append(f"Not tested (fewer than 2 items both scored): {'; '.join(untested)}.")
    real_other = [ch for ch in c.other_changes if ch.real and not ch.identical]
    if c.other_changes:
        if all(ch.identical for ch in c.other_changes if ch.n):
            out.append(
                f"On the other shared metrics, each of the {len(c.other_changes)} same-model comparisons gives the "
                "same value on every paired item: no change."
            )
        elif real_other:
            out.append(
                f"On the other shared metrics, {count_phrase(len(real_other), 'real change')} of "
                f"{len(c.other_changes)} tested: "
                + "; ".join(
                    f"{ch.model} on {ch.metric} ({fmt2(ch.mean_a)} -> {fmt2(ch.mean_b)}, p = {fmt_p(ch.p)})"
                    for ch in real_other
                )
                + "."
            )
        else:
            out.append(
                f"On the other shared metrics, none of the {len(c.other_changes)} same-model comparisons is a real "
                "change at the 5% level."
            )
    return out


def _limits(c: Comparison, seen: dict[str, list[int]]) -> list[str]:
    n_tests = sum(1 for ch in [*c.changes, *c.other_changes] if ch.p is not None and not ch.identical)
    n_tests += sum(1 for p in c.pairs if p.get("p") is not None)
    out = []
    if n_tests > 1:
        out.append(
            f"The {n_tests} p-values are two-sided and not adjusted for multiple comparisons: among many tests, some "
            "p < 0.05 are expected by chance alone."
        )
    if any(ch.real is False and not ch.identical for ch in [*c.changes, *c.other_changes]):
        out.append(
            "\"Not a real change\" means the paired test does not separate the runs on these items, not that the "
            "model scores the same: the 95% CI of the difference is the range of changes the data still allow."
        )
    if any(ch.real and not ch.identical for ch in [*c.changes, *c.other_changes]):
        out.append(
            "A real change says a model's scores differ between the runs, not why: whatever differs between them "
            "(the model behind the name, its prompt, sampling, a judge's replies) may cause it."
        )
    if c.config_diff:
        out.append(
            f"The runs differ in {', '.join(k for k, _ in c.config_diff)} (table above): a change of a model between "
            "them may come from any of these, and this comparison cannot say which."
        )
    if any(len(ks) == 1 for m, ks in seen.items()) and len(seen) > 1:
        out.append(
            "Models from different runs are ranked on the same items, but each with its own run's settings and "
            "time of the calls: the joint ranking mixes a model difference with any difference between the runs."
        )
    left = sum(len(v) for v in c.items_only.values()) + len(c.items_changed)
    if left:
        out.append(
            f"The {count_phrase(left)} not shared by every run are left out: the comparison says nothing about them."
        )
    out.append(
        f"The comparison covers the {count_phrase(len(c.shared_items), 'shared item')} only; whether a difference "
        "holds on other items of the benchmark is not settled here."
    )
    return out
