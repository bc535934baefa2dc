"""``--until-settled``: the "Stopped when settled" section (``agents.settle.evaluate_until_settled``'s stop record)."""

from __future__ import annotations

import math
from typing import Any

from ..blocks import Section, Table, Text
from ..context import ReportContext
from . import section


def _num(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:.3g}"


@section("settled", title="Stopped when settled", after="ranking")
def settle_section(ctx: ReportContext) -> Section | None:
    """Items used, calls saved, each comparison's anytime-valid interval; None without a stop record."""
    rec = ctx.settled
    if not rec:
        return None
    used, n = rec["items_used"], rec["items_total"]
    level = rec["alpha"] / max(1, len(rec["comparisons"]))
    leader, metric = rec["leader"], rec["metric"]
    if rec["settled"]:
        head = (
            f"The run stopped after {used} of the {n} selected items (drawn in a random order seeded by the run's "
            f"seed, {rec['chunk']} at a time): on {metric}, {leader} is ahead of every other target model by an "
            f"anytime-valid {1 - rec['alpha']:.0%} confidence sequence, so with probability at least "
            f"{1 - rec['alpha']:.0%} it is the best of them on all {n} items."
        )
    else:
        head = (
            f"The ranking on {metric} did not settle: after {used} of the {n} items no model was ahead of every "
            "other by the anytime-valid confidence sequence"
            + (", and every item was evaluated." if used == n else " before the run stopped.")
        )
    saved = (
        f" Not evaluated: {rec['units_saved']} (target, item) pairs; at the {rec['calls']} target and judge calls "
        f"the {used} items made, about {rec['calls_saved']} model calls were saved."
        if used < n
        else ""
    )
    method = (
        "Each interval is the hedged-capital betting confidence sequence of Waudby-Smith & Ramdas (2023) for the "
        f"mean paired difference over the selection (sampling without replacement), at level {level:.3g} per "
        f"comparison (Bonferroni over the {len(rec['comparisons'])} comparisons of the leader); it holds at "
        "every item at once, so stopping when it excludes 0 keeps it valid."
    )
    rows = [
        [
            f"{leader} vs {c['model']}",
            c["n"],
            _num(c["mean"]),
            f"{_num(c['low'])} to {_num(c['high'])}",
            "yes" if c["low"] > 0 else "no",
            c["left_out"],
        ]
        for c in rec["comparisons"]
    ]
    table = Table(
        ["comparison", "items", "mean difference (leader's favour)", "valid interval", "above 0", "left out"],
        rows,
        name="settled",
    )
    blocks: list[Any] = [Text(head + saved), table, Text(method)]
    if any(c["left_out"] for c in rec["comparisons"]):
        blocks.append(
            Text(
                "Items where either model of a comparison has no valid score are left out of it; the guarantee "
                "then assumes those failures are unrelated to which model is better."
            )
        )
    answer = {"how_sure": [head]} if rec["settled"] else {"caveats": [head]}
    return Section("settled", "Stopped when settled", blocks, answer=answer)
