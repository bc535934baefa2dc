"""The rubric loop: `sgieval metric test NAME --run RUN --judge MODEL` on a labelled run.

The run is tests/test_labels.py's ``judged_run`` (12 items, targets "tidy" and "terse", the rigor rubric). The judge
here is a local OpenAI-compatible server (bench/mock_openai.py) whose reply depends on the rubric text: each
criterion scores ``2 + k`` (k = how often "careful" occurs in the response under review), plus 3 when the criterion's
description contains the word "thorough". The labeller gives "logical self-consistency" ``5 + k`` on six units, so
the judge starts 3 points too strict and the revision that adds "thorough" makes it agree exactly.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sgieval
from sgieval.cli import app
from sgieval.core import Rubric

_spec = importlib.util.spec_from_file_location("_labels_run", Path(__file__).with_name("test_labels.py"))
assert _spec is not None and _spec.loader is not None
_labels_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_labels_run)
judged_run = _labels_run.judged_run  # the finished run fixture, reused

CRIT = "logical self-consistency"
# (item number, target, k = "careful" count of that answer: tidy 3 + i % 5, terse i % 5)
LABELLED = [(0, "terse", 0), (1, "terse", 1), (2, "terse", 2), (3, "terse", 3), (0, "tidy", 3), (1, "tidy", 4)]


def rubric_aware_reply(body: dict, index: int) -> str:
    user = "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "user")
    response = user.split("The response under review follows", 1)[1]
    k = response.count("careful")
    scores = []
    prompt = "\n".join(str(m["content"]) for m in body["messages"])
    for name, description in re.findall(r"^- (.+?) \(weight [^)]*\): (.*)$", prompt, flags=re.M):
        s = min(10, 2 + k + (3 if "thorough" in description else 0))
        scores.append({"criterion": name, "score": s, "rationale": f"mock {s} on {name}", "evidence": []})
    return json.dumps({"scores": scores})


def _labelled_copy(judged_run: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    import shutil

    run = Path(shutil.copytree(judged_run, tmp_path / "run"))
    names = {m.removeprefix("replay:"): m for m in {r.model for r in sgieval.load_run(run).responses}}
    rows = [
        {"item_id": f"jsonl:bench/q{i}", "model": names[t], "metric": "rigor", "criterion": CRIT, "value": 5 + k}
        for i, t, k in LABELLED
    ]
    f = tmp_path / "labels.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(app, ["labels", "import", str(run), str(f), "--labeller", "ana"])
    assert res.exit_code == 0, res.output
    return run, names


def _row(output: str, statistic: str) -> list[str]:
    """The cells of the agreement table's row for ``statistic`` (rich box characters as separators)."""
    line = next(x for x in output.splitlines() if f" {statistic} " in x)
    return [c.strip() for c in re.split(r"[│┃|]", line) if c.strip()]


def test_revising_a_criterion_rescores_only_labelled_units_and_shows_agreement_before_and_after(
    judged_run, tmp_path, monkeypatch
):
    from sgieval.bench.mock_openai import MockOpenAI

    run, names = _labelled_copy(judged_run, tmp_path)
    stored = sgieval.load_run(run).scores
    assert {s.details.get("rubric_version") for s in stored if s.metric == "rigor"} == {1}
    out = tmp_path / "rubrics"
    new_description = "Every step follows from the previous ones and nothing contradicts; be thorough."
    # round 1: criterion 1, new description, anchors kept, save; round 2: stop
    answers = f"1\n{new_description}\n\ny\n\n"
    with MockOpenAI(replies=rubric_aware_reply) as mock:
        res = CliRunner().invoke(
            app,
            [
                "metric",
                "test",
                "rigor",
                "--run",
                str(run),
                "--judge",
                "openai:mock",
                "--base-url",
                mock.url,
                "--out",
                str(out),
            ],
            input=answers,
            env={"COLUMNS": "250", "OPENAI_API_KEY": "test"},
        )
        log = mock.log()
    assert res.exit_code == 0, res.output
    # the judge that scored the run (the fixture's CarefulJudge) is not the one given: the 6 labelled units are scored once
    # with version 1 (the baseline) and once with version 2; the 18 unlabelled units never
    assert len(log) == 12
    judged = sorted(re.search(r"Answer (\d+) by (\w+)\.", e["last_user"]).groups() for e in log)
    assert judged == sorted([(str(i), t) for i, t, _ in LABELLED] * 2)
    # the disagreement table names item, target model, criterion, both values and the judge's rationale
    first = next(x for x in res.output.splitlines() if "mock 2 on logical self-consistency" in x)
    assert "jsonl:bench/q0" in first and names["terse"] in first and CRIT in first
    assert re.search(r"│\s+2\s+│\s+5\s+│", first), first
    # before: judge 2+k, labels 5+k -> mean difference -3 exactly; quadratic-weighted kappa over 0..10:
    #   observed disagreement sum w O = 3^2 = 9; expected E[(H-J)^2] = var H + var J + 3^2 with
    #   H = 5,6,7,8,8,9 (population variance 390/216 for H and for J = H-3) -> 780/216 + 9 = 2724/216,
    #   kappa = 1 - 9 * 216 / 2724 = 780/2724 = 0.2863.
    # after: judge 5+k = labels -> kappa 1, mean difference 0 (no bootstrap variation: no interval)
    kappa = _row(res.output, "weighted_kappa")
    assert kappa[0] == CRIT and kappa[2] == "6"
    assert kappa[3].startswith(f"{780 / 2724:.2f} (") and kappa[4] == "1.00" and kappa[5] == f"{1 - 780 / 2724:+.2f}"
    assert _row(res.output, "mean_difference")[3:] == ["-3.00", "0.00", "+3.00"]
    # the next round starts from version 2, which has no disagreement left
    assert "openai:mock agrees exactly with every label of rigor (version 2)" in res.output
    # saved as version 2 (the starter file is untouched), with both versions kept for tracing
    saved = Rubric.from_yaml(out / "rigor.yaml")
    assert saved.version == 2 and saved.criteria[0].description == new_description
    assert Rubric.from_yaml(out / "versions" / "rigor.v1.yaml").version == 1
    assert "version: 2" in (out / "versions" / "rigor.v2.yaml").read_text()
    from sgieval.metric_pool.rubrics import load_rubric

    assert load_rubric("rigor").version == 1 and "thorough" not in load_rubric("rigor").criteria[0].description
    rescored = [json.loads(x) for x in (out / "versions" / "rigor.v2.labelled-scores.jsonl").read_text().splitlines()]
    assert len(rescored) == 6 and {s["details"]["rubric_version"] for s in rescored} == {2}
    assert {s["judge"] for s in rescored} == {"openai:mock"}
    assert sorted(s["details"]["criteria"][CRIT] for s in rescored) == sorted(5 + k for *_, k in LABELLED)
    assert sgieval.load_run(run).scores == stored  # the run's own scores are not touched


