"""Added judges (``sgieval ask ... --into RUN --judge J``): per judged metric and target model, each judge's mean
side by side, and what an added judge could not score.  The added judges' scores sit beside the run's own and never
replace them: the ranking, the Answer's verdict and the other tables keep the run's judges."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...core import CORPUS, MetricSpec, Score
from ..blocks import Section, Table, Text
from ..context import ReportContext
from . import section


def _mean_cell(scores: list[Score]) -> str:
    vals = [float(s.value) for s in scores if s.ok and s.value is not None]
    return f"{sum(vals) / len(vals):.2f} ({len(vals)})" if vals else "n/a (0)"


def _mean_rows(
    scores: list[Score], added: list[Score], specs: list[MetricSpec], models: list[str], judges: list[str], primary: str
) -> list[list[Any]]:
    """One row per judged metric and target model with a score: each judge's ``mean (n)``."""
    rows = []
    for sp in [sp for sp in specs if sp.kind in ("judge", "rubric")]:
        for m in models:
            base = [s for s in scores if s.metric == sp.name and s.model == m and s.item_id != CORPUS]
            extra = [
                [s for s in added if s.metric == sp.name and s.model == m and s.judge == j and s.item_id != CORPUS]
                for j in judges
            ]
            if not base and not any(extra):
                continue
            scale = f"{sp.range[0]:g}-{sp.range[1]:g}"
            name = sp.name + (" (ranking)" if sp.name == primary else "")
            rows.append([name, scale, m, _mean_cell(base), *(_mean_cell(e) for e in extra)])
    return rows


@section("added_judges", title="Added judges", after="usage")
def added_judges_builder(ctx: ReportContext) -> Section | None:
    """The "Added judges" section: each judge's mean per judged metric and target model, and what an added judge
    could not score; None when no judge was added to the finished run."""
    scores, added, specs, models, primary = ctx.scores, ctx.added_scores, ctx.specs, ctx.models, ctx.spec.name
    run_judges, added_judges = list(ctx.judges), list(ctx.added_judges)
    if not added_judges:
        return None
    own = ", ".join(run_judges) or "none"
    were = "was" if len(added_judges) == 1 else "were"
    keep = (
        f"The ranking by {primary}, the Answer's verdict and the other tables keep the run's own "
        f"judge{'' if len(run_judges) == 1 else 's'} ({own}); the added judges' scores are kept beside them "
        "(added_judge_scores.jsonl) and replace none of them. Judge reliability compares the judges item by item."
        if run_judges
        else "The run had no judge of its own: its judge metrics stay not run in the ranking and the other tables; "
        "the added judges' scores are kept apart (added_judge_scores.jsonl)."
    )
    blocks: list[Any] = [
        Text(
            f"{', '.join(added_judges)} {were} added to this finished run by `sgieval ask --into` and scored its "
            f"judge and rubric metrics on the stored responses; no target model was called again. {keep} To rank "
            "by an added judge, start a new run with it as --judge."
        )
    ]
    own_col = f"{own} (run's judge) mean (n)" if run_judges else "run's judge: none"
    headers = ["metric", "scale", "target model", own_col, *(f"{j} mean (n)" for j in added_judges)]
    rows = _mean_rows(scores, added, specs, models, added_judges, primary)
    if rows:
        blocks.append(Table(headers, rows, name="added_judges"))
    for j in added_judges:
        failed = [s for s in added if s.judge == j and not s.ok]
        if not failed:
            continue
        by_status = Counter(s.status for s in failed)
        reason = next((s.error for s in failed if s.error), "")
        counts = ", ".join(f"{n} {st}" for st, n in sorted(by_status.items()))
        blocks.append(
            Text(
                f"{j} made no value for {len(failed)} score(s) ({counts})"
                + (f"; e.g. {reason}" if reason else "")
                + "."
            )
        )
    who = ", ".join(added_judges)
    caveat = (
        f"{who} {were} added after the run finished (ask --into) and scored beside the run's judge"
        f"{'' if len(run_judges) == 1 else 's'} ({own}); the ranking uses {own}'s scores (see Added judges)."
        if run_judges
        else f"{who} {were} added after the run finished (ask --into); the run had no judge of its own, so its "
        "judge metrics stay not run in the ranking and the tables (see Added judges for the added judges' scores)."
    )
    return Section("added_judges", "Added judges", blocks, answer={"caveats": [caveat]})
