"""When the top two are not separated, the Answer says about how many more items of the same kind the paired test
would need (5% level two-sided, 80% power, normal approximation) and what they would cost; checked against a
hand calculation on the real stored SciAidanBench answers (o1-mini against openai/4o on chemistry)."""

from __future__ import annotations

import json
import math
import re

import pytest
from typer.testing import CliRunner

from sgieval.reports.answer.more_items import price_per_item
from sgieval.cli import app
from sgieval.metric_pool.stats import items_to_separate

Z = 1.959963984540054 + 0.8416212335729143  # z_0.975 + z_0.80


def test_o1_mini_against_4o_on_chemistry_matches_a_hand_calculation(tmp_path):
    res = CliRunner().invoke(
        app, ["ask", "Is o1-mini more creative than GPT-4o in chemistry?", "--yes", "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    values: dict[str, dict[str, float]] = {"replay:o1-mini": {}, "replay:openai/4o": {}}
    for line in (run / "scores.jsonl").read_text().splitlines():
        s = json.loads(line)
        if s["metric"] == "aidan_accepted_answers" and s["status"] == "ok" and s["item_id"] != "*":
            values[s["model"]][s["item_id"]] = s["value"]
    shared = sorted(set(values["replay:o1-mini"]) & set(values["replay:openai/4o"]))
    diffs = [values["replay:o1-mini"][k] - values["replay:openai/4o"][k] for k in shared]
    n = len(diffs)
    mean = sum(diffs) / n
    sd = (sum((d - mean) ** 2 for d in diffs) / (n - 1)) ** 0.5
    total = math.ceil((Z * sd / mean) ** 2)
    assert (n, round(mean, 2), round(sd, 1), total) == (25, 0.88, 13.8, 1931)
    answer = (run / "report.md").read_text().split("## Answer", 1)[1].split("\n## ", 1)[0]
    assert "p = 0.7765: no significant difference at the 5% level" in answer
    line = next(ln for ln in answer.splitlines() if ln.startswith("- **More items:** "))
    assert line == (
        f"- **More items:** About {total - n:,} more items of the same kind ({total:,} in all) would give the "
        "paired test 80% power to separate replay:o1-mini from replay:openai/4o at the 5% level, two-sided "
        "(normal-approximation power of the paired test, n = ((z_0.975 + z_0.80) x SD / mean)^2; paired "
        f"differences replay:o1-mini minus replay:openai/4o: mean {mean:.4g}, SD {sd:.4g} over 25 items); their "
        "cost is not known: this run made no priced call (its answers were replayed), and new items need new answers. "
        "The catalog holds no more items of this kind: this run used all 25 that match its selection."
    )


def test_the_more_items_line_says_how_many_the_catalog_still_holds(tmp_path):
    """5 of the 25 chemistry questions: the 20 others are named, and said to be fewer than the count needed."""
    res = CliRunner().invoke(app, ["ask", "creative in chemistry", "--k", "5", "--yes", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    answer = (run / "report.md").read_text().split("## Answer", 1)[1].split("\n## ", 1)[0]
    line = next(ln for ln in answer.splitlines() if ln.startswith("- **More items:** "))
    more = re.match(r"- \*\*More items:\*\* About ([\d,]+) more items of the same kind", line)
    assert more is not None, line
    # 5 items, one difference 0: the sign-flip test cannot reach p < 0.05 (2/2^4 = 0.125), and the line says so
    assert (
        ". With 5 items the paired permutation test cannot reach p < 0.05 at all: its smallest attainable p is "
        "2/2^4 = 0.1250 (every difference of one sign; 1 difference of 0 changes nothing when flipped), and it "
        "needs at least 6 items whose difference is not 0 (smallest p 2/2^6 = 0.0312). The catalog holds"
    ) in line, line
    assert line.endswith(
        f" The catalog holds 20 more items of this kind (not used in this run), fewer than the {more.group(1)} needed."
    ), line


def test_items_to_separate_by_hand():
    diffs = [1.0, -2.0, 3.0, 0.5, 2.5]  # mean 1.0; squared deviations 0 + 9 + 4 + 0.25 + 2.25 = 15.5
    r = items_to_separate(diffs)
    sd = math.sqrt(15.5 / 4)  # 1.9685
    assert (r.mean_diff, r.sd_diff) == (pytest.approx(1.0), pytest.approx(sd))
    assert r.n_total == math.ceil((Z * sd / 1.0) ** 2) == 31 and r.more == 26  # (2.8016 x 1.9685)^2 = 30.41
    zero = items_to_separate([1.0, -1.0, 2.0, -2.0])
    assert (zero.n_total, zero.more, zero.reason) == (None, None, "the mean paired difference is 0")
    same = items_to_separate([0.5, 0.5, 0.5])
    assert (same.n_total, same.reason) == (None, "every paired difference is the same")
    with pytest.raises(ValueError):
        items_to_separate([])


def test_price_per_item_comes_from_the_estimate_then_the_ledger():
    est = {"items": 50, "rows": [{"usd": 0.2, "calls": 100}, {"usd": 0.3, "calls": 200}]}
    assert price_per_item({"estimate": est}, 50)[0] == pytest.approx(0.01)
    unpriced = {"items": 50, "rows": [{"usd": 0.2, "calls": 100}, {"usd": None, "calls": 200}]}
    ledger = {"estimate": unpriced, "total": {"cost": 1.0, "calls": 300, "unpriced_calls": 0}}
    assert price_per_item(ledger, 40)[0] == pytest.approx(0.025)
    assert price_per_item({"total": {"cost": 0.0, "calls": 0}}, 40)[0] is None
