"""Build the report: its data model, the built-in sections, limitations, failures and figures.

The reporting agent (``agents/reporting.py``) computes the statistics that
need the metric pool (per-model :class:`ModelStat` summaries, the paired
tests of adjacent ranks, the SGI-Score rows) and hands them here as plain
data; :func:`assemble` turns records + those statistics into a
:class:`ReportDraft` (every registered section, limitations, failures;
everything but the Answer) and :func:`write_report_files` renders it with the
Answer into ``report.md`` and ``report.json``.  It imports only ``core``
(DESIGN.md "Layout").

Sections are registered builders (:mod:`.sections`); the built-in ones here: the ranking (mean, total and
95% CI per target model, shared ranks "2=" for ties (METRICS.md D.16), unscored models with their reason,
a bar chart, the paired permutation test of every adjacent pair), coverage (when the models' scored items
differ: shared items, own items, failures as wrong), SGI-Score, all metrics (custom ones marked *custom*),
a per-criterion breakdown of every rubric metric (table + heatmap of model x criterion means, 0-10), and the
ranking metric by discipline and by task.  A CI without variation is printed as "no variation over n items"
and supports no verdict.  Figures are embedded only when their file was written.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..core import (
    CORPUS,
    REPORT_PENDING,
    Item,
    MetricSpec,
    Response,
    Score,
    atomic_write_text,
    escape_control_chars,
    redact_secrets,
    same_model,
)
from ..core import open_append_in
from .answer import flag_rows, judge_summary, judgement_sources, self_preference
from .charts import heatmap, ranking_chart
from .render import render_report, write_report_json
from .sections import ReportContext, Section, Table, Text, build_sections, report_section

__all__ = [
    "NOT_APPLICABLE_REASONS",
    "ModelStat",
    "PairStat",
    "ReportDraft",
    "SgiRow",
    "SummaryLike",
    "RANKING_HEADERS",
    "assemble",
    "ci_overlap",
    "count_phrase",
    "criterion_scores",
    "fmt",
    "fmt2",
    "fmt_p",
    "fmt_total",
    "has_ci",
    "no_variation",
    "item_values",
    "not_applicable",
    "order_stats",
    "pair_entry",
    "ranking_rows",
    "rubric_breakdown",
    "sgi_table",
    "write_report_files",
]


def fmt(x: float | None, digits: int = 2) -> str:
    """Numbers as the report prints them: integers without decimals, others
    with ``digits`` decimals; None/NaN as "n/a".

    Args:
        x: a number.
        digits: decimals of a non-integer.

    Returns:
        The text.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.{digits}f}"


