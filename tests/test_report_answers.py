"""The report answers the question that was asked, says who judged and never hides a failure,
on the real stored SciAidanBench answers through the `sgieval ask` command."""

from __future__ import annotations

from typer.testing import CliRunner

from sgieval.cli import app

LEGEND = (
    "Full order (best first; '>': separated by the paired test of the adjacent pair at the 5% level, '≈': not separated"
)
"""The full order's legend (agents.reporting.separated_order) up to its optional "or not tested)"."""

runner = CliRunner()


def _report(tmp_path, request: str, *opts: str) -> str:
    res = runner.invoke(app, ["ask", request, "--yes", "--out", str(tmp_path), *opts])
    assert res.exit_code == 0, res.output
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    return (run_dir / "report.md").read_text()


def section(text: str, title: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_chemistry_report_lists_stored_errors_names_judges_and_self_judgement(tmp_path):
    text = _report(tmp_path, "Which model is the most creative in chemistry?")
    # published counting stays
    for row in (
        "| 1 | replay:o1-mini | 11.84 | 7.80 to 17.52 | 296 | 25 | 0 |",
        "| 274 | 25 | 0 |",
        "| 200 | 25 | 0 |",
        "| 194 | 25 | 0 |",
        "| 180 | 25 | 0 |",
        "| 107 | 25 | 0 |",
    ):
        assert row in text
    # which definition each figure uses: the SciAidanBench count, AidanBench's README S(q) and plot.py count
    defs = section(text, "Metric definitions")
    assert defs.startswith("\n\nThe definition each figure in this report uses:")
    assert (
        "| aidan_accepted_answers | per item (mean and total over items) | Accepted answers per question "
        "(SciAidanBench README)"
    ) in defs
    assert "| aidan_readme_score (variant of aidan_accepted_answers) | per item (mean and total over items) | " in defs
    assert "(github aidanmclaughlin/AidanBench a6bb325) (README) |" in defs
    assert (
        "| aidan_leaderboard_total (variant of aidan_accepted_answers) | corpus level (one value per model) |" in defs
    )
    assert "(github aidanmclaughlin/AidanBench a6bb325) (plot.py) |" in defs
    assert "| aidan_mean_novelty | corpus level (one value per model) | " in defs
    failures = section(text, "Failures")
    assert "No failed responses or scores; 2 stored records are censored or missing (below)." in failures
    assert (
        "| sciaidanbench/chemistry/2 | replay:openai/4o | censored | stopped by error after 4 accepted answers (a "
        "lower bound) | expected string or bytes-like object, got 'NoneType' |"
    ) in failures
    assert (
        "| sciaidanbench/chemistry/22 | replay:o1-mini | missing | empty stored list: no answer was recorded for "
        "this question |  |"
    ) in failures
    run = section(text, "Run")
    assert (
        "| judge | none called in this run (judge metrics not run); stored judgements of the original run: "
        "coherence by o1-mini, novelty by text-embedding-3-large embeddings"
    ) in run
    lim = section(text, "Limitations")
    assert (
        "- Self-preference: replay:o1-mini is ranked while o1-mini judged the coherence that decided its accepted "
        "answers (stored judgements of the original run): a judge may favour its own answers (self-preference), "
        "so its position may be overstated."
    ) in lim
    answer = section(text, "Answer")
    # accepted answers on chemistry/2 and chemistry/22: o1-mini 16+0, 4o 4+10, phi4 14+20, llama3.3 6+8,
    # qwen2.5 19+11, mistral 1+6; without them the totals are 280, 260, 166, 180, 150, 100 on 23 items:
    # o1-mini > openai/4o > llama3.3 > phi4 > qwen2.5 > mistral (phi4 and llama3.3 swap)
    assert (
        "Sensitivity: 1 censored (stopped by an error, so the count is a lower bound) and 1 missing (an empty "
        "stored list) stored lists are counted as published (see Failures); leaving out the 2 items concerned, "
        "the order by aidan_accepted_answers changes to replay:o1-mini > replay:openai/4o > replay:llama3.3:latest "
        "> replay:phi4:latest > replay:qwen2.5:latest > replay:mistral:latest."
    ) in answer
    assert (
        "Who judged: acceptance rests on stored judgements of the original run: coherence by o1-mini and novelty "
        "by text-embedding-3-large embeddings; no judge was called in this run."
    ) in answer
    assert "Self-preference: replay:o1-mini is ranked while o1-mini judged" in answer
    assert "## By discipline" not in text  # one discipline: no one-row breakdown
    assert "a embedding" not in text


def test_novel_ideas_rank_by_novelty_pooled_over_answers_without_first_answers(tmp_path):
    text = _report(tmp_path, "Which model writes the most novel ideas in nanoscience, top 10 questions only")
    assert "## Ranking by aidan_mean_novelty (scale 0-1, higher is better)" in text
    answer = section(text, "Answer")
    # METRICS.md D.15: pooled over the accepted answers, each list's first answer (novelty 1.0 by definition)
    # left out, so mistral's short lists no longer make it "most novel": it is last, and o1-mini first
    # (pooled over the answers of 9 of the 10 questions: one of its lists has no answer after the first)
    assert answer.startswith(
        '\n\n- **Verdict:** To "Which model writes the most novel ideas in nanoscience, top 10 questions only": '
        "No model is established as first by aidan_mean_novelty on 9 items"
    )
    # a corpus-level value has no per-item values to pair: no paired test, so no winner and no '>'
    assert (
        "replay:o1-mini leads with 0.28, one corpus-level value per model (95% CI 0.26 to 0.28), but it is not "
        "tested against replay:qwen2.5:latest (one corpus-level value per model, no per-item values to pair)."
    ) in answer
    assert (
        f"{LEGEND} or not tested): replay:o1-mini ≈ replay:qwen2.5:latest ≈ replay:openai/4o ≈ replay:phi4:latest "
        "≈ replay:llama3.3:latest ≈ replay:mistral:latest."
    ) in answer
    # a pooled mean's CI resamples questions (metric_pool.aidanbench.pooled_ci)
    assert "| 6 | replay:mistral:latest | 0.22 | 0.21 to 0.24 | 0.22 | 5 | 0 |" in text
    assert (
        "aidan_mean_novelty is one corpus-level value per model, with no per-item values to pair, so the order "
        "alone is not evidence of a difference."
    ) in answer
    # keeping first answers (a named variant) puts mistral first: the Answer says so
    assert (
        "The variant aidan_mean_novelty_with_first disagrees with the ranking metric aidan_mean_novelty about the "
        "order of all 6 models: with both one value per model over its answers, aidan_mean_novelty_with_first gives "
        "replay:mistral:latest 0.55 > replay:phi4:latest = replay:llama3.3:latest = replay:qwen2.5:latest 0.38 > "
        "replay:openai/4o 0.31 > replay:o1-mini 0.30, where aidan_mean_novelty gives replay:o1-mini 0.28 > "
        "replay:qwen2.5:latest 0.27 > replay:openai/4o 0.25 > replay:phi4:latest 0.24 > replay:llama3.3:latest 0.23 > "
        "replay:mistral:latest 0.22; rank by it with --metric aidan_mean_novelty_with_first."
    ) in answer
    assert "The metrics disagree about the top model" not in answer  # accepted answers also put o1-mini first
    assert "aidan_published_count puts" not in answer  # a named variant of the accepted count is not a second vote


def test_one_stored_model_gets_an_absolute_answer(tmp_path):
    text = _report(tmp_path, "How good is llama3.3 at physics?")
    answer = section(text, "Answer")
    assert (
        'To "How good is llama3.3 at physics?": **replay:llama3.3:latest** scores a mean of 7.86 per item by '
        "aidan_accepted_answers (scale count >= 0 answers) on 57 items (discipline Physics) "
        "(95% CI"
    ) in answer
    assert ", total 448. Among the 6 evaluated models it ranks 3rd; first is replay:o1-mini (mean 13.70)." in answer
    assert "ranks first" not in answer
    assert "The request asks about one model (replay:llama3.3:latest)" in text
    # the default targets are resolved once per run: the stored answers are read and the choice logged once
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    log = (run_dir / "log.jsonl").read_text()
    assert log.count("one stored model named in the request") == 1


def test_one_model_verdict_says_how_many_selected_items_have_no_valid_score(tmp_path):
    """A replay file that answers 2 of 3 items: the absolute answer is on 2 items and says the third has no valid
    score, rather than reading as if the selection held 2 items; a variant with every item answered says nothing."""
    bench = tmp_path / "sums.jsonl"
    bench.write_text("".join(f'{{"id": "q{k}", "prompt": "{k}+{k}?", "reference": "{2 * k}"}}\n' for k in (1, 2, 3)))
    part = tmp_path / "part.jsonl"
    part.write_text(
        '{"item_id": "q1", "text": "<answer>2</answer>"}\n{"item_id": "q2", "text": "<answer>5</answer>"}\n'
    )
    verdict = _verdict(tmp_path, bench, part)
    report = (next((tmp_path / "runs-part").glob("*/report.md"))).read_text()
    # the missing answer's response and its 3 scores are counted by status, not as "errors"
    assert "judge-format tags in the scored text), 4 other failed records (not_run 4)." in report
    assert verdict.startswith(
        '- **Verdict:** To "accuracy": **replay:part** scores a mean of 0.50 per item by exact_match (scale 0-1) on '
        "2 items (whole catalog; without a valid score: 1 of the 3 selected items, see Failures) (95% CI"
    ), verdict
    full = tmp_path / "full.jsonl"
    full.write_text(part.read_text() + '{"item_id": "q3", "text": "<answer>6</answer>"}\n')
    verdict = _verdict(tmp_path, bench, full)
    assert "on 3 items (whole catalog) (95% CI" in verdict and "without a valid score" not in verdict, verdict


def _verdict(tmp_path, bench, replay) -> str:
    out = tmp_path / f"runs-{replay.stem}"
    res = CliRunner().invoke(
        app, ["ask", "accuracy", "-b", str(bench), "--models", f"replay:{replay}", "--yes", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    (report,) = out.glob("*/report.md")
    return next(ln for ln in report.read_text().splitlines() if ln.startswith("- **Verdict:** "))