def test_a_discarded_revision_saves_nothing_and_bad_input_is_one_clear_error(judged_run, tmp_path):
    from sgieval.bench.mock_openai import MockOpenAI

    run, _ = _labelled_copy(judged_run, tmp_path)
    out = tmp_path / "rubrics"
    # anchors only: "0=" removes level 0, "7=..." adds level 7; then refuse to save
    with MockOpenAI(replies=rubric_aware_reply) as mock:
        args = ["metric", "test", "rigor", "--run", str(run), "--judge", "openai:mock", "--base-url", mock.url]
        res = CliRunner().invoke(
            app,
            [*args, "--out", str(out)],
            input="logical self-consistency\n\n0=; 7=mostly thorough\nn\n\n",
            env={"COLUMNS": "250", "OPENAI_API_KEY": "test"},
        )
        assert res.exit_code == 0, res.output
        assert "version 2 discarded; still at version 1" in res.output
        # the anchors change no description: the judge scores as before, the agreement does not move
        assert _row(res.output, "mean_difference")[3:] == ["-3.00", "-3.00", "+0.00"]
        assert not out.exists()
        both = CliRunner().invoke(app, [*args, "--response", "text"], env={"OPENAI_API_KEY": "test"})
        assert both.exit_code == 2 and "give either --response" in both.output
        res = CliRunner().invoke(app, [*args[:2], "clarity", *args[3:]], env={"OPENAI_API_KEY": "test"})
        assert res.exit_code == 2 and "the run has no rubric metric 'clarity'" in res.output
        assert "use one of rigor" in res.output


def test_revised_keeps_other_criteria_and_old_yaml_loads_as_version_1():
    from sgieval.metric_pool.rubrics import load_rubric

    r = load_rubric("rigor")
    text = r.to_yaml()
    old = "\n".join(x for x in text.splitlines() if not x.startswith("version:")) + "\n"
    assert Rubric.from_yaml(old).version == 1  # a YAML file written before versions existed
    v2 = r.revised("Logical Self-Consistency", anchors={0: "", 7: "thorough"})
    assert v2.version == 2 and r.version == 1
    assert v2.criteria[0].anchors == {5: r.criteria[0].anchors[5], 7: "thorough", 10: r.criteria[0].anchors[10]}
    assert v2.criteria[0].description == r.criteria[0].description and v2.criteria[1:] == r.criteria[1:]
    assert Rubric.from_yaml(v2.to_yaml()).version == 2
    with pytest.raises(KeyError, match="no criterion 'elegance'"):
        r.revised("elegance", description="x")