def fmt2(x: float | None) -> str:
    """A statistic (mean, CI bound, difference) as the report's tables print it:
    always 2 decimals ("8.00" beside "7.76"); None/NaN as "n/a".

    Args:
        x: a number.

    Returns:
        The text.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.2f}"


def fmt_total(x: float | None, spec: MetricSpec) -> str:
    """A total: an integer for a count metric (unbounded range, e.g. accepted
    answers), else 2 decimals like the means.

    Args:
        x: a total.
        spec: its metric.

    Returns:
        The text.
    """
    return fmt(x) if math.isinf(spec.range[1]) else fmt2(x)


def fmt_p(p: float | None) -> str:
    """A p-value, every one alike: 4 decimals ("0.0012", "0.5625"), "< 0.0001" below that; None as "n/a".

    Args:
        p: a p-value in [0, 1].

    Returns:
        The text.
    """
    if p is None or math.isnan(p):
        return "n/a"
    return "< 0.0001" if p < 0.0001 else f"{p:.4f}"


def count_phrase(n: int, noun: str = "item") -> str:
    """``"1 item"``, ``"3 items"`` (English plural of ``noun`` by count).

    Args:
        n: the count.
        noun: the noun, singular.

    Returns:
        The phrase.
    """
    return f"{n} {noun}{'' if n == 1 else 's'}"


# ----------------------------------------------------------------------------- data model
class SummaryLike(Protocol):
    """What the report reads of a per-model summary (``metric_pool.aggregate.Summary``):
    ``n`` values, ``mean`` and ``total`` on the metric's scale, the 95% CI
    ``[ci_low, ci_high]`` (NaN when unavailable)."""

    @property
    def n(self) -> int: ...
    @property
    def mean(self) -> float: ...
    @property
    def total(self) -> float: ...
    @property
    def ci_low(self) -> float: ...
    @property
    def ci_high(self) -> float: ...


class PairStat(Protocol):
    """What the report reads of a paired test (``metric_pool.aggregate.PairedResult``):
    ``n`` shared items, ``method``, ``mean_diff`` (a minus b), the 95% CI of the
    difference ``[ci_low, ci_high]`` and ``p_value`` (0-1)."""

    @property
    def n(self) -> int: ...
    @property
    def method(self) -> str: ...
    @property
    def mean_diff(self) -> float: ...
    @property
    def ci_low(self) -> float: ...
    @property
    def ci_high(self) -> float: ...
    @property
    def p_value(self) -> float: ...


@dataclass
class ModelStat:
    """One target model's row of the ranking: ``summary`` None when it has no
    ok score; ``corpus`` True for a corpus-level metric (one value over
    ``summary.n`` items, e.g. quadratic weighted kappa: no per-item CI)."""

    model: str
    summary: SummaryLike | None
    failed: int
    corpus: bool = False
    reason: str = ""
    """Why a model without a valid score is unscored (:func:`unscored_reason`; "" for a ranked model)."""

    @property
    def stats(self) -> SummaryLike:
        """``summary`` of a model that has one (a ranked model); raises
        ValueError for a model without an ok score."""
        if self.summary is None:
            raise ValueError(f"{self.model} has no ok score: it is not ranked")
        return self.summary


@dataclass
class SgiRow:
    """One target model's SGI-Score (0-100, METRICS.md A.6) or None, its per-task
    terms as text, and the missing terms as text ("" when complete)."""

    model: str
    sgi_score: float | None
    per_task: str
    missing: str = ""


@dataclass
class ReportDraft:
    """Everything of the report but its narrative: ``data`` (the template's
    keys except ``narrative``), ``stats`` (ranking order), ``spec`` (the
    ranking metric), ``top`` (paired test of the top two, or None),
    ``tables_text`` (every section's text as one: what a narrative may cite),
    ``sgi_missing`` (why an SGI-Score is unavailable, one line per group),
    ``sections`` (the registered sections, in order)."""

    data: dict[str, Any]
    stats: list[ModelStat]
    spec: MetricSpec
    top: dict[str, Any] | None
    tables_text: str
    sgi_missing: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)

    @property
    def limitations(self) -> list[str]:
        """The Limitations section's lines (append to add one)."""
        return self.data["limitations"]


# ----------------------------------------------------------------------------- statistics helpers
def ci_text(a: SummaryLike) -> str:
    """A ranking row's CI cell: ``"lo to hi"``, marked ``(Wilson score, 0/1 metric)``
    for a Wilson interval, and saying why for a degenerate or missing one
    (``Summary.method`` / ``Summary.note``).

    Args:
        a: a summary.

    Returns:
        The cell text.
    """
    method, note = getattr(a, "method", ""), getattr(a, "note", "")
    if not has_ci(a):
        return f"n/a ({note})" if note else "n/a"
    if no_variation(a):
        return f"no variation over {count_phrase(a.n)}"
    text = f"{fmt2(a.ci_low)} to {fmt2(a.ci_high)}"
    if method == "wilson":
        return f"{text} (Wilson score, 0/1 metric)"
    if method in ("degenerate", "percentile") and note:
        return f"{text} ({note})"
    return text


def no_variation(a: Any) -> bool:
    """Whether a CI (of a summary: ``ci_low``/``ci_high``) has zero width: every resample gave the same value,
    so it shows no variation and supports no verdict (it is printed as "no variation over n items").

    Args:
        a: a summary.

    Returns:
        True for a zero-width CI.
    """
    lo, hi = getattr(a, "ci_low", math.nan), getattr(a, "ci_high", math.nan)
    return math.isfinite(lo) and math.isfinite(hi) and math.isclose(lo, hi, rel_tol=0.0, abs_tol=1e-12)


def has_ci(a: SummaryLike) -> bool:
    """Whether both CI bounds of ``a`` are numbers (not NaN).

    Args:
        a: a summary.

    Returns:
        True when both bounds are numbers.
    """
    return not any(math.isnan(x) for x in (a.ci_low, a.ci_high))


def ci_overlap(a: SummaryLike, b: SummaryLike) -> bool | None:
    """Whether the two 95% CIs overlap; None when either CI is unavailable (NaN).
    Overlap is only overlap: it is not a significance test.

    Args:
        a: one summary.
        b: the other.

    Returns:
        True, False, or None.
    """
    if not (has_ci(a) and has_ci(b)):
        return None
    return not (a.ci_low > b.ci_high or b.ci_low > a.ci_high)


def order_stats(stats: list[ModelStat], higher_is_better: bool) -> list[ModelStat]:
    """Models with a summary by mean (best first), then those without.  Models with equal means are listed in
    name order, which is a listing order only: whether they share a rank is :func:`tie_groups`' decision.

    Args:
        stats: per-model summaries.
        higher_is_better: the metric's direction.

    Returns:
        The ordered list.
    """
    have = [s for s in stats if s.summary is not None]
    none = [s for s in stats if s.summary is None]
    have.sort(key=lambda s: (-(s.stats.mean) if higher_is_better else s.stats.mean, s.model))
    return have + none


def tied(a: ModelStat, b: ModelStat, pair: dict[str, Any] | None) -> bool:
    """Whether ``a`` and ``b`` (adjacent in the ranking) share a rank (METRICS.md D.16): their means are equal at
    the precision the report prints (:func:`fmt2`) and the paired test ``pair`` (:func:`pair_entry`, None or
    ``p`` None when not tested) does not separate them at the 5% level."""
    if fmt2(a.stats.mean) != fmt2(b.stats.mean):
        return False
    return not pair_separates(pair)


def tie_groups(ranked: list[ModelStat], pairs: list[dict[str, Any]]) -> list[list[ModelStat]]:
    """The ranked models (best first) in groups that share a rank: consecutive models joined by :func:`tied`
    (``pairs[k]`` is the paired test of ``ranked[k]`` and ``ranked[k + 1]``, :func:`pair_entry`).  Name order
    never splits a group.

    Returns:
        One list per rank, best first; a list of one model when it is not tied.

    Args:
        ranked: the ranked models, best first.
        pairs: see above.
    """
    groups: list[list[ModelStat]] = []
    for k, s in enumerate(ranked):
        if groups and tied(ranked[k - 1], s, pairs[k - 1] if k - 1 < len(pairs) else None):
            groups[-1].append(s)
        else:
            groups.append([s])
    return groups


def rank_labels(groups: list[list[ModelStat]]) -> dict[str, str]:
    """``{model: rank}`` in standard competition ranking with shared ranks marked: ``"1"``, ``"2="``, ``"2="``,
    ``"4"`` (a group of one has no ``=``).

    Args:
        groups: the rank groups, best first.

    Returns:
        model -> rank label.
    """
    out: dict[str, str] = {}
    pos = 1
    for g in groups:
        for s in g:
            out[s.model] = f"{pos}=" if len(g) > 1 else str(pos)
        pos += len(g)
    return out


def order_with_ties(groups: list[list[Any]], higher_is_better: bool = True) -> str:
    """The full order with shared ranks: ``"alpha > beta = gamma > delta"`` (``<`` when lower is better); each
    group's members are model names or :class:`ModelStat`.

    Args:
        groups: the rank groups, best first.
        higher_is_better: the metric's direction.

    Returns:
        The order text.
    """
    name = lambda x: x.model if isinstance(x, ModelStat) else str(x)  # noqa: E731
    return (" > " if higher_is_better else " < ").join(" = ".join(name(x) for x in g) for g in groups)


REASON_CHARS = 160
"""The most characters of a failure reason quoted in a table cell or a sentence (:func:`clip_reason`)."""

_CLOSING = {"(": ")", "[": "]", "{": "}"}


def clip_reason(text: str, width: int = REASON_CHARS) -> str:
    """A failure reason short enough for a table cell: whole when it fits in ``width`` characters, else cut at
    the last word boundary before ``width``, ending in "…" and closing every parenthesis or bracket left open.

    Args:
        text: the reason (one line; whitespace runs count as one space).
        width: the most characters of the reason kept before the "…" (>= 1).

    Returns:
        The reason, e.g. ``"no judge gave a valid reply (openai:gpt-4.1: unparsable…)"``.
    """
    one = " ".join(str(text).split())
    if len(one) <= width:
        return one
    cut = one[: width + 1]
    cut = cut[: cut.rfind(" ")] if " " in cut else one[:width]
    cut = cut.rstrip(" ,;:-([{")
    opened: list[str] = []
    for c in cut:
        if c in _CLOSING:
            opened.append(_CLOSING[c])
        elif opened and c == opened[-1]:
            opened.pop()
    return cut + "…" + "".join(reversed(opened))


def unscored_reason(mine: list[Score]) -> str:
    """Why a model has no valid score for a metric, from its scores of that metric: e.g. "2 not applicable: no
    related works found", "3 failed (judge_error): timeout", "no score recorded".

    Args:
        mine: one model's scores of one metric.

    Returns:
        The reason.
    """
    if not mine:
        return "no score recorded"
    na = [s for s in mine if not_applicable(s) or s.status == "not_applicable"]
    failed = [s for s in mine if s not in na]
    parts = []
    if na:
        why = next((s.error for s in na if s.error), "")
        parts.append(f"{len(na)} not applicable" + (f": {clip_reason(why)}" if why else ""))
    if failed:
        by = Counter(s.status for s in failed)
        what = ", ".join(f"{k} {v}" if len(by) > 1 else k for k, v in sorted(by.items()))
        why = next((s.error for s in failed if s.error), "")
        parts.append(f"{len(failed)} failed ({what})" + (f": {clip_reason(why)}" if why else ""))
    return "; ".join(parts)


@dataclass
class Coverage:
    """How the models' scored item sets of the ranking metric compare (METRICS.md D.16).

    ``selected``: items selected; ``shared``: ids every scored model has a valid score for; ``own``:
    ``{model: (n, mean)}`` over each model's own valid items; ``wrong``: ``{model: (n, mean)}`` over every item
    any scored model attempted (valid or failed, not-applicable ones left out), a failure or a missing score
    counted as the metric's worst value (``worst``); ``shared_means``: ``{model: mean}`` on the shared items."""

    selected: int
    shared: set[str]
    own: dict[str, tuple[int, float]]
    wrong: dict[str, tuple[int, float]]
    shared_means: dict[str, float]
    worst: float | None

    @property
    def differs(self) -> bool:
        """Whether some scored model's item set is not the shared one."""
        return any(n != len(self.shared) for n, _ in self.own.values())


def coverage(scores: list[Score], spec: MetricSpec, models: list[str], selected: int) -> Coverage | None:
    """The :class:`Coverage` of ``spec`` (item-level, ok scores) over ``models``; None for a corpus-level
    metric or when fewer than two models have a valid score.

    Args:
        scores: the scores (any metric; only ``spec``'s are read).
        spec: the ranking metric; its worst value is ``range[0]`` when higher is better, else ``range[1]``
            (None when that end is infinite: then ``wrong`` is empty).
        models: the target models.
        selected: the number of selected items.

    Returns:
        The Coverage, or None.
    """
    own: dict[str, dict[str, float]] = {m: {} for m in models}
    tried: set[str] = set()
    for s in scores:
        if s.metric != spec.name or s.model not in own:
            continue
        if s.item_id == CORPUS:
            if s.ok:
                return None
            continue
        if s.ok and s.value is not None:
            own[s.model][s.item_id] = float(s.value)
            tried.add(s.item_id)
        elif not (not_applicable(s) or s.status == "not_applicable"):
            tried.add(s.item_id)
    scored = [m for m in models if own[m]]
    if len(scored) < 2:
        return None
    shared = set.intersection(*(set(own[m]) for m in scored))
    worst = spec.range[0] if spec.higher_is_better else spec.range[1]
    worst_v = None if math.isinf(worst) else float(worst)
    wrong = {}
    if worst_v is not None:
        for m in scored:
            vals = [own[m].get(i, worst_v) for i in tried]
            wrong[m] = (len(vals), sum(vals) / len(vals))
    return Coverage(
        selected=selected,
        shared=shared,
        own={m: (len(own[m]), sum(own[m].values()) / len(own[m])) for m in scored},
        wrong=wrong,
        shared_means={m: sum(own[m][i] for i in shared) / len(shared) for m in scored} if shared else {},
        worst=worst_v,
    )


def groups_by_mean(means: dict[str, float], higher_is_better: bool) -> list[list[str]]:
    """Models by mean, best first, grouped where the means print the same (:func:`fmt2`): the order of one
    reading of the data (no paired test)."""
    order = sorted(means, key=lambda m: (-means[m] if higher_is_better else means[m], m))
    out: list[list[str]] = []
    for m in order:
        if out and fmt2(means[out[-1][-1]]) == fmt2(means[m]):
            out[-1].append(m)
        else:
            out.append([m])
    return out


def coverage_sentence(cov: Coverage, spec: MetricSpec) -> str | None:
    """One Answer sentence with the numbers when the order on the shared items, on each model's own items and
    with failures counted as wrong are not all the same; None when they agree (or coverage does not differ).

    Args:
        cov: the Coverage.
        spec: the ranking metric.

    Returns:
        The sentence, or None.
    """
    if not cov.differs:
        return None
    hib = spec.higher_is_better
    readings = []
    if cov.shared_means:
        readings.append(("shared", groups_by_mean(cov.shared_means, hib)))
    readings.append(("own", groups_by_mean({m: v for m, (_, v) in cov.own.items()}, hib)))
    if cov.wrong:
        readings.append(("wrong", groups_by_mean({m: v for m, (_, v) in cov.wrong.items()}, hib)))
    if len({order_with_ties(g) for _, g in readings}) < 2:
        return None
    parts = []
    for what, g in readings:
        if what == "shared":
            vals = ", ".join(f"{m} {fmt2(cov.shared_means[m])}" for grp in g for m in grp)
            who = "both" if len(cov.own) == 2 else "all of them"
            parts.append(f"on the {count_phrase(len(cov.shared))} {who} scored, {order_with_ties(g, hib)} ({vals})")
        elif what == "own":
            vals = ", ".join(f"{m} {fmt2(cov.own[m][1])} on {cov.own[m][0]}" for grp in g for m in grp)
            parts.append(f"on each model's own scored items, {order_with_ties(g, hib)} ({vals})")
        else:
            n = next(iter(cov.wrong.values()))[0]
            vals = ", ".join(f"{m} {fmt2(cov.wrong[m][1])}" for grp in g for m in grp)
            parts.append(
                f"counting a failed or missing score as {fmt(cov.worst)} over the {count_phrase(n)} attempted, "
                f"{order_with_ties(g, hib)} ({vals})"
            )
    return f"The order by {spec.name} depends on coverage: " + "; ".join(parts) + "."


def item_values(scores: list[Score], model: str, metric: str) -> dict[str, float]:
    """``{item_id: value}`` of ``model``'s ok item-level ``metric`` scores (corpus-level ones left out).

    Args:
        scores: the run's scores.
        model: a target model.
        metric: a metric name.

    Returns:
        item id -> value.
    """
    return {
        s.item_id: float(s.value)
        for s in scores
        if s.model == model and s.metric == metric and s.ok and s.value is not None and s.item_id != CORPUS
    }


def pair_separates(pair: dict[str, Any] | None) -> bool:
    """Whether the paired test of an adjacent-pair entry (:func:`pair_entry`) ran and separates its two models at
    the 5% level (its ``significant``: p < 0.05); False for a missing entry or an untested pair.

    Args:
        pair: the entry, or None.

    Returns:
        True when the pair is separated.
    """
    return pair is not None and pair.get("p") is not None and bool(pair.get("significant"))


def pair_entry(hi: ModelStat, lo: ModelStat, shared: int, result: PairStat | None) -> dict[str, Any]:
    """One adjacent-pair entry of the ranking (``hi`` ranked above ``lo``).

    Keys: ``a``, ``b`` (model names), ``n`` shared items, ``overlap`` (whether
    the marginal 95% CIs overlap; None when a CI is unavailable -- reported as
    overlap only, never as a test) and ``p`` (None when not tested); with a
    ``result``: ``method``, ``mean_diff`` (a minus b, formatted), ``ci`` (95%
    paired bootstrap CI of the difference), ``p_value`` (formatted, 4
    decimals, :func:`fmt_p`), ``p`` (float 0-1), ``significant`` (p < 0.05).

    Args:
        hi: the model ranked above.
        lo: the one below.
        shared: items both scored.
        result: their paired test (None: none run).

    Returns:
        The entry.
    """
    d: dict[str, Any] = {
        "a": hi.model,
        "b": lo.model,
        "n": shared,
        "p": None,
        "overlap": ci_overlap(hi.stats, lo.stats),
    }
    if result is not None:
        d.update(
            n=result.n,
            method=f"{result.method}, {hi.model} minus {lo.model}",
            mean_diff=fmt2(result.mean_diff),
            ci=(
                f"no variation over {count_phrase(result.n)}"
                if no_variation(result)
                else f"{fmt2(result.ci_low)} to {fmt2(result.ci_high)}"
            ),
            p_value=fmt_p(result.p_value),
            p=result.p_value,
            significant=result.p_value < 0.05,
        )
    return d


NOT_APPLICABLE_REASONS = (re.compile(r"^no accepted answers\b"),)
"""``not_run`` reasons that mean "nothing to score", not a failure: SciAidanBench
coherence / novelty means over a question with 0 accepted answers
(metric_pool/aidanbench.py: "no accepted answers with a <field>")."""


def not_applicable(s: Score) -> bool:
    """True for a Score that is not applicable rather than failed: status
    ``not_run`` with ``details["not_applicable"]`` true or a reason matching
    :data:`NOT_APPLICABLE_REASONS`.

    Args:
        s: a Score.

    Returns:
        True when not applicable.
    """
    if s.status != "not_run":
        return False
    if (s.details or {}).get("not_applicable"):
        return True
    return any(p.search(s.error or "") for p in NOT_APPLICABLE_REASONS)


# ----------------------------------------------------------------------------- tables
def _breakdown(
    items: dict[str, Item],
    scores: list[Score],
    metric: str,
    models: list[str],
    facet: str,
    show_total: bool,
    scored_ids: set[str] | None = None,
) -> Table | None:
    """The breakdown table of ``metric`` by ``facet`` (discipline, task): one row per facet value of the
    scored items (``scored_ids``: the ids of every score of the run, any metric; default the ids in
    ``scores``), the mean (or total and mean) of each model's ok item-level values there; None when the
    items share one facet value.  ``scores`` may hold only ``metric``'s scores."""
    ids = scored_ids if scored_ids is not None else {s.item_id for s in scores}
    groups = sorted({getattr(items[i], facet) for i in ids if i in items})
    if len(groups) < 2:  # a one-row breakdown repeats the ranking
        return None
    cells: defaultdict[tuple[str, Any], list[float]] = defaultdict(list)  # (model, facet value) -> values
    for s in scores:
        if s.metric == metric and s.ok and s.value is not None and s.item_id in items:
            cells[(s.model, getattr(items[s.item_id], facet))].append(s.value)
    per_group = Counter(getattr(it, facet) for it in items.values())
    rows = []
    for g in groups:
        row: list[Any] = [g or "(none)", per_group[g]]
        for m in models:
            vals = cells.get((m, g))
            if not vals:
                row.append("n/a")
            elif show_total:
                row.append(f"{fmt(sum(vals))} ({fmt2(sum(vals) / len(vals))})")
            else:
                row.append(fmt2(sum(vals) / len(vals)))
        rows.append(row)
    label = "total (mean)" if show_total else "mean"
    return Table([facet, "items"] + [f"{m}: {label}" for m in models], rows, name=facet)


def _cell_without_value(mine: list[Score]) -> str:
    """The "All metrics" cell of one (metric, model) without an ok value:
    "n/a" (no score), "not run", "not applicable (N)" or "all N failed (status[ k, status k])" with
    "; M not applicable" when some of the scores were not applicable."""
    if not mine:
        return "n/a"
    if all(s.status == "not_run" and not not_applicable(s) for s in mine):
        return "not run"
    if all(not_applicable(s) for s in mine):
        return f"not applicable ({len(mine)})"
    failed = [s for s in mine if not not_applicable(s)]
    by = Counter(s.status for s in failed)
    what = next(iter(by)) if len(by) == 1 else ", ".join(f"{k} {v}" for k, v in sorted(by.items()))
    na = len(mine) - len(failed)
    return f"all {len(failed)} failed ({what})" + (f"; {na} not applicable" if na else "")


def _metrics_table(scores: list[Score], specs: list[MetricSpec], models: list[str], custom: set[str]) -> Table:
    """One row per metric of the run's metric list (``specs``), never dropped:
    the mean per item of the ok scores per target model, "x (corpus)" for a
    corpus-level value, else :func:`_cell_without_value` (e.g. "all 3 failed
    (judge_error)", "not run")."""
    rows = []
    by_pair: defaultdict[tuple[str, str], list[Score]] = defaultdict(list)  # one pass over the scores
    for s in scores:
        by_pair[(s.model, s.metric)].append(s)
    for spec in specs:
        row: list[Any] = [spec.name + (" *custom*" if spec.name in custom else ""), spec.kind, spec.scale_label]
        for m in models:
            mine = by_pair.get((m, spec.name), [])
            item_vals = [s.value for s in mine if s.ok and s.value is not None and s.item_id != CORPUS]
            corpus = [s for s in mine if s.ok and s.item_id == CORPUS]
            if item_vals:
                row.append(fmt2(sum(item_vals) / len(item_vals)))
            elif corpus:
                row.append(fmt2(corpus[0].value) + " (corpus)")
            else:
                row.append(_cell_without_value(mine))
        rows.append(row)
    return Table(["metric", "kind", "scale"] + models, rows, name="metrics")


REPLY_STATUSES = ("truncated", "empty")
"""Response statuses that come from the target's reply itself (METRICS.md D.10), counted apart from errors."""


def injection_suspected(s: Score) -> bool:
    """Whether a score's evidence (or details) flags judge-format tags inside the
    scored text (METRICS.md D.14: ``injection_suspected``)."""
    if s.details.get("injection_suspected") or "injection_suspected" in (getattr(s, "flags", None) or ()):
        return True
    return any(
        isinstance(e, dict) and (e.get("injection_suspected") or e.get("kind") == "injection_suspected")
        for e in s.evidence
    )


@dataclass
class _Tally:
    """What the Failures section counts, from one pass over the responses and one over the scores."""

    rows: list[dict[str, Any]] = field(default_factory=list)  # failed responses and scores (not n/a)
    na: list[dict[str, Any]] = field(default_factory=list)  # not-applicable scores
    flagged: list[dict[str, Any]] = field(default_factory=list)  # scores whose evidence raises a flag
    flag_counts: Counter = field(default_factory=Counter)
    truncated: int = 0
    empty: int = 0
    no_answer: Counter = field(default_factory=Counter)
    injection: int = 0
    errors: int = 0
    error_statuses: Counter = field(default_factory=Counter)  # the statuses counted in ``errors``


def _tally(responses: list[Response], scores: list[Score]) -> _Tally:
    """One pass over ``responses`` and one over ``scores`` for :func:`reply_flags` and :func:`_failures`
    (a 10,000-item run has 30,000 scores, and each pass over the scores of a finished run costs ~10 ms)."""
    t = _Tally()
    for r in responses:
        if r.status == "ok":
            continue
        if r.status == "truncated":
            t.truncated += 1
        elif r.status == "empty":
            t.empty += 1
        else:
            t.errors += 1
            t.error_statuses[r.status] += 1
        t.rows.append(
            {
                "kind": "response",
                "item": r.item_id,
                "model": r.model,
                "metric": "",
                "status": r.status,
                "reason": (r.error or "")[:200],
            }
        )
    for s in scores:
        if s.status == "ok":
            if s.details.get("no_answer"):
                t.no_answer[s.metric] += 1
        else:
            apart = not_applicable(s)
            if not apart and s.status not in REPLY_STATUSES:
                t.errors += 1
                t.error_statuses[s.status] += 1
            row = {
                "kind": "score",
                "item": s.item_id,
                "model": s.model,
                "metric": s.metric,
                "status": s.status,
                "reason": (s.error or "")[:200],
            }
            (t.na if apart else t.rows).append(row)
        if s.evidence:  # flags come from the evidence only
            flags = s.flags
            if flags:
                t.flagged.append({"item": s.item_id, "model": s.model, "metric": s.metric, "flags": ", ".join(flags)})
                t.flag_counts.update(flags)
        if s.details.get("injection_suspected") or (s.evidence and injection_suspected(s)):
            t.injection += 1
    return t


def _apart(t: _Tally) -> dict[str, Any]:
    return {
        "truncated": t.truncated,
        "empty": t.empty,
        "no_answer": sum(t.no_answer.values()),
        "no_answer_by_metric": ", ".join(f"{k} {v}" for k, v in sorted(t.no_answer.items())),
        "injection": t.injection,
        "errors": t.errors,
        "errors_by_status": ", ".join(f"{k} {v}" for k, v in sorted(t.error_statuses.items())),
    }


def reply_flags(responses: list[Response], scores: list[Score]) -> dict[str, Any]:
    """The Failures section's counts, each apart from the others:
    ``truncated`` and ``empty`` target replies (D.10), ``no_answer`` ok scores
    whose reply held no answer (``details["no_answer"]``, scored 0 but not a
    wrong answer; ``no_answer_by_metric`` per metric), ``injection`` scores
    flagged ``injection_suspected`` (D.14), and ``errors``: failed responses
    and failed, applicable scores with any other status (``errors_by_status``: ``"infra_error 2, not_run 4"``)."""
    return _apart(_tally(responses, scores))


def _failures(responses: list[Response], scores: list[Score], limit: int = 30) -> dict[str, Any]:
    """Failed responses and scores (status != ok) for the Failures section;
    not-applicable scores (:func:`not_applicable`) are kept apart in
    ``not_applicable`` ({total, by_metric, rows, more}) and not counted as failures;
    scores whose evidence raises a flag (``injection_suspected``, METRICS.md
    D.14) are counted in ``flags`` ({total, by_flag, rows, more}), whatever their status."""
    t = _tally(responses, scores)
    by_status = Counter(r["status"] for r in t.rows)
    by_metric = Counter(r["metric"] for r in t.na)
    return {
        "flags": {
            "total": len(t.flagged),
            "by_flag": ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in sorted(t.flag_counts.items())),
            "rows": t.flagged[:limit],
            "more": max(0, len(t.flagged) - limit),
        },
        "apart": _apart(t),
        "total": len(t.rows),
        "by_status": ", ".join(f"{k}: {v}" for k, v in sorted(by_status.items())),
        "rows": t.rows[:limit],
        "more": max(0, len(t.rows) - limit),
        "not_applicable": {
            "total": len(t.na),
            "by_metric": ", ".join(f"{k}: {v}" for k, v in sorted(by_metric.items())),
            "rows": t.na[:limit],
            "more": max(0, len(t.na) - limit),
        },
    }


