"""`sgieval compare` / `sgieval.compare`: two runs of the chemistry questions of the stored SciAidanBench answers, the
expected paired differences and permutation p-values computed here by plain arithmetic from the score records; and
hand-made runs whose exact permutation p-values are enumerated here."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sgieval
from sgieval.agents.compare import RunInput, compare_runs
from sgieval.cli import app
from sgieval.core import InputError, Item, RunConfig, Score
from sgieval.tests.conftest import routed

runner = CliRunner()
CHEM = "Which model is the most creative in chemistry?"
METRIC = "aidan_accepted_answers"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path, Path]:
    """Runs ``first`` and ``second`` of o1-mini and phi4 on the chemistry questions; 4o added to ``second`` with --into."""
    out = tmp_path_factory.mktemp("runs")
    for run_id in ("first", "second"):
        sgieval.evaluate(CHEM, models="replay:o1-mini,replay:phi4", out_dir=out, run_id=run_id)
    res = runner.invoke(app, ["ask", "--models", "replay:openai/4o", "--into", "second", "--out", str(out), "--yes"])
    assert res.exit_code == 0, res.output
    b = out / "second"
    # --into made no response or score for what the run already had: those are the first invocation's
    ask, into = (json.loads(x)["id"] for x in (b / "invocations.jsonl").read_text().splitlines())
    made = Counter(
        (json.loads(x)["model"], json.loads(x)["invocation"]) for x in (b / "scores.jsonl").read_text().splitlines()
    )
    assert made == {("replay:o1-mini", ask): 154, ("replay:phi4:latest", ask): 154, ("replay:openai/4o", into): 154}
    return out, out / "first", b


def _values(run: Path, model: str) -> dict[str, float]:
    out = {}
    for line in (run / "scores.jsonl").read_text().splitlines():
        s = json.loads(line)
        if s["model"] == model and s["metric"] == METRIC and s["status"] == "ok" and s["item_id"] != "*":
            out[s["item_id"]] = s["value"]
    return out


def exact_sign_flip_p(diffs: list[float]) -> float:
    """Two-sided exact p of the paired sign-flip test of the mean difference: the share of the 2**n sign patterns
    whose |sum| reaches the observed |sum|, counted by dynamic programming over integer sums."""
    ints = [int(round(d)) for d in diffs]
    assert all(d == i for d, i in zip(diffs, ints))
    sums = Counter({0: 1})
    for d in ints:
        nxt: Counter = Counter()
        for s, n in sums.items():
            nxt[s + d] += n
            nxt[s - d] += n
        sums = nxt
    obs = abs(sum(ints))
    return sum(n for s, n in sums.items() if abs(s) >= obs) / 2 ** len(ints)


def test_compare_two_chemistry_runs_gives_hand_checkable_paired_tests(two_runs):
    out, a, b = two_runs
    assert runner.invoke(app, ["view", "--out", str(out)]).exit_code == 0  # the runs' viewers, for the page's links
    res = runner.invoke(app, ["compare", a.name, b.name, "--out", str(out)])
    assert res.exit_code == 0, res.output
    folder = out / f"compare-{a.name}-{b.name}"
    assert f"report: {folder / 'compare.md'}" in " ".join(res.output.split())
    data = json.loads((folder / "compare.json").read_text())
    as_json = runner.invoke(app, ["compare", a.name, b.name, "--out", str(out), "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.output) == data
    o1, phi, gpt = (_values(b, m) for m in ("replay:o1-mini", "replay:phi4:latest", "replay:openai/4o"))
    assert len(o1) == len(phi) == len(gpt) == 25 and data["shared_items"] == sorted(o1)
    # the same model in both runs: the same stored answers, so every paired difference is 0 and p = 1
    for model in ("replay:o1-mini", "replay:phi4:latest"):
        (ch,) = [c for c in data["changes"] if c["model"] == model]
        first = _values(a, model)
        assert ch["n"] == 25 and ch["mean_a"] == pytest.approx(sum(first.values()) / 25)
        assert ch["mean_diff"] == 0 and ch["p"] == 1.0 and ch["identical"] and ch["verdict"] == "no change"
    assert data["changes"][0]["mean_a"] == pytest.approx(296 / 25)  # o1-mini: 296 accepted answers in chemistry
    # ranked together: means by plain arithmetic; adjacent paired tests against the exact sign-flip p
    ranking = {r["entry"]: r for r in data["ranking"]}
    assert [r["entry"] for r in data["ranking"]] == ["replay:o1-mini", "replay:openai/4o", "replay:phi4:latest"]
    assert ranking["replay:openai/4o"]["runs"] == [b.name] and ranking["replay:o1-mini"]["runs"] == [a.name, b.name]
    for name, vals in (("replay:o1-mini", o1), ("replay:openai/4o", gpt), ("replay:phi4:latest", phi)):
        assert ranking[name]["mean"] == pytest.approx(sum(vals.values()) / 25)
    for pair, (hi, lo) in zip(data["pairs"], ((o1, gpt), (gpt, phi))):
        diffs = [hi[i] - lo[i] for i in sorted(hi)]
        assert pair["n"] == 25 and pair["mean_diff"] == f"{sum(diffs) / 25:.2f}"
        assert pair["p"] == pytest.approx(exact_sign_flip_p(diffs), abs=0.02)  # 10000 random sign patterns
        assert pair["significant"] is (pair["p"] < 0.05)
    # what is not shared is named; the Markdown states it, and the test behind every order
    md = (folder / "compare.md").read_text()
    assert f"- Models: replay:openai/4o only in {b.name}; in several runs: replay:o1-mini, replay:phi4:latest." in md
    assert "- Items: all 25 items are shared by every run." in md
    assert (
        f"- replay:o1-mini on {METRIC}, {a.name} -> {b.name}: the same value on all 25 shared items (mean 11.84): "
        "no change." in md
    )
    p1 = data["pairs"][0]["p_value"]
    assert f"It does not separate replay:o1-mini from replay:openai/4o (p = {p1})" in md
    # neither adjacent pair is separated (p = 0.78 and 0.25 in chemistry): the order claims no '>'
    assert (
        f"Ranked together by {METRIC} on the 25 items every run shares. Full order (best first; '>': separated by the "
        "paired test of the adjacent pair at the 5% level, '≈': not separated): replay:o1-mini ≈ replay:openai/4o ≈ "
        "replay:phi4:latest." in md
    )
    # the viewer page
    html = (folder / "index.html").read_text()
    assert '<table id="compare-changes">' in html and 'data-model="replay:o1-mini"' in html
    assert '<tr class="ranking-row" data-entry="replay:openai/4o" data-rank="2">' in html
    assert '<li class="not-shared" data-kind="models">' in html
    assert f'<a class="run-viewer-link" href="../{a.name}/viewer/index.html">{a.name}</a>' in html
    # the run extended with --into says what was added, here and in the runs index
    assert "replay:openai/4o (replay:openai/4o added by ask --into at " in md
    listed = {e["run_id"]: e for e in json.loads(runner.invoke(app, ["runs", "--out", str(out), "--json"]).output)}
    (added,) = listed["second"]["added"]
    assert added["models"] == ["replay:openai/4o"] and listed["first"]["added"] == []
    assert listed["second"]["models"] == ["replay:o1-mini", "replay:openai/4o", "replay:phi4:latest"]  # by rank
    # the home page lists the comparison
    assert runner.invoke(app, ["view", "--out", str(out)]).exit_code == 0
    assert f'href="compare-{a.name}-{b.name}/index.html"' in (out / "index.html").read_text()


def test_the_api_returns_the_same_comparison_as_a_typed_result(two_runs):
    out, a, b = two_runs
    c = sgieval.compare(a, b / "report.md")
    assert isinstance(c, sgieval.Comparison) and c.run_ids == [a.name, b.name]
    df = c.to_pandas()
    row = df[(df.model == "replay:o1-mini") & (df.metric == METRIC)].iloc[0]
    assert row.n == 25 and row.mean_diff == 0 and row.verdict == "no change"
    assert list(c.to_pandas("ranking").entry) == ["replay:o1-mini", "replay:openai/4o", "replay:phi4:latest"]
    assert c.to_markdown().startswith(f"# Comparison of runs {a.name}, {b.name}\n")
    with pytest.raises(InputError, match="not scored item by item in every run"):
        sgieval.compare(a, b, metric="no_such_metric")


def _run(run_id: str, values: dict[str, dict[str, float]], prompts: dict[str, str], **config) -> RunInput:
    items = [Item(id=i, benchmark="qa", task="generic", prompt=p) for i, p in prompts.items()]
    scores = [Score(item_id=i, model=m, metric="acc", value=v) for m, per in values.items() for i, v in per.items()]
    return RunInput(
        run_id=run_id,
        path=Path(run_id),
        config=RunConfig(run_id=run_id, request="q", **config),
        items=items,
        scores=scores,
        models=list(values),
        primary="acc",
        specs={"acc": (True, "0-10")},
    )


def test_a_changed_model_gets_the_exact_paired_test_and_unshared_parts_are_named():
    ids = [f"q{k}" for k in range(9)]
    prompts = {i: f"prompt {i}" for i in ids}
    before = [1, 2, 3, 4, 5, 6, 7, 2, 5]  # q0..q8; q8 is only in run A
    after = [2, 3, 5, 5, 7, 9, 8, 2]  # q0..q7: differences 1, 1, 2, 1, 2, 3, 1 and q7's prompt differs
    a = _run("A", {"m": dict(zip(ids, before)), "old": dict(zip(ids, [0] * 9))}, prompts, judges=["openai:j1"])
    b_prompts = {i: prompts[i] for i in ids[:8]} | {"q7": "a reworded prompt"}
    b = _run("B", {"m": dict(zip(ids[:8], after)), "new": dict(zip(ids[:8], [9] * 8))}, b_prompts, judges=["openai:j2"])
    a.rubrics, b.rubrics = {"rigor.yaml": "a" * 64}, {"rigor.yaml": "b" * 64, "extra.yaml": "c" * 64}
    c = compare_runs([a, b], n_resamples=10000)
    assert c.shared_items == ids[:7] and c.items_changed == ["q7"] and c.items_only == {"A": ["q8"], "B": []}
    (ch,) = c.changes
    diffs = [after[k] - before[k] for k in range(7)]
    assert (ch.n, ch.mean_a, ch.mean_b) == (7, sum(before[:7]) / 7, sum(after[:7]) / 7)
    assert ch.mean_diff == pytest.approx(sum(diffs) / 7)  # 11 / 7
    # 2**7 = 128 sign patterns, enumerated exactly: only all-plus and all-minus reach |sum| = 11
    flips = [sum(s * d for s, d in zip(signs, diffs)) for signs in itertools.product((1, -1), repeat=7)]
    assert ch.p == pytest.approx(sum(abs(f) >= 11 for f in flips) / 128) == 2 / 128
    assert ch.real is True and ch.ci_low <= ch.mean_diff <= ch.ci_high
    assert ch.sentence() == (
        "m on acc, A -> B: mean 4.00 -> 5.57 on 7 shared items (difference 1.57, 95% CI "
        f"{ch.ci_text()}); paired permutation test p = 0.0156: a real change at the 5% level."
    )
    # m's values differ between the runs: one ranking entry per run; old and new are each in one run only
    assert [r.entry for r in c.ranking] == ["new", "m [B]", "m [A]", "old"]
    assert c.models_only == {"A": ["old"], "B": ["new"]} and c.models_shared == ["m"]
    kinds = dict(c.not_shared())
    assert kinds["items"] == (
        "Items: 7 items shared; 1 item only in A (q8); 1 item with the same id but a different prompt, left out (q7)."
    )
    assert kinds["models"] == "Models: old only in A; new only in B; in several runs: m."
    assert c.config_diff == [
        ("judges", ["openai:j1", "openai:j2"]),
        ("rubric extra.yaml", ["absent", "sha256 cccccccccccc"]),
        ("rubric rigor.yaml", ["sha256 aaaaaaaaaaaa", "sha256 bbbbbbbbbbbb"]),
    ]
    assert "The runs differ in judges, rubric extra.yaml, rubric rigor.yaml (table above)" in " ".join(c.limits)
    # a model whose every score failed in the second run: nothing is paired, and it is ranked unscored there
    b.models.append("f")
    b.scores += [Score(item_id=i, model="f", metric="acc", status="judge_error", error="timeout") for i in ids[:8]]
    a.models.append("f")
    a.scores += [Score(item_id=i, model="f", metric="acc", value=1.0) for i in ids]
    c = compare_runs([a, b], n_resamples=999)
    (f,) = [ch for ch in c.changes if ch.model == "f"]
    assert (f.n, f.p, f.real, f.verdict) == (0, None, None, "untested")
    assert f.sentence() == "f on acc, A -> B: no item scored in both runs, so nothing is compared."
    rows = {r.entry: r for r in c.ranking}
    assert rows["f [B]"].rank == "unscored" and rows["f [B]"].ci == "7 failed (judge_error): timeout"
    assert rows["f [A]"].mean == 1.0 and rows["f [A]"].n == 7
    # a run sharing no item with the other
    lone = _run("C", {"m": {"z": 1.0}}, {"z": "other"})
    with pytest.raises(InputError, match="the runs share no item"):
        compare_runs([a, lone])


def test_a_new_prompt_version_of_one_model_is_a_real_change_by_the_exact_paired_test(tmp_path):
    """The same target model name answers 2 of 8 questions in run v1 and all 8 in run v2 (a new prompt version):
    the paired differences are 0, 0 and six 1s; of the 2**8 sign patterns, 8 reach |sum| = 6, so p = 8/256."""
    capitals = [("France", "Paris"), ("Japan", "Tokyo"), ("Italy", "Rome"), ("Spain", "Madrid")]
    capitals += [("Egypt", "Cairo"), ("Peru", "Lima"), ("Kenya", "Nairobi"), ("Chile", "Santiago")]
    bench = tmp_path / "capitals.jsonl"
    bench.write_text(
        "".join(
            json.dumps(
                {"id": f"c{k}", "prompt": f"What is the capital of {c}?", "reference": a, "task": "short_answer"}
            )
            + "\n"
            for k, (c, a) in enumerate(capitals)
        )
    )
    v1 = routed("m", [(f"capital of {c}", a if k < 2 else "I do not know") for k, (c, a) in enumerate(capitals)])
    v2 = routed("m", [(f"capital of {c}", a) for c, a in capitals])
    runs = [
        sgieval.evaluate("", models=[m], benchmark=str(bench), out_dir=tmp_path, run_id=r)
        for m, r in ((v1, "v1"), (v2, "v2"))
    ]
    c = sgieval.compare(*runs)
    assert c.metric == "exact_match"
    (ch,) = c.changes
    before, after = (
        {s.item_id: s.value for s in r.scores if s.metric == "exact_match" and s.item_id != "*"} for r in runs
    )
    diffs = [after[i] - before[i] for i in sorted(before)]
    assert sorted(diffs) == [0, 0, 1, 1, 1, 1, 1, 1]
    flips = [sum(s * d for s, d in zip(signs, diffs)) for signs in itertools.product((1, -1), repeat=8)]
    assert ch.p == sum(abs(f) >= abs(sum(diffs)) for f in flips) / 256 == 8 / 256  # exact: 2**8 <= 10000 resamples
    assert (ch.n, ch.mean_a, ch.mean_b, ch.mean_diff) == (8, 0.25, 1.0, 0.75) and ch.verdict == "real change"
    assert c.ranking == []  # one model: its paired change is the comparison, not a ranking of it against itself
    assert "paired permutation test p = 0.0312: a real change at the 5% level." in c.answer[0]
    assert any(s.startswith("A real change says a model's scores differ between the runs, not why") for s in c.limits)


def test_compare_refuses_a_run_folder_with_a_link_in_one_line(two_runs, tmp_path):
    import os
    import shutil

    out, a, b = two_runs
    planted = tmp_path / "planted"
    shutil.copytree(a, planted, symlinks=True)
    os.symlink("/etc/passwd", planted / "figures" / "x.png")
    res = runner.invoke(app, ["compare", str(planted), str(b), "--dest", str(tmp_path / "cmp")])
    assert res.exit_code == 2 and "figures/x.png" in res.output and "link" in res.output
    assert not (tmp_path / "cmp").exists()  # nothing written
    one = runner.invoke(app, ["compare", str(b)])
    assert one.exit_code == 2 and "a comparison needs two runs or more" in one.output


def test_compare_refuses_the_same_run_twice_and_writes_nothing(two_runs, tmp_path):
    """The same run given twice (by id and by folder, or twice by id) would compare each model with itself
    ("no change" by construction): one line, exit 2, no comparison folder; a copy of the folder is another run."""
    import shutil

    out, a, b = two_runs
    for args in ([a.name, a.name], [a.name, str(a)]):
        res = runner.invoke(app, ["compare", *args, "--out", str(out), "--dest", str(tmp_path / "cmp")])
        assert res.exit_code == 2, res.output
        assert "the same run is given twice (runs 1 and 2)" in res.output and "give two different runs" in res.output
        assert not (tmp_path / "cmp").exists()
    with pytest.raises(InputError, match="the same run is given twice"):
        sgieval.compare(a, b, a)
    copy = tmp_path / "copy"
    shutil.copytree(a, copy, symlinks=True)
    assert sgieval.compare(a, copy).run_ids[1] == "copy"
