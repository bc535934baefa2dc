"""A comparison of runs (``sgieval compare``): its data model, its Markdown report and its viewer page; the statistics
are made in ``agents.compare``.  Stable names of the page (``compare.html.j2``): ``#compare-runs``
(``tr.compare-run``, ``data-run-id``, ``a.run-viewer-link``), ``#compare-answer``, ``#compare-changes``
(``tr.change-row`` with ``data-model``, ``data-metric``, ``data-real`` = ``yes`` | ``no`` | ``untested``),
``#compare-ranking`` (``tr.ranking-row``, ``data-entry``), ``#compare-pairs`` (``tr.pair-row``), ``#compare-other``,
``#compare-not-shared`` (``li.not-shared``, ``data-kind``), ``#compare-config`` (``tr.config-row``,
``data-field``), ``#compare-limits``."""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core import write_text_in
from .blocks import markdown_table
from .format import count_phrase, fmt2, fmt_p
from .render import jsonable, render_html

SIGNIFICANCE = 0.05
"""A change (or an adjacent pair) is real when its two-sided paired test gives p below this."""


@dataclass
class RunSide:
    """One compared run: ``started`` ISO UTC ("" unknown), ``primary`` its ranking metric, ``added`` / ``added_judges``
    what ``ask --into`` added (``reports.runs.additions_text``)."""

    run_id: str
    path: str
    request: str
    models: list[str]
    judges: list[str]
    primary: str
    n_items: int
    started: str = ""
    added: str = ""
    added_judges: str = ""


@dataclass
class Change:
    """One model's change between two runs on one metric, on the items both runs share and both scored.

    ``mean_diff`` = mean(b - a) on the metric's scale with its 95% paired bootstrap CI (NaN when n < 2); ``p`` the
    two-sided paired permutation test (None: fewer than 2 paired items); ``identical``: the same value on every item."""

    model: str
    metric: str
    run_a: str
    run_b: str
    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    ci_low: float
    ci_high: float
    p: float | None
    identical: bool
    method: str = "permutation"
    ci_note: str = ""

    @property
    def real(self) -> bool | None:
        """Whether the paired test separates the two runs (p < 0.05); None without a test."""
        return None if self.p is None else self.p < SIGNIFICANCE

    @property
    def verdict(self) -> str:
        """``real change``, ``no real change``, ``no change`` (identical values) or ``untested``."""
        if self.identical and self.n:
            return "no change"
        return "untested" if self.real is None else "real change" if self.real else "no real change"

    def ci_text(self) -> str:
        """The CI cell: ``lo to hi``, ``no variation`` or ``n/a``.

        Returns:
            The cell text.
        """
        if self.n < 2 or math.isnan(self.ci_low) or math.isnan(self.ci_high):
            return "n/a"
        if self.ci_low == self.ci_high:
            return f"no variation over {count_phrase(self.n)}"
        return f"{fmt2(self.ci_low)} to {fmt2(self.ci_high)}"

    def sentence(self) -> str:
        """The claim this change supports, as one sentence.

        Returns:
            The sentence.
        """
        head = f"{self.model} on {self.metric}, {self.run_a} -> {self.run_b}"
        if not self.n:
            return f"{head}: no item scored in both runs, so nothing is compared."
        if self.identical:
            return f"{head}: the same value on all {count_phrase(self.n, 'shared item')} (mean {fmt2(self.mean_a)}): no change."
        what = (
            f"{head}: mean {fmt2(self.mean_a)} -> {fmt2(self.mean_b)} on {count_phrase(self.n, 'shared item')} "
            f"(difference {fmt2(self.mean_diff)}"
        )
        if self.p is None:
            return f"{what}); with fewer than 2 paired items there is no test, so this is no evidence of a change."
        what += f", 95% CI {self.ci_text()}); paired {self.method} test p = {fmt_p(self.p)}: "
        if self.real:
            return what + "a real change at the 5% level."
        return what + "not a real change at the 5% level (the test does not separate the two runs)."

    def row(self) -> list[Any]:
        """The change as a row of the changes table.

        Returns:
            The cells, in :data:`CHANGE_HEADERS` order.
        """
        return [
            self.model,
            self.metric,
            f"{self.run_a} -> {self.run_b}",
            self.n,
            fmt2(self.mean_a),
            fmt2(self.mean_b),
            fmt2(self.mean_diff),
            self.ci_text(),
            fmt_p(self.p),
            self.verdict,
        ]


CHANGE_HEADERS = (
    "target model|metric|runs|paired items|mean (first)|mean (second)|difference (second minus first)|"
    "95% CI of difference|p (paired permutation)|at the 5% level"
).split("|")


@dataclass
class RankRow:
    """One entry of the joint ranking on the shared items: ``entry`` is ``model [run]`` when its values differ between
    runs; ``rank`` and ``ci`` as the report prints them."""

    entry: str
    model: str
    runs: list[str]
    rank: str
    mean: float | None
    ci: str
    n: int
    total: float | None = None