def _pairs_table(pairs: list[dict[str, Any]]) -> Table | None:
    if not pairs:
        return None
    rows = []
    for d in pairs:
        if d["p"] is None:
            rows.append([f"{d['a']} vs {d['b']}", d["n"], "n/a", "n/a", "n/a", "not tested (needs 2 shared items)"])
        else:
            rows.append(
                [
                    f"{d['a']} vs {d['b']}",
                    d["n"],
                    d["mean_diff"],
                    d["ci"],
                    d["p_value"],
                    "significant" if d["significant"] else "not significant",
                ]
            )
    return Table(
        [
            "adjacent ranks (paired permutation test)",
            "shared items",
            "mean difference (upper minus lower)",
            "95% CI of difference",
            "p",
            "at the 5% level",
        ],
        rows,
        name="pairs",
    )


def _pair_limitations(pairs: list[dict[str, Any]], metric: str) -> list[str]:
    """One Limitations line about the adjacent-pair tests (the table beside the
    ranking has the numbers): which adjacent pairs the
    paired test does not separate or cannot test, that overlapping CIs are not
    a test, and that the p-values are not adjusted for multiple comparisons."""
    if not pairs:
        return []
    loose = [f"{d['a']} vs {d['b']}" for d in pairs if d["p"] is not None and not d["significant"]]
    untested = [f"{d['a']} vs {d['b']}" for d in pairs if d["p"] is None]
    parts = []
    if loose:
        parts.append(
            f"the paired test on {metric} does not separate {', '.join(loose)} at the 5% level, so their "
            "order is not evidence of a difference"
        )
    if untested:
        parts.append(f"{', '.join(untested)} share fewer than 2 scored items and are not tested")
    if not parts:
        parts.append(f"the paired test on {metric} separates every adjacent pair at the 5% level")
    tested = sum(d["p"] is not None for d in pairs)
    tail = (
        " 95% CI overlap is not a test (some pairs the test separates have overlapping CIs)."
        if any(d["p"] is not None and d["significant"] and d["overlap"] for d in pairs)
        else ""
    )
    adj = " The p-values are not adjusted for multiple comparisons." if tested > 1 else ""
    return [f"Adjacent ranks (table beside the ranking): {'; '.join(parts)}.{tail}{adj}"]


