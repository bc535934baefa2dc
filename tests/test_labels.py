"""Human labels of a finished judged run: import, export, a blind terminal session (a real pty), and the
prediction-powered estimates of ``sgieval.ppi`` / ``sgieval.agreement`` on them.

The run: 12 JSONL items, two replayed target models, the rigor rubric scored by a scripted judge whose criterion
score is ``2 + (number of times "careful" occurs in the answer)``; model "tidy" writes 3-7 "careful"s, "terse" 0-4.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from typer.testing import CliRunner

import sgieval
from sgieval.cli import app
from sgieval.core import RunConfig
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.models.base import NamedModel

runner = CliRunner()
N_ITEMS = 12


class CarefulJudge(BaseChatModel):
    """Gives every rubric criterion 2 + the count of "careful" in the answer under review (at most 10)."""

    @property
    def _llm_type(self) -> str:
        return "scripted-careful-judge"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        user = "\n".join(str(m.content) for m in messages if m.type == "human")
        names = re.findall(r"^- (.+?) \(weight [^)]*\):", "\n".join(str(m.content) for m in messages), flags=re.M)
        score = min(10, 2 + user.count("careful"))
        reply = json.dumps({"scores": [{"criterion": n, "score": score, "rationale": f"seen {score}"} for n in names]})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def answer(model: str, i: int) -> str:
    k = 3 + i % 5 if model == "tidy" else i % 5
    return f"Answer {i} by {model}." + " careful" * k


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("labels")
    bench = root / "bench.jsonl"
    bench.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": f"Propose a rigorous test of claim {i}.", "task": "open_ended"}) + "\n"
            for i in range(N_ITEMS)
        )
    )
    models = []
    for name in ("tidy", "terse"):
        f = root / f"{name}.jsonl"
        f.write_text(
            "".join(
                json.dumps({"item_id": f"jsonl:bench/q{i}", "text": answer(name, i)}) + "\n" for i in range(N_ITEMS)
            )
        )
        models.append(f"replay:{f}")
    judge = NamedModel(name="openai:careful-judge", role="judge", chat=CarefulJudge(), provider="scripted-careful")
    cfg = RunConfig(
        run_id="labelled",
        request="Which model is most rigorous?",
        benchmarks=[str(bench)],
        out_dir=str(root / "runs"),
        yes=True,
        bootstrap_resamples=999,
        models=models,
        judges=["openai:careful-judge"],
        tools=[],
    )
    state = asyncio.run(execute(make_runtime(cfg, judges=[judge])))
    assert state["metric_plan"]["primary"] == "rigor"
    return Path(state["report"]).parent


def copy(run: Path, dest: Path) -> Path:
    import shutil

    return Path(shutil.copytree(run, dest))


def targets(run: Path) -> list[str]:
    return sorted({r.model for r in sgieval.load_run(run).responses})


def test_import_validates_every_row_before_saving_any(judged_run, tmp_path):
    run = copy(judged_run, tmp_path / "run")
    tidy, terse = targets(run)[1], targets(run)[0]
    good = tmp_path / "labels.jsonl"
    good.write_text(
        json.dumps({"item_id": "jsonl:bench/q0", "model": tidy, "metric": "rigor", "value": 55, "labeller": "ana"})
        + "\n"
        + json.dumps(
            {
                "item_id": "jsonl:bench/q0",
                "model": tidy,
                "metric": "rigor",
                "criterion": "logical self-consistency",
                "value": 6,
                "note": "first\u2028second",
            },
            ensure_ascii=False,
        )  # a raw line separator inside a line is text, not a line break
        + "\n"
    )
    res = runner.invoke(app, ["labels", "import", str(run), str(good), "--labeller", "ben"])
    assert res.exit_code == 0, res.output
    labels = sgieval.load_run(run).labels
    assert [(x.value, x.criterion, x.labeller) for x in labels] == [
        (55, None, "ana"),
        (6, "logical self-consistency", "ben"),
    ]
    assert labels[1].note == "first\u2028second"
    bad_rows = [
        (
            {"item_id": "jsonl:bench/q99", "model": tidy, "metric": "rigor", "value": 5},
            "unknown item 'jsonl:bench/q99'",
        ),
        (
            {"item_id": "jsonl:bench/q1", "model": "gpt-9", "metric": "rigor", "value": 5},
            "unknown target model 'gpt-9'",
        ),
        (
            {
                "item_id": "jsonl:bench/q1",
                "model": terse,
                "metric": "rigor",
                "criterion": "logical self-consistency",
                "value": 12,
            },
            "outside",
        ),
        ({"item_id": "jsonl:bench/q1", "model": terse, "metric": "rigor", "value": "high"}, "is not a number"),
    ]
    for row, msg in bad_rows:
        f = tmp_path / "bad.jsonl"
        ok = {"item_id": "jsonl:bench/q2", "model": terse, "metric": "rigor", "value": 30}
        f.write_text(json.dumps(ok) + "\n" + json.dumps(row) + "\n")
        res = runner.invoke(app, ["labels", "import", str(run), str(f)])
        assert res.exit_code == 2, res.output
        assert msg in res.output and str(f) in res.output, res.output
        assert len(sgieval.load_run(run).labels) == 2  # nothing of the bad file was added


def test_csv_import_and_export_round_trip_and_template(judged_run, tmp_path):
    run = copy(judged_run, tmp_path / "run")
    tidy = targets(run)[1]
    f = tmp_path / "labels.csv"
    f.write_text(
        "item_id,model,metric,criterion,value,note\n"
        f"jsonl:bench/q3,{tidy},rigor,,70,=HYPERLINK(\"x\")\n"
        f"jsonl:bench/q3,{tidy},rigor,logical self-consistency,7,\n"
    )
    assert runner.invoke(app, ["labels", "import", str(run), str(f), "--labeller", "ana"]).exit_code == 0
    out = tmp_path / "out.csv"
    res = runner.invoke(app, ["labels", "export", str(run), "--to", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "'=HYPERLINK" in text  # a spreadsheet shows the note as text
    res = runner.invoke(app, ["labels", "export", str(run)])
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [(r["value"], r["criterion"], r["note"]) for r in rows] == [
        (70, None, '=HYPERLINK("x")'),
        (7, "logical self-consistency", ""),
    ]
    res = runner.invoke(app, ["labels", "export", str(run), "--template", "--n", "3"])
    template = [json.loads(line) for line in res.stdout.splitlines()]
    criteria = {c.name for c in _rigor(run).criteria}
    assert len(template) == 2 * 3 * len(criteria)
    assert {r["criterion"] for r in template} == criteria and all(r["value"] is None for r in template)


def _rigor(run: Path):
    from sgieval.api import run_metric_specs

    return run_metric_specs(sgieval.load_run(run))["rigor"]


def test_ppi_moves_each_model_toward_the_labels(judged_run, tmp_path):
    run = copy(judged_run, tmp_path / "run")
    records = sgieval.load_run(run)
    rows = []
    # the labeller scores every response 10 points below the judge, on 10 of the 12 items per model
    for s in records.scores:
        if s.metric == "rigor" and s.ok and int(s.item_id.rsplit("q", 1)[1]) < 10:
            rows.append({"item_id": s.item_id, "model": s.model, "metric": "rigor", "value": s.value - 10})
    f = tmp_path / "labels.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert runner.invoke(app, ["labels", "import", str(run), str(f)]).exit_code == 0
    est = sgieval.ppi(run, "rigor")
    ppi_py = pytest.importorskip("ppi_py")
    import numpy as np

    for m in est.models:
        judged = {s.item_id: s.value for s in records.scores if s.metric == "rigor" and s.model == m.model and s.ok}
        labelled = sorted(i for i in judged if int(i.rsplit("q", 1)[1]) < 10)
        y = np.array([judged[i] - 10 for i in labelled])
        yhat = np.array([judged[i] for i in labelled])
        yu = np.array([v for i, v in judged.items() if i not in labelled])
        assert (m.n_labels, m.n_scored) == (10, 12)
        assert m.judge.mean == pytest.approx(sum(judged.values()) / 12)
        assert m.labels.mean == pytest.approx(yhat.mean() - 10)  # the labels alone
        assert m.ppi.mean == pytest.approx(float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, yu))))
        low, high = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05)
        assert (m.ppi.low, m.ppi.high) == (pytest.approx(float(low[0])), pytest.approx(float(high[0])))
        assert m.ppi.mean < m.judge.mean - 5  # the labeller is 10 points stricter: PPI moves toward the labels
    agree = sgieval.agreement(run, "rigor")
    panel = next(a for a in agree.agreements if a.judge == "panel" and a.criterion is None)
    assert panel.n == 20 and panel.get("mean_difference").value == pytest.approx(10.0)
    assert list(est.to_pandas()["model"]) == sorted(m.model for m in est.models)


@pytest.mark.skipif(sys.platform == "win32", reason="pty")
def test_a_blind_labelling_session_in_a_real_terminal(judged_run, tmp_path):
    pexpect = pytest.importorskip("pexpect")
    run = copy(judged_run, tmp_path / "run")
    crits = [c.name for c in _rigor(run).criteria]
    exe = Path(sys.executable).with_name("sgieval")
    env = {**os.environ, "COLUMNS": "120", "USER": "ana"}
    child = pexpect.spawn(str(exe), ["label", str(run), "--n", "2"], env=env, encoding="utf-8", timeout=120)
    child.expect(r"labelling rigor: 4 unit\(s\) to go")
    child.expect(re.escape(crits[0]) + r" \(0-10, s skip, q quit\): ")
    assert "seen " not in child.before  # blind: no judge rationale before the label is saved
    child.sendline("11")
    child.expect("outside 0-10")
    for _ in crits:
        child.sendline("5")
    child.expect(r"saved\. judge \(openai:careful-judge\)")
    child.expect(r"\(0-10, s skip, q quit\): ")
    child.sendline("s")  # skip the second unit
    child.expect(r"\(0-10, s skip, q quit\): ")
    child.sendline("q")
    child.expect(pexpect.EOF)
    labels = sgieval.load_run(run).labels
    assert [x.criterion for x in labels] == [*crits, None]
    assert labels[-1].value == pytest.approx(50.0) and {x.labeller for x in labels} == {"ana"}
    assert {x.sample for x in labels} == {"random"}
    # running it again continues: the labelled unit is not asked again
    child = pexpect.spawn(str(exe), ["label", str(run), "--n", "2"], env=env, encoding="utf-8", timeout=120)
    child.expect(r"labelling rigor: 3 unit\(s\) to go \(--n 2 per target model; 1 already labelled by ana\)")
    child.sendline("q")
    child.expect(pexpect.EOF)


def test_the_report_shows_agreement_and_ppi_from_the_labels(judged_run, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # `report` resolves the run's judge; it calls nothing
    run = copy(judged_run, tmp_path / "run")
    records = sgieval.load_run(run)
    rows = [
        {"item_id": s.item_id, "model": s.model, "metric": "rigor", "value": s.value - 10, "sample": "random"}
        for s in records.scores
        if s.metric == "rigor" and s.ok and int(s.item_id.rsplit("q", 1)[1]) < 10
    ]
    f = tmp_path / "labels.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert runner.invoke(app, ["labels", "import", str(run), str(f)]).exit_code == 0
    res = runner.invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    md = (run / "report.md").read_text()
    assert "## Agreement with your labels: rigor" in md
    assert "20 label(s) of rigor. The labelled units are a seeded random sample" in md
    # the panel scores exactly 10 points above the labeller on every labelled unit
    assert "On rigor the judges agree with your 20 labels" in md
    assert "it scores 10.0 points above you on average" in md
    est = sgieval.ppi(run, "rigor")
    for m in est.models:
        cells = f"| {m.model} | 10 | 12 | {m.judge.mean:.2f} ({m.judge.low:.2f} to {m.judge.high:.2f}) |"
        assert cells in md, cells
        assert f"{m.ppi.mean:.2f} ({m.ppi.low:.2f} to {m.ppi.high:.2f})" in md
    data = json.loads((run / "report.json").read_text())
    keys = [s["key"] for s in data["sections"]]
    assert "labels_rigor" in keys
    # with fewer than 10 labels per model the judge-only figures stand, and the Answer says so
    run2 = copy(judged_run, tmp_path / "run2")
    few = tmp_path / "few.jsonl"
    few.write_text("".join(json.dumps(r) + "\n" for r in rows[:6]))
    assert runner.invoke(app, ["labels", "import", str(run2), str(few)]).exit_code == 0
    assert runner.invoke(app, ["report", str(run2)]).exit_code == 0
    md2 = (run2 / "report.md").read_text()
    assert "Fewer than 10 labels per model on rigor: the judge-only figures stand." in md2


def test_every_unit_labelled_gives_the_labels_only_difference_and_a_second_import_adds_nothing(judged_run, tmp_path):
    run = copy(judged_run, tmp_path / "run")
    records = sgieval.load_run(run)
    rows = [
        {"item_id": s.item_id, "model": s.model, "metric": "rigor", "value": s.value - 10}
        for s in records.scores
        if s.metric == "rigor" and s.ok
    ]
    f = tmp_path / "all.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert runner.invoke(app, ["labels", "import", str(run), str(f)]).exit_code == 0
    res = runner.invoke(app, ["labels", "import", str(run), str(f)])
    assert res.exit_code == 0 and "24 already there with the same value were not added again" in res.output
    assert len(sgieval.load_run(run).labels) == 24
    est = sgieval.ppi(run, "rigor")
    ((pair, d),) = est.differences.items()
    lab = {(s.item_id, s.model): s.value - 10 for s in records.scores if s.metric == "rigor" and s.ok}
    a, b = pair
    diffs = [lab[(i, a)] - lab[(i, b)] for i in {i for i, _ in lab}]
    assert d.method == "labels" and d.n_labelled == 12 and d.mean == pytest.approx(sum(diffs) / 12)
    agree = sgieval.agreement(run, "rigor")
    df = agree.to_pandas()
    assert set(df["statistic"]) == {"spearman", "mean_difference"} and (df["n"] == 24).all()


def test_every_bad_row_of_a_file_is_named_at_once(judged_run, tmp_path):
    run = copy(judged_run, tmp_path / "run")
    tidy = targets(run)[1]
    f = tmp_path / "bad.jsonl"
    f.write_text(
        json.dumps({"item_id": "jsonl:bench/q0", "model": tidy, "metric": "rigor", "value": 50})
        + "\n"
        + json.dumps({"item_id": "jsonl:bench/q1", "model": tidy, "metric": "rigor", "value": -1})
        + "\n"
        + json.dumps({"item_id": "jsonl:bench/q2", "model": tidy, "metric": "rigor", "value": "abc"})
        + "\n"
    )
    res = runner.invoke(app, ["labels", "import", str(run), str(f)])
    assert res.exit_code == 2
    assert f"{f} line 3 field value: value 'abc' is not a number" in res.output, res.output
    g = tmp_path / "bad2.jsonl"
    g.write_text(f.read_text().replace('"abc"', "101"))
    res = runner.invoke(app, ["labels", "import", str(run), str(g)])
    assert f"{g} line 2 field value: value -1 is outside the range of metric rigor (0 to 100)" in res.output
    assert "also line 3 field value: value 101 is outside" in res.output
    assert sgieval.load_run(run).labels == []


def test_labelling_an_objective_metric_names_the_run_score_not_a_judge(tmp_path):
    """A run with no judge (replayed SciAidanBench answers, objective metrics): after a label is saved the
    session shows the run's score as the run's own, not as "judge (objective)", and does not promise judge
    agreement."""
    from typer.testing import CliRunner

    import sgieval
    from sgieval.cli import app

    run = sgieval.evaluate(
        "Which model is the most creative in chemistry?",
        models="replay:o1-mini,replay:phi4",
        k=2,
        out_dir=tmp_path,
        run_id="objective",
        bootstrap_resamples=999,
    )
    res = CliRunner().invoke(app, ["label", str(run.run_dir), "--n", "1"], input="3\nq\n")
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    # --n is per target model: 1 item x 2 models
    assert "labelling aidan_accepted_answers: 2 unit(s) to go (--n 1 per target model; 0 already" in text
    assert "saved. the run's score (objective metric, no judge): " in text
    assert "judge (" not in text
    assert "shows how the run's scores agree with them" in text and "how the judges agree" not in text