async def test_failed_rubric_scores_record_the_version_too():
    from sgieval.core import Item, Response
    from sgieval.metric_pool.base import ScoringContext
    from sgieval.metric_pool.rubric import RubricMetric
    from sgieval.metric_pool.rubrics import load_rubric

    v3 = load_rubric("rigor").revised(CRIT, description="thorough").revised(CRIT, description="very thorough")
    item = Item(id="x/1", benchmark="x", task="generic", prompt="p")
    resp = Response(item_id="x/1", model="m", text="careful")
    [no_judge] = await RubricMetric(v3).score(item, resp, ScoringContext())
    assert no_judge.status == "not_run" and no_judge.details["rubric_version"] == 3
    # the evaluation records a metric that raised through the metric's own failed()
    [raised] = RubricMetric(v3).failed(item, resp, "parse_error", "ValueError: x")
    assert raised.details == {"rubric_version": 3}


JUDGE_CALLS: list[tuple[str, str]] = []  # (item number, target) of every call of ThoroughCarefulJudge


class ThoroughCarefulJudge(_labels_run.CarefulJudge):
    """The run's own judge (same name, same scores: 2 + "careful" count over the whole prompt), plus 3 on a
    criterion whose description says "thorough"; counts its calls."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        user = "\n".join(str(m.content) for m in messages if m.type == "human")
        JUDGE_CALLS.append(re.search(r"Answer (\d+) by (\w+)\.", user).groups())
        k = user.count("careful")
        scores = [
            {"criterion": n, "score": min(10, 2 + k + (3 if "thorough" in d else 0)), "rationale": "r"}
            for n, d in re.findall(
                r"^- (.+?) \(weight [^)]*\): (.*)$", "\n".join(str(m.content) for m in messages), flags=re.M
            )
        ]
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=json.dumps({"scores": scores})))])


def test_with_the_run_s_own_judge_the_run_s_scores_are_the_baseline(judged_run, tmp_path):
    import typer

    from sgieval.cli.metric import rubric_loop
    from sgieval.models.base import NamedModel

    run, _ = _labelled_copy(judged_run, tmp_path)
    JUDGE_CALLS.clear()
    [own] = {s.judge for s in sgieval.load_run(run).scores if s.metric == "rigor"}  # the judge that scored the run
    judge = NamedModel(name=own, role="judge", chat=ThoroughCarefulJudge(), provider="scripted-careful")
    loop = typer.Typer()

    @loop.command()
    def main() -> None:
        rubric_loop("rigor", run, [judge], out_dir=tmp_path / "rubrics")

    res = CliRunner().invoke(loop, [], input=f"{CRIT}\nbe thorough\n\ny\n\n", env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert "scoring the 6 labelled unit(s) with version 1" not in res.output  # no baseline re-score
    assert len(JUDGE_CALLS) == 6  # only the revision, only the labelled units
    assert sorted(JUDGE_CALLS) == sorted((str(i), t) for i, t, _ in LABELLED)
    assert _row(res.output, "mean_difference")[3:] == ["-3.00", "0.00", "+3.00"]
    assert "before (the run's scores, v1)" in res.output
    assert Rubric.from_yaml(tmp_path / "rubrics" / "rigor.yaml").version == 2

    # starting from the saved version 2 (a text the run was not judged with): the run's scores are no baseline
    JUDGE_CALLS.clear()

    @loop.command()
    def again() -> None:
        rubric_loop(str(tmp_path / "rubrics" / "rigor.yaml"), run, [judge], out_dir=tmp_path / "rubrics")

    res = CliRunner().invoke(loop, ["again"], input="\n", env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert "the run was judged with another text of rigor" in res.output and len(JUDGE_CALLS) == 6
    assert "agrees exactly with every label of rigor (version 2)" in res.output


def test_metric_define_chat_ends_in_the_rubric_loop(judged_run, tmp_path):
    from sgieval.bench.mock_openai import MockOpenAI

    run, _ = _labelled_copy(judged_run, tmp_path)
    out = tmp_path / "rubrics"
    # the offline chat: describe, accept the proposal (the rigor rubric) -> saved; then one loop round, saved
    chat = "A rubric for how rigorous a research idea is\ndone\n"
    loop = f"1\n{'Steps follow; be thorough.'}\n\ny\n\n"
    with MockOpenAI(replies=rubric_aware_reply) as mock:
        res = CliRunner().invoke(
            app,
            ["metric", "define", "--name", "rigor", "--out", str(out), "--run", str(run), "--judge", "openai:mock"]
            + ["--judge-base-url", mock.url],
            input=chat + loop,
            env={"COLUMNS": "250", "OPENAI_API_KEY": "test"},
        )
        n_calls = len(mock.log())
    assert res.exit_code == 0, res.output
    assert f"saved: {out / 'rigor.yaml'}" in res.output
    assert n_calls == 12  # 6 labelled units with the chat's version (another judge than the run's), 6 with v2
    assert _row(res.output, "mean_difference")[3:] == ["-3.00", "0.00", "+3.00"]
    saved = Rubric.from_yaml(out / "rigor.yaml")
    assert saved.version == 2 and saved.criteria[0].description == "Steps follow; be thorough."
    res = CliRunner().invoke(app, ["metric", "define", "--run", str(run)])
    assert res.exit_code == 2 and "--run needs a judge" in res.output
