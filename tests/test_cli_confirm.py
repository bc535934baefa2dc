"""The metric confirmation says what each metric needs before running (item 8 closed stdin)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sgieval.agents.requirements import JUDGE_FIX, SANDBOX_FIX, metric_needs, none_can_run, ranking_cannot_run
from sgieval.cli import app
from sgieval.core import DRY_EXPERIMENT, IDEA_GENERATION, OPEN_CREATIVITY, Item, MetricSpec

runner = CliRunner()
RIGOR_CHEM = "Which model is most rigorous in chemistry?"


def _item(i: int, task: str) -> Item:
    return Item(id=f"b/{i}", benchmark="b", task=task, prompt="p")


def test_metric_needs_rows():
    items = [_item(1, OPEN_CREATIVITY), _item(2, OPEN_CREATIVITY), _item(3, DRY_EXPERIMENT)]
    specs = [
        MetricSpec(name="acc", tasks=[OPEN_CREATIVITY]),
        MetricSpec(name="rigor", tasks=["*"], kind="rubric"),
        MetricSpec(name="dry", tasks=[DRY_EXPERIMENT]),
        MetricSpec(name="idea", tasks=[IDEA_GENERATION]),
    ]
    rows = metric_needs(
        specs,
        items,
        primary="rigor",
        custom={"rigor"},
        judges=[],
        targets=["replay:a"],
        replay_targets=True,
        sandbox=False,
    )
    assert [(r.metric, r.needs, r.available) for r in rows] == [
        ("acc", ["stored judgements (replayed answers)", "2 items"], True),
        ("rigor", ["judge", "3 items"], False),
        ("dry", ["sandbox", "1 item"], False),
        ("idea", ["0 items"], False),
    ]
    assert rows[1].line() == (
        f"rigor (rubric, custom, ranking): needs judge, 3 items -- NOT available: no judge given. Fix: {JUDGE_FIX}"
    )
    assert rows[2].fix == SANDBOX_FIX
    assert none_can_run(rows) is None
    # a live target on open creativity needs a judge; the target itself is no judge without --allow-self-judge
    live = metric_needs(specs[:1], items, judges=["openai:m"], targets=["openai:m"])
    assert (live[0].needs, live[0].available, live[0].missing) == (
        ["judge", "2 items"],
        False,
        "the only judge (openai:m) is a target model",
    )
    assert metric_needs(specs[:1], items, judges=["openai:m"], targets=["openai:m"], allow_self_judge=True)[0].available
    stop = none_can_run(rows[1:])
    assert stop is not None and stop.one_line().startswith(
        "metrics: none of the chosen metrics can run (rigor: no judge given; dry: no sandbox can start; "
        "idea: no selected item of its tasks)."
    )


def test_confirmation_lists_needs_and_closed_stdin_is_no(tmp_path):
    res = runner.invoke(app, ["ask", RIGOR_CHEM, "--k", "2", "--out", str(tmp_path)], input="")
    assert res.exit_code == 3, res.output
    assert (
        "  - aidan_accepted_answers (objective): needs stored judgements (replayed answers), 2 items -- available"
        in res.output
    )
    assert (
        f"  - rigor (rubric, custom, ranking): needs judge, 2 items -- NOT available: no judge given. Fix: {JUDGE_FIX}"
        in res.output
    )
    assert "cancelled at the metric confirmation" in res.output and "Aborted" not in res.output
    assert not any(tmp_path.iterdir())


def test_yes_stops_before_work_when_no_metric_can_run(tmp_path):
    data = tmp_path / "open.jsonl"
    data.write_text(
        "\n".join(json.dumps({"id": f"q{i}", "prompt": f"Propose experiment {i}."}) for i in range(3)) + "\n"
    )
    answers = tmp_path / "ans.jsonl"
    answers.write_text(
        "\n".join(json.dumps({"item_id": f"jsonl:open/q{i}", "text": "an idea"}) for i in range(3)) + "\n"
    )
    res = runner.invoke(
        app,
        [
            "ask",
            "Which answers are most rigorous?",
            "-b",
            str(data),
            "--models",
            f"replay:{answers}",
            "--yes",
            "--out",
            str(tmp_path / "runs"),
        ],
    )
    assert res.exit_code == 2, res.output
    assert (
        "error: metrics: none of the chosen metrics can run (rigor: no judge given). Fix: pass --judge <model>"
        in res.output
    )
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_idea_generation_without_sgi_bench_data_says_where_it_comes_from(tmp_path):
    res = runner.invoke(
        app, ["ask", "Which model is most rigorous in chemistry idea generation?", "--yes", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2
    assert res.output.strip() == (
        "error: request: idea-generation items come from SGI-Bench, which is not loaded (no local sgi-bench data). "
        "Fix: run `sgieval data pull sgi-bench` (online), or pass --data-dir <folder holding sgi-bench/>; or judge the "
        "stored SciAidanBench answers for rigor instead: `sgieval ask \"Which model is most rigorous in chemistry?\" "
        "-b sciaidanbench --judge openai:gpt-4.1`"
    )
    # variants: another SGI-Bench task with a quality, and one without a quality (no alternative offered)
    res = runner.invoke(
        app, ["ask", "How rigorous are dry lab experiments in physics?", "--yes", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2 and res.output.startswith(
        "error: request: dry-experiment items come from SGI-Bench, which is not loaded"
    )
    assert res.output.strip().endswith(
        "for rigor instead: `sgieval ask \"How rigorous are experiments in physics?\" "
        "-b sciaidanbench --judge openai:gpt-4.1`"
    )
    res = runner.invoke(app, ["ask", "Which model is best at experimental reasoning?", "--yes", "--out", str(tmp_path)])
    assert res.exit_code == 2 and res.output.strip().endswith(
        "Fix: run `sgieval data pull sgi-bench` (online), or pass --data-dir <folder holding sgi-bench/>"
    )


def test_yes_stops_before_work_when_the_ranking_metric_needs_a_missing_judge(tmp_path):
    # the ranking metric chosen with --metric, and (variant) named in the request: other metrics could run
    for args in (["Which model is the most creative in chemistry?", "--metric", "rigor"], [RIGOR_CHEM]):
        out = tmp_path / str(len(args))
        res = runner.invoke(app, ["ask", *args, "--k", "2", "--yes", "--out", str(out)])
        assert res.exit_code == 2, res.output
        assert res.output.strip().splitlines()[-1] == (
            "error: ranking metric rigor: it needs a judge to score, so nothing could be ranked (no judge given). "
            f"Fix: {JUDGE_FIX}; or rank by a metric that can run: --metric aidan_accepted_answers (can run: "
            "aidan_accepted_answers, aidan_published_count, aidan_readme_score, aidan_leaderboard_score)"
        )
        assert not out.exists() or not any(p.name.endswith(".jsonl") for p in out.rglob("*"))


def test_ranking_cannot_run_only_for_the_ranking_metric_and_a_judge_problem():
    items = [_item(1, OPEN_CREATIVITY), _item(2, DRY_EXPERIMENT)]
    specs = [MetricSpec(name="rigor", tasks=["*"], kind="rubric"), MetricSpec(name="dry", tasks=[DRY_EXPERIMENT])]
    # the only judge is a target model: the ranking metric cannot run
    rows = metric_needs(specs, items, primary="rigor", judges=["openai:m"], targets=["openai:m"], sandbox=True)
    stop = ranking_cannot_run(rows)
    assert stop is not None and stop.one_line() == (
        "ranking metric rigor: it needs a judge to score, so nothing could be ranked (the only judge (openai:m) is "
        "a target model). Fix: pass another --judge, or --allow-self-judge; or rank by a metric that can run: "
        "--metric dry (can run: dry)"
    )
    # a judge problem of another metric, or a missing sandbox of the ranking metric, does not stop the run
    assert ranking_cannot_run(metric_needs(specs, items, primary="dry", sandbox=True)) is None
    assert ranking_cannot_run(metric_needs(specs, items, primary="dry", judges=["openai:j"], sandbox=False)) is None
    assert ranking_cannot_run(metric_needs(specs, items, primary="rigor", judges=["openai:j"])) is None