@dataclass
class Comparison:
    """What ``sgieval compare`` found; every list is JSON-ready.

    ``*_only``: run id -> what only it has; ``items_changed``: shared ids whose prompt differs (left out); ``changes``
    on the ranking metric, ``other_changes`` on the other shared metrics; ``ranking`` on the shared items with
    ``pairs`` the paired tests of adjacent entries; ``config_diff``: (setting, value per run) that differ."""

    runs: list[RunSide]
    metric: str
    scale: str
    higher_is_better: bool
    shared_items: list[str]
    items_only: dict[str, list[str]]
    items_changed: list[str]
    models_shared: list[str]
    models_only: dict[str, list[str]]
    metrics_shared: list[str]
    metrics_only: dict[str, list[str]]
    changes: list[Change]
    other_changes: list[Change]
    ranking: list[RankRow]
    pairs: list[dict[str, Any]]
    config_diff: list[tuple[str, list[str]]]
    metrics_corpus: list[str] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    n_resamples: int = 10000
    seed: int = 0

    @property
    def run_ids(self) -> list[str]:
        """The compared runs' labels, in order."""
        return [r.run_id for r in self.runs]

    def write(self, folder: str | Path) -> dict[str, Path]:
        """Write ``compare.md``, ``compare.json`` and ``index.html`` in ``folder`` (no link followed).

        Args:
            folder: the destination folder.

        Returns:
            The written paths by kind (``"markdown"``, ``"json"``, ``"page"``).
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        md = write_text_in(folder, folder / "compare.md", self.to_markdown())
        js = write_text_in(
            folder, folder / "compare.json", json.dumps(jsonable(self.to_dict()), indent=2, ensure_ascii=False)
        )
        viewers = {}
        for r in self.runs:
            page = Path(r.path) / "viewer" / "index.html"
            if page.is_file() and not page.is_symlink():
                viewers[r.run_id] = Path(os.path.relpath(page, folder)).as_posix()
        html = render_html(
            "compare.html.j2",
            c=self,
            viewers=viewers,
            change_headers=CHANGE_HEADERS,
            pair_headers=PAIR_HEADERS,
            pair_rows=[(p, _pair_row(p)) for p in self.pairs],
            fmt2=fmt2,
        )
        page = write_text_in(folder, folder / "index.html", html)
        return {"markdown": md, "json": js, "page": page}

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form of the comparison (what ``compare.json`` holds).

        Returns:
            Every field; each change with its ``real`` and ``verdict``.
        """
        d = asdict(self)
        for key in ("changes", "other_changes"):
            d[key] = [{**asdict(c), "real": c.real, "verdict": c.verdict} for c in getattr(self, key)]
        d["config_diff"] = [{"setting": k, "values": v} for k, v in self.config_diff]
        return d

    def to_pandas(self, table: str = "changes") -> Any:
        """One table of the comparison as a ``pandas.DataFrame``.

        Args:
            table: ``"changes"`` (default, every shared metric), ``"ranking"`` or ``"pairs"``.

        Returns:
            The table, one row per change, ranked model or adjacent pair.

        Raises:
            ValueError: for another ``table``.
        """
        import pandas as pd  # loaded for this table only

        if table == "changes":
            rows = [{**asdict(c), "real": c.real, "verdict": c.verdict} for c in [*self.changes, *self.other_changes]]
            return pd.DataFrame(rows, columns=[*Change.__dataclass_fields__, "real", "verdict"])
        if table == "ranking":
            return pd.DataFrame([asdict(r) for r in self.ranking], columns=list(RankRow.__dataclass_fields__))
        if table == "pairs":
            return pd.DataFrame(self.pairs)
        raise ValueError(f"unknown table {table!r}: use 'changes', 'ranking' or 'pairs'")

    def to_markdown(self) -> str:
        """The comparison report in Markdown.

        Returns:
            The text ``compare.md`` holds.
        """
        ids = self.run_ids
        out = [f"# Comparison of runs {', '.join(ids)}", ""]
        out.append(
            markdown_table(
                ["run", "started (UTC)", "request", "target models", "judge", "ranking metric", "items"],
                [
                    [
                        r.run_id,
                        r.started.replace("T", " ")[:16] or "unknown",
                        r.request or "(the whole catalog)",
                        (", ".join(r.models) or "none") + (f" ({r.added})" if r.added else ""),
                        (", ".join(r.judges) or "none") + (f" (+ {r.added_judges})" if r.added_judges else ""),
                        r.primary or "none",
                        r.n_items,
                    ]
                    for r in self.runs
                ],
            )
        )
        out += ["", "## Answer", "", *(f"- {s}" for s in self.answer)]
        direction = "higher is better" if self.higher_is_better else "lower is better"
        out += [
            "",
            f"## The same model across runs: {self.metric} (scale {self.scale}, {direction})",
            "",
            f"Paired on the items both runs share and both scored; difference = second run minus first; 95% CI "
            f"paired bootstrap; p two-sided, paired permutation test ({self.n_resamples} resamples, seed "
            f"{self.seed}); a change is real when p < 0.05.",
            "",
        ]
        out.append(
            markdown_table(CHANGE_HEADERS, [c.row() for c in self.changes])
            if self.changes
            else "No target model is in two of these runs: there is no same-model comparison."
        )
        out += ["", f"## Ranked together on the {count_phrase(len(self.shared_items), 'shared item')}", ""]
        if self.ranking:
            out.append(
                markdown_table(
                    ["rank", "target model", "values from", "mean per item", "95% CI", "n items"],
                    [[r.rank, r.entry, ", ".join(r.runs), fmt2(r.mean), r.ci, r.n] for r in self.ranking],
                )
            )
            if self.pairs:
                out += ["", "Paired permutation tests of adjacent ranks (items both scored; two-sided):", ""]
                out.append(markdown_table(PAIR_HEADERS, [_pair_row(p) for p in self.pairs]))
        else:
            out.append("Fewer than two models to rank on the shared items.")
        if self.other_changes:
            out += ["", "## The same model across runs: the other shared metrics", ""]
            out.append(markdown_table(CHANGE_HEADERS, [c.row() for c in self.other_changes]))
        out += ["", "## Not shared", "", *(f"- {s}" for _, s in self.not_shared())]
        out += ["", "## What differs between the runs' settings", ""]
        if self.config_diff:
            out.append(markdown_table(["setting", *ids], [[k, *v] for k, v in self.config_diff]))
        else:
            out.append("Their config.json settings are the same apart from the target models.")
        out += ["", "## What this comparison does not settle", "", *(f"- {s}" for s in self.limits)]
        if self.notes:
            out += ["", "## How it was made", "", *(f"- {s}" for s in self.notes)]
        return "\n".join(out) + "\n"

    def not_shared(self) -> list[tuple[str, str]]:
        """What the compared runs do not share.

        Returns:
            ``(kind, sentence)`` pairs for items, models and metrics, in that order.
        """

        def named(xs: list[str]) -> str:
            return ", ".join(xs[:10]) + (f" and {len(xs) - 10} more" if len(xs) > 10 else "")

        only_items = {r: v for r, v in self.items_only.items() if v}
        if only_items or self.items_changed:
            parts = [f"{count_phrase(len(v))} only in {r} ({named(v)})" for r, v in only_items.items()]
            if self.items_changed:
                parts.append(
                    f"{count_phrase(len(self.items_changed))} with the same id but a different prompt, left out "
                    f"({named(self.items_changed)})"
                )
            items = f"Items: {count_phrase(len(self.shared_items))} shared; " + "; ".join(parts) + "."
        else:
            items = f"Items: all {count_phrase(len(self.shared_items))} are shared by every run."
        only_models = {r: v for r, v in self.models_only.items() if v}
        if only_models:
            models = "Models: " + "; ".join(f"{named(v)} only in {r}" for r, v in only_models.items())
            models += f"; in several runs: {named(self.models_shared) or 'none'}."
        else:
            models = f"Models: every model is in several runs ({named(self.models_shared)})."
        only_metrics = {r: v for r, v in self.metrics_only.items() if v}
        if only_metrics:
            metrics = (
                f"Metrics: {count_phrase(len(self.metrics_shared), 'item-level metric')} shared; "
                + "; ".join(f"only {r} has {named(v)}" for r, v in only_metrics.items())
                + "."
            )
        else:
            metrics = f"Metrics: every run has the same {count_phrase(len(self.metrics_shared), 'item-level metric')}."
        if self.metrics_corpus:
            metrics += (
                f" {count_phrase(len(self.metrics_corpus), 'corpus-level metric')} (one value per model and run, "
                f"no items to pair) {'is' if len(self.metrics_corpus) == 1 else 'are'} not compared: "
                f"{named(self.metrics_corpus)}."
            )
        return [("items", items), ("models", models), ("metrics", metrics)]


PAIR_HEADERS = (
    "adjacent ranks|shared items|mean difference (upper minus lower)|95% CI of difference|p|at the 5% level".split("|")
)


def _pair_row(p: dict[str, Any]) -> list[Any]:
    """A row of the adjacent-pairs table from a ``ranking.pair_entry`` dict."""
    tested = p.get("p") is not None
    return [
        f"{p['a']} vs {p['b']}",
        p["n"],
        p.get("mean_diff", "n/a") if tested else "n/a",
        p.get("ci", "n/a") if tested else "n/a",
        p.get("p_value", "n/a") if tested else "not tested (fewer than 2 shared items)",
        ("separated" if p.get("significant") else "not separated") if tested else "not tested",
    ]