def sgi_table(rows: list[SgiRow] | None) -> tuple[Table | None, list[str]]:
    """The SGI-Score table and why it is unavailable (METRICS.md A.6).

    Returns ``(table, unavailable)``: ``table`` is the :class:`~.sections.Table` of
    SGI-Score (0-100) and per-task terms per target model (None when ``rows``
    is None: no item is from SGI-Bench); ``unavailable`` has one line per
    group of target models with the same missing terms, e.g. "SGI-Score not
    available for m-a: missing DE (no dry_passall_5 scores), WE (all 2
    wet_final_score scores failed)." (empty when every model has an SGI-Score)."""
    if rows is None:
        return None, []
    why: dict[str, list[str]] = {}
    out = []
    for r in rows:
        out.append([r.model, fmt2(r.sgi_score) if r.sgi_score is not None else "missing tasks", r.per_task])
        if r.sgi_score is None:
            why.setdefault(r.missing, []).append(r.model)
    table = Table(["target model", "SGI-Score (0-100)", "per task (0-100)"], out, name="sgi")
    return table, [
        f"SGI-Score not available for {', '.join(ms)}: missing {reason}; an SGI-Score needs an ok "
        "score on all five SGI-Bench tasks."
        for reason, ms in why.items()
    ]


# ----------------------------------------------------------------------------- rubric criteria
def criterion_scores(score: Score) -> dict[str, float]:
    """Per-criterion values (0-10) of a rubric Score from ``details["criteria"]``.

    Accepted shapes: ``{name: value}``, ``{name: {"score"|"value": v, ...}}``
    or ``[{"criterion"|"name": name, "score"|"value": v, ...}, ...]``.
    Entries without a numeric value (a failed criterion) are left out.

    Args:
        score: a rubric Score.

    Returns:
        criterion -> value (0-10).
    """
    raw = (score.details or {}).get("criteria")
    out: dict[str, float] = {}
    if isinstance(raw, dict):
        pairs = list(raw.items())
    elif isinstance(raw, list):
        pairs = [(e.get("criterion", e.get("name")), e) for e in raw if isinstance(e, dict)]
    else:
        return out
    for name, v in pairs:
        if isinstance(v, dict):
            v = v.get("score", v.get("value"))
        if name is None or isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(float(v)):
            continue
        out[str(name)] = float(v)
    return out


