"""Judge reliability: per judged metric, the judges' agreement (Krippendorff's alpha), each judge's offset from
the panel, the ranking without each judge, self-preference, position bias and test-retest agreement."""

from __future__ import annotations

from typing import Any

from ..blocks import Heading, Section, Table, Text
from ..context import ReportContext
from . import section


@section("reliability", title="Judge reliability", after="added_judges")
def reliability_builder(ctx: ReportContext) -> Section | None:
    """The "Judge reliability" section (None when no judged metric has reliability rows)."""
    rows = ctx.reliability
    if not rows:
        return None
    blocks: list[Any] = [
        Text(
            "Krippendorff's alpha (interval level for 0-10 and 0-100 scores, nominal for 0/1 labels) with a "
            "bootstrap 95% CI over units (item x target model); thresholds of Krippendorff (2004): >= 0.800 "
            "reliable, 0.667 to 0.800 tentative only, below 0.667 not reliable."
        )
    ]
    retest_caption = (
        "Test-retest (Krippendorff's alpha between a judge's repeated verdicts on the same items, each repeat a "
        "coder, a failed repeat a missing value):"
    )
    retest_headers = ["judge", "repeats", "units", "alpha", "95% CI"]
    for r in rows:
        blocks += [Heading(r["metric"]), Text(r["verdict"])]
        if r.get("n_judges", 2) < 2:  # one judge: only its test-retest agreement and position bias apply
            if r["retest"]:
                blocks += [Text(retest_caption), Table(retest_headers, r["retest"], name="retest")]
            if r["position"]:
                blocks.append(Text(f"Position bias: {r['position']}."))
            continue
        blocks.append(
            Table(["metric", "level", "judges", "units", "alpha", "95% CI"], r["agreement"], name="agreement")
        )
        if r["offsets"]:
            blocks += [
                Text("Each judge's mean offset from the panel mean (metric's scale):"),
                Table(["judge", "mean offset", "95% CI", "units"], r["offsets"], name="offsets"),
            ]
        if r["leave_one_out"]:
            blocks += [
                Text("Leave one judge out (ranking by the remaining judges):"),
                Table(
                    ["judge left out", "order (best first)", "top model changes", "order changes"],
                    r["leave_one_out"],
                    name="leave_one_out",
                ),
            ]
        if r["self_preference"]:
            blocks += [
                Text(
                    "Self-preference (a judge scoring its own model's responses, minus the other "
                    "judges' mean on the same items):"
                ),
                Table(
                    ["judge", "target", "model", "difference", "95% CI", "items", "significant"],
                    r["self_preference"],
                    name="self_preference",
                ),
            ]
        else:
            blocks.append(Text("Self-preference: no judge is one of the ranked target models."))
        if r["position"]:
            blocks.append(Text(f"Position bias: {r['position']}."))
        if r["retest"]:
            blocks += [Text(retest_caption), Table(retest_headers, r["retest"], name="retest")]
    return Section("reliability", "Judge reliability", blocks)