def rubric_breakdown(scores: list[Score], rubric: Any, models: list[str]) -> dict[str, Any] | None:
    """Mean per-criterion score (0-10) per target model for one rubric metric.

    ``rubric``: a spec with ``name``, ``criteria`` (each with ``name``) and
    optional ``weights``.  Returns ``{"rubric", "criteria": [names],
    "weights": [w], "means": {model: [mean or NaN per criterion]},
    "n": {model: [count per criterion]}}`` over the ok item-level scores of
    that metric, or None when no score carries criterion values.

    Args:
        scores: the run's scores.
        rubric: see above.
        models: the target models.

    Returns:
        See above; None when no model has criterion scores.
    """
    names = [c.name for c in rubric.criteria]
    weights = [float((getattr(rubric, "weights", None) or {}).get(n, 1.0)) for n in names]
    means: dict[str, list[float]] = {}
    counts: dict[str, list[int]] = {}
    found = False
    for m in models:
        per: dict[str, list[float]] = defaultdict(list)
        for s in scores:
            if s.model == m and s.metric == rubric.name and s.item_id != CORPUS:
                for c, v in criterion_scores(s).items():
                    per[c].append(v)
        found = found or any(per.values())
        means[m] = [sum(per[n]) / len(per[n]) if per[n] else float("nan") for n in names]
        counts[m] = [len(per[n]) for n in names]
    if not found:
        return None
    return {"rubric": rubric.name, "criteria": names, "weights": weights, "means": means, "n": counts}


def _self_judged(judges: list[str], models: list[str]) -> list[str]:
    return [j for j in judges if any(same_model(j, m) for m in models)]


# ----------------------------------------------------------------------------- built-in sections
RANKING_HEADERS = ["rank", "target model", "mean per item", "95% CI (bootstrap)", "total", "n items", "failed"]
"""The ranking table's columns (the keys of :func:`ranking_rows`' dicts, in order)."""

_RANKING_KEYS = ("rank", "model", "mean", "ci", "total", "n", "failed")


def ranking_rows(
    stats: list[ModelStat], spec: MetricSpec, pairs: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The ranking table's rows as printed, one per model of ``stats`` (ranking order): ``rank`` (``"1"``,
    ``"2="`` for a shared rank, :func:`rank_labels` over :func:`tie_groups` with ``pairs``; ``"unscored"`` for
    a model without a valid score), ``model``, ``mean``, ``ci``, ``total``, ``n`` (items with a valid score
    in the comparison), ``failed`` (failed scores; for an unscored model, why it is unscored)."""
    ranked = [s for s in stats if s.summary is not None]
    labels = rank_labels(tie_groups(ranked, pairs or []))
    rows = []
    for s in stats:
        sm = s.summary
        rows.append(
            {
                "rank": labels[s.model] if sm else "unscored",
                "model": s.model,
                "mean": fmt2(sm.mean) if sm else "n/a",
                "ci": ("corpus-level, no CI" if s.corpus and not has_ci(sm) else ci_text(sm)) if sm else "n/a",
                "total": fmt_total(sm.total, spec) if sm else "n/a",
                "n": sm.n if sm else 0,
                "failed": s.failed
                if sm or not s.reason
                else s.reason
                if s.failed and " failed (" in s.reason and "not applicable" not in s.reason
                else f"{s.failed} ({s.reason})",
            }
        )
    return rows


@report_section("ranking", order=10)
def ranking_section(ctx: ReportContext) -> Section:
    """The ranking of the ranking metric: table, bar chart with CIs, paired tests of adjacent ranks."""
    spec = ctx.spec
    rows = ctx.options.get("ranking_rows") or ranking_rows(ctx.stats, spec, ctx.pairs)
    sec = Section(
        "ranking",
        f"Ranking by {spec.name} (scale {spec.scale_label}, {'higher' if spec.higher_is_better else 'lower'} is better)",
        [Table(RANKING_HEADERS, [[r[k] for k in _RANKING_KEYS] for r in rows], name="ranking")],
    )
    ranked = ctx.ranked
    if ranked:
        sec.blocks.append(
            ctx.figure(
                "figures/ranking.png",
                "ranking",
                ranking_chart,
                [s.model for s in ranked],
                [s.stats.mean for s in ranked],
                [s.stats.ci_low for s in ranked],
                [s.stats.ci_high for s in ranked],
                metric=spec.name,
                scale=spec.scale_label,
            )
        )
    pairs = _pairs_table(ctx.pairs)
    if pairs is not None:
        sec.blocks += [
            Text(
                f"Paired permutation tests of adjacent ranks on {spec.name} (items both target models scored; "
                "two-sided; not adjusted for multiple comparisons):"
            ),
            pairs,
        ]
    return sec


@report_section("coverage", order=12)
def coverage_section(ctx: ReportContext) -> Section | None:
    """When the models' scored item sets of the ranking metric differ (``options["coverage"]``,
    :class:`Coverage`): each model's items and mean on the shared items, on its own items, and with a failed or
    missing score counted as the metric's worst value; None when they agree."""
    cov: Coverage | None = ctx.options.get("coverage")
    if cov is None or not cov.differs:
        return None
    spec = ctx.spec
    n_wrong = next(iter(cov.wrong.values()))[0] if cov.wrong else 0
    headers = [
        "target model",
        "scored items",
        f"mean on the {count_phrase(len(cov.shared))} all scored",
        "mean on its own items",
    ]
    if cov.wrong:
        headers.append(f"mean over {count_phrase(n_wrong)} attempted, failed or missing as {fmt(cov.worst)}")
    rows = []
    for m, (n, mean) in cov.own.items():
        row: list[Any] = [m, n, fmt2(cov.shared_means[m]) if cov.shared_means else "n/a", fmt2(mean)]
        if cov.wrong:
            row.append(fmt2(cov.wrong[m][1]))
        rows.append(row)
    lead = (
        f"The models have valid {spec.name} scores on different items ({cov.selected} selected); the ranking "
        f"compares them on the {count_phrase(len(cov.shared))} all of them scored."
        if cov.shared
        else f"The models have valid {spec.name} scores on different items ({cov.selected} selected) and share "
        "none: the ranking's means are over each model's own items."
    )
    return Section("coverage", f"Coverage: {spec.name}", [Text(lead), Table(headers, rows, name="coverage")])


@report_section("sgi", order=20)
def sgi_section(ctx: ReportContext) -> Section | None:
    """SGI-Score per target model (METRICS.md A.6); None without SGI-Bench items."""
    table, _ = sgi_table(ctx.options.get("sgi"))
    return Section("sgi", "SGI-Score", [table]) if table is not None else None


@report_section("metrics", order=30)
def metrics_section(ctx: ReportContext) -> Section:
    """Every metric of the run's list, mean per item per target model."""
    return Section(
        "metrics",
        "All metrics (mean per item; custom metrics marked *custom*)",
        [_metrics_table(ctx.scores, ctx.specs, ctx.model_order, ctx.custom)],
    )


@report_section("criteria", order=40)
def criteria_sections(ctx: ReportContext) -> list[Section]:
    """One rubric breakdown per rubric metric with criterion scores: table and heatmap (0-10)."""
    out = []
    models = ctx.model_order
    for r in ctx.specs:
        if not getattr(r, "criteria", None):
            continue
        bd = rubric_breakdown(ctx.grouped.get(r.name, []), r, models)
        if bd is None:
            continue
        rows = []
        for j, c in enumerate(bd["criteria"]):
            rows.append(
                [c, fmt(bd["weights"][j])] + [fmt2(bd["means"][m][j]) if bd["n"][m][j] else "n/a" for m in models]
            )
        table = Table(["criterion", "weight"] + [f"{m}: mean (0-10)" for m in models], rows, name="criteria")
        fig = ctx.figure(
            f"figures/criteria_{re.sub(r'[^A-Za-z0-9_.-]+', '_', bd['rubric'])}.png",
            f"{bd['rubric']} per criterion",
            heatmap,
            models,
            bd["criteria"],
            [bd["means"][m] for m in models],
            title=f"{bd['rubric']}: mean score per criterion (0-10)",
        )
        out.append(
            Section(
                f"criteria:{bd['rubric']}",
                f"Rubric breakdown: {bd['rubric']} (mean criterion score per target model, 0-10)",
                [table, fig],
            )
        )
    return out


def _facet_section(ctx: ReportContext, facet: str) -> Section | None:
    spec = ctx.spec
    scored_ids = ctx.options.get("scored_ids")
    if scored_ids is None:
        scored_ids = {s.item_id for s in ctx.scores}
    table = _breakdown(
        ctx.by_id,
        ctx.grouped.get(spec.name, []),
        spec.name,
        ctx.model_order,
        facet,
        math.isinf(spec.range[1]),
        scored_ids,
    )
    return Section(facet, f"By {facet}: {spec.name}", [table]) if table is not None else None


@report_section("discipline", order=50)
def discipline_section(ctx: ReportContext) -> Section | None:
    """The ranking metric by discipline (None when the items share one discipline)."""
    return _facet_section(ctx, "discipline")


@report_section("task", order=60)
def task_section(ctx: ReportContext) -> Section | None:
    """The ranking metric by task (None when the items share one task)."""
    return _facet_section(ctx, "task")


# ----------------------------------------------------------------------------- the whole report
def assemble(
    run_dir: Path,
    *,
    header: dict[str, Any],
    items: list[Item],
    responses: list[Response],
    scores: list[Score],
    specs: list[MetricSpec],
    spec: MetricSpec,
    stats: list[ModelStat],
    pairs: list[dict[str, Any]],
    sgi: list[SgiRow] | None,
    models: list[str],
    custom: set[str] | None = None,
    warnings: list[str] | None = None,
    judges: list[str] | None = None,
    allow_self_judge: bool = False,
    options: dict[str, Any] | None = None,
) -> ReportDraft:
    """Every section of the report but the narrative: the registered sections
    (:func:`~.sections.build_sections`, in their order), the limitations and the failures; draws
    ``figures/ranking.png`` and one ``figures/criteria_<rubric>.png`` heatmap per rubric metric with
    criterion scores under ``run_dir``.

    ``stats``: the ranking of ``spec`` in order (:func:`order_stats`);
    ``pairs``: one :func:`pair_entry` per adjacent pair of the ranked models;
    ``sgi``: SGI-Score rows (None: no SGI-Bench item); ``judges``: judge model
    names (for the self-judging limitation; default none);
    ``allow_self_judge``: whether ``--allow-self-judge`` was set; ``options``: inputs of registered section
    builders (:attr:`~.sections.ReportContext.options`, e.g. ``"usage"``).

    Args:
        run_dir: the run folder.
        header: the run header.
        items: the selected items.
        responses: the target models' responses.
        scores: every score.
        specs: the applied metrics' specs.
        spec: the ranking metric.
        stats: see above.
        pairs: see above.
        sgi: see above.
        models: the target models.
        custom: the custom rubric metrics' names.
        warnings: sentences stated at the report's top.
        judges: see above.
        allow_self_judge: see above.
        options: see above.

    Returns:
        The ReportDraft (sections, data for ``report.json``).
    """
    custom = custom or set()
    ranked = [s for s in stats if s.summary is not None]
    rows = ranking_rows(stats, spec, pairs)
    top = pairs[0] if pairs else None
    comparison = top if top and top["p"] is not None else None
    limitations = [
        f"{count_phrase(len(items))} selected; "
        + (
            "CIs are wide at this sample size."
            if len(items) < 30
            else "CIs are 95% BCa bootstrap intervals over items."
        )
        + (
            " 0/1 metrics get Wilson score intervals (a bootstrap of 8 of 8 correct would say '1 to 1')."
            if any(getattr(s.summary, "method", "") == "wilson" for s in ranked)
            else ""
        )
    ]
    judges = list(judges or [])
    sources = judgement_sources(scores, models)
    if sources:  # who decided acceptance of open-creativity answers, also for replays
        header = {
            **header,
            "judges": judge_summary(sources, judges, any(s.ok and s.judge != "objective" for s in scores)),
        }
        for src in sources:
            what = (
                "the stored judgements of the original run"
                if src.get("origin") == "stored"
                else "this run's open-creativity protocol"
            )
            limitations.append(
                f"Acceptance of the open-creativity answers rests on {what}: coherence scored by "
                f"{src.get('coherence')} and novelty by {src.get('novelty')} embeddings (from "
                f"{src.get('source')}); another judge or embedder may accept different answers."
            )
    limitations += [
        f"Self-preference: {x}." for x in self_preference([s.model for s in ranked], sources, judges, allow_self_judge)
    ]
    if sources and not judges:
        pass  # the acceptance line above says who judged; no live judge was called
    elif judges:
        limitations.append(
            f"Judge: {', '.join(judges)}. Judge and rubric scores are {'this one model' if len(judges) == 1 else 'these models'}'s "
            "judgement: another judge may score differently, and a judge may favour models of its own family."
        )
    else:
        limitations.append(
            f"Judge: {header.get('judges', 'none')}. Judge metrics without a judge are reported as not run."
        )
    selfj = _self_judged(judges, models)
    if selfj and allow_self_judge:
        limitations.append(f"--allow-self-judge was set: {', '.join(selfj)} scored its own responses.")
    elif selfj:
        limitations.append(
            f"{', '.join(selfj)} is both judge and target: it did not score its own responses "
            "(those judge metrics are not run; pass --allow-self-judge to allow it)."
        )
    scored_metrics = {s.metric for s in scores}
    limitations += [f"{sp.name}: {sp.aggregation}" for sp in specs if sp.aggregation and sp.name in scored_metrics]
    limitations += _pair_limitations(pairs, spec.name)
    _, sgi_missing = sgi_table(sgi)
    limitations += sgi_missing
    ctx = ReportContext(
        run_dir=run_dir,
        header=header,
        items=items,
        responses=responses,
        scores=scores,
        specs=specs,
        spec=spec,
        stats=stats,
        pairs=pairs,
        models=models,
        custom=custom,
        judges=judges,
        options={"ranking_rows": rows, "sgi": sgi, "scored_ids": {s.item_id for s in scores}, **(options or {})},
    )
    sections = build_sections(ctx)
    limitations += ctx.notes
    tables_text = "\n".join(
        [s.text() for s in sections]
        + (
            [f"n = {comparison['n']}, mean difference {comparison['mean_diff']}, p = {comparison['p_value']}"]
            if comparison
            else []
        )
    )
    chart = next(
        (f.path for s in sections if s.key == "ranking" for f in s.figures if f.path == "figures/ranking.png"), None
    )
    data = {
        "header": header,
        "ranking": {
            "metric": spec.name,
            "scale": spec.scale_label,
            "higher_is_better": spec.higher_is_better,
            "rows": rows,
            "chart": chart,
        },
        "comparison": comparison,
        "sections": [s.to_dict() for s in sections],
        "limitations": limitations,
        "failures": {**_failures(responses, scores), "flagged": flag_rows(scores, models)},
        "warnings": warnings or [],
        # for the HTML viewer (report.json; the Markdown template does not use them)
        "metric_specs": [
            {"name": sp.name, "scale": sp.scale_label, "hib": sp.higher_is_better, "kind": sp.kind} for sp in specs
        ],
    }
    return ReportDraft(
        data=data,
        stats=stats,
        spec=spec,
        top=top,
        tables_text=tables_text,
        sgi_missing=sgi_missing,
        sections=sections,
    )


def write_report_files(run_dir: Path, draft: ReportDraft, narrative: str) -> Path:
    """Render ``draft`` with ``narrative`` (the Answer section) to ``run_dir/report.md`` and ``report.json``; returns
    the path of ``report.md``.

    The same data goes to ``run_dir/report.json`` for the HTML viewer
    (:mod:`.viewer`), with ``ranking["values"]``: the numbers behind the ranking
    rows ({model, mean, ci_low, ci_high, total, n} per ranked model; NaN as null).

    Both files are written whole or not at all (:func:`~sgieval.core.atomic_write_text`:
    a full disk raises InputError naming the disk and leaves the old report), with
    keys inside URLs masked (:func:`~sgieval.core.redact_secrets`).  While they are
    written, ``run_dir/.report-pending`` (:data:`~sgieval.core.REPORT_PENDING`) marks
    the run as incomplete for ``sgieval runs``; it is removed once both are in place
    and stays when a write fails.

    Args:
        run_dir: the run folder.
        draft: the assembled report (:func:`assemble`).
        narrative: the Answer section's text.

    Returns:
        The path of ``report.md``.

    Raises:
        InputError: a full disk (the old report stays).
    """
    out = run_dir / "report.md"
    pending = run_dir / REPORT_PENDING
    open_append_in(run_dir, pending).close()  # touched; no link followed in the run folder
    data = {**draft.data, "narrative": narrative}
    # terminal escapes from a server or a program (an error reason, a reply) are shown as \xNN, never written raw
    atomic_write_text(out, escape_control_chars(redact_secrets(render_report(data))), root=run_dir)
    values = [
        {
            "model": s.model,
            "mean": s.summary.mean,
            "ci_low": s.summary.ci_low,
            "ci_high": s.summary.ci_high,
            "total": s.summary.total,
            "n": s.summary.n,
        }
        for s in draft.stats
        if s.summary is not None
    ]
    write_report_json(run_dir / "report.json", {**data, "ranking": {**data["ranking"], "values": values}}, root=run_dir)
    pending.unlink(missing_ok=True)
    return out
