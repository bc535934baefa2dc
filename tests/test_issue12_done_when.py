"""Run as the real command (a subprocess ``sgieval ask ...``):

1. "Which model is most rigorous?" on a JSONL benchmark, two replayed targets and a panel of three judges (served
   by the local mock OpenAI server, bench/mock_openai.py): the Judge reliability section shows alpha with its CI,
   the per-judge offsets, leave-one-judge-out and the self-preference check, equal to the hand computation; and
   the same with ``--judge-repeats 2``: each judge's test-retest alpha with its CI.
2. (tests/graphs/test_recheck_graph.py) the chemistry request with ``--recheck``.
3. (tests/graphs/test_retrieval_novelty_graph.py) novelty compared with my papers, with ``--corpus``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from fractions import Fraction
from pathlib import Path

import numpy as np

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.metric_pool.reliability import alpha_ci
from sgieval.tests.conftest import FIXTURES
from sgieval.tests.metric_pool.test_reliability import hand_alpha

TEXT_A, TEXT_B = "A careful answer with its assumptions stated.", "B: a guess."
IDS = ["jsonl:sample_qa/q1", "jsonl:sample_qa/q2", "jsonl:sample_qa/3"]


def rubric_reply(scores: dict[str, dict[str, list[int]]]):
    """A mock-server reply function: the judge (the request's model) scores every criterion of the rubric prompt
    with the next number of ``scores[model][answer under review]`` for that (model, answer, task), in call order."""
    counters: dict[tuple[str, str, str], int] = {}
    lock = threading.Lock()

    def reply(body: dict, index: int) -> str:
        user = "\n".join(str(m.get("content")) for m in body["messages"] if m.get("role") == "user")
        names = re.findall(
            r"^- (.+?) \(weight [^)]*\):", "\n".join(str(m.get("content")) for m in body["messages"]), flags=re.M
        )
        text = TEXT_A if TEXT_A in user else TEXT_B
        key = (body["model"], text, user.split("<<<END_TASK>>>")[0])
        with lock:
            n = counters.get(key, 0)
            counters[key] = n + 1
        seq = scores[body["model"]][text]
        score = seq[min(n, len(seq) - 1)]
        return json.dumps(
            {"scores": [{"criterion": c, "score": score, "rationale": "r", "evidence": []} for c in names]}
        )

    return reply


def ask(tmp_path: Path, mock: MockOpenAI, judges: list[str], *extra: str) -> str:
    for name, text in (("gpt-a", TEXT_A), ("other-b", TEXT_B)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"item_id": i, "text": text}) + "\n" for i in IDS))
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "sgieval.cli",
            "ask",
            "Which model is most rigorous?",
            "-b",
            str(FIXTURES / "jsonl" / "sample_qa.jsonl"),
            "--models",
            f"replay:{tmp_path / 'gpt-a.jsonl'},replay:{tmp_path / 'other-b.jsonl'}",
            "--judge",
            ",".join(judges),
            "--base-url",
            mock.url,
            "--tools",
            "",
            "--out",
            str(tmp_path / "runs"),
            "--yes",
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return next((tmp_path / "runs").glob("*/report.md")).read_text()


def test_ask_with_three_judges_reports_their_reliability(tmp_path):
    scores = {
        "judge-1": {TEXT_A: [8], TEXT_B: [4]},
        "judge-2": {TEXT_A: [7], TEXT_B: [5]},
        "gpt-a": {TEXT_A: [9], TEXT_B: [4]},
    }
    with MockOpenAI(replies=rubric_reply(scores)) as mock:
        report = ask(tmp_path, mock, ["openai:judge-1", "openai:judge-2", "openai:gpt-a"], "--allow-self-judge")
        assert mock.stats()["served"] == 18  # 3 judges x 3 items x 2 targets, one call each
    answer, section = report.split("## Run")[0], report.split("## Judge reliability")[1].split("\n## ")[0]
    assert "| judge | openai:judge-1, openai:judge-2, openai:gpt-a |" in report  # the report names the judges
    # rigor value per judge = criterion score x 10 (equal weights); 6 units (3 items x 2 targets):
    # gpt-a (80, 70, 90), other-b (40, 50, 40).  By hand (Krippendorff 2011, interval): ordered-pair squared
    # differences per unit 1200 / (3 - 1) = 600 (gpt-a) and 400 / 2 = 200 (other-b); D_o = (3 * 600 + 3 * 200) / 18
    # = 400/3; the 18 values have squared deviations 6850 in all, D_e = 2 * 18 * 6850 / (18 * 17) = 41100/51;
    # alpha = 1 - (400/3) / (41100/51) = 343/411 = 0.83
    units = [[90, 80, 70]] * 3 + [[40, 40, 50]] * 3  # judge order: gpt-a, judge-1, judge-2 (sorted)
    assert hand_alpha(units) == Fraction(343, 411)
    lo, hi = alpha_ci(np.array(units, dtype=float).T, "interval", n_resamples=1000, seed=0)
    assert (
        f"| rigor | interval | openai:gpt-a, openai:judge-1, openai:judge-2 | 6 | 0.83 | {lo:.2f} to {hi:.2f} |"
        in section
    )
    # 0.83 >= 0.800 but the CI reaches below 0.667 with 6 units: not established, said in the Answer too
    assert lo < 0.667
    assert f"On rigor, Krippendorff's alpha across 3 judges is 0.83 (95% CI {lo:.2f} to {hi:.2f})" in answer
    assert "its CI reaches below 0.667" in answer
    # offsets from the unit means 80 and 130/3: gpt-a (+10 x 3, 40 - 130/3 = -10/3 x 3) -> 10/3 = 3.33;
    # judge-1 (0 x 3, -10/3 x 3) -> -5/3 = -1.67; judge-2 (-10 x 3, 50 - 130/3 = 20/3 x 3) -> -5/3 = -1.67
    assert "| openai:gpt-a | 3.33 |" in section
    assert "| openai:judge-1 | -1.67 |" in section and "| openai:judge-2 | -1.67 |" in section
    # leave-one-judge-out: gpt-a stays first whichever judge is dropped
    for j in ("openai:gpt-a", "openai:judge-1", "openai:judge-2"):
        assert f"| {j} | replay:gpt-a > replay:other-b | no | no |" in section
    # self-preference: the judge openai:gpt-a on its own answers (replay:gpt-a, --allow-self-judge) gives 90
    # against the others' (80 + 70) / 2 = 75; on other-b (another model) there is no row
    # +15 on each of the 3 units: a CI without variation decides nothing, and the exact sign-flip test over
    # 2**3 = 8 patterns gives p = 2/8 = 0.25: not significant
    assert "| openai:gpt-a | replay:gpt-a | gpt-a | 15.00 | no variation over 3 units | 3 | no |" in section
    assert "| openai:gpt-a | replay:other-b |" not in section
    assert "Self-preference: openai:gpt-a scores replay:gpt-a" not in answer


def test_ask_with_judge_repeats_reports_test_retest_per_judge(tmp_path):
    # two judges asked twice per item; judge-1 changes its mind on gpt-a's answers (8 then 6), judge-2 never does
    scores = {"judge-1": {TEXT_A: [8, 6], TEXT_B: [4, 4]}, "judge-2": {TEXT_A: [7, 7], TEXT_B: [5, 5]}}
    with MockOpenAI(replies=rubric_reply(scores), log_bodies=True) as mock:
        report = ask(tmp_path, mock, ["openai:judge-1", "openai:judge-2"], "--judge-repeats", "2")
        log = mock.log()
    assert len(log) == 24  # 2 judges x 6 units x 2 repeats: every repeat is its own call
    assert {json.loads(e["body"])["temperature"] for e in log} == {0.7}  # temperature 0 -> 0.7 for repeats
    config = json.loads(next((tmp_path / "runs").glob("*/config.json")).read_text())
    assert config["judge_repeats"] == 2 and config["judge_temperature"] == 0.7
    assert "| judge | openai:judge-1, openai:judge-2 (each asked 2 times per judged item) |" in report
    section = report.split("## Judge reliability")[1].split("\n## ")[0]
    # judge-1's repeats per unit: (80, 60) x 3 for gpt-a, (40, 40) x 3 for other-b.  By hand: ordered-pair squared
    # differences 2 * 400 = 800 / (2 - 1) for each gpt-a unit, 0 for other-b: D_o = 2400 / 12 = 200; the 12 values
    # (mean 55) have squared deviations 3 * (625 + 25) + 6 * 225 = 3300, D_e = 2 * 12 * 3300 / (12 * 11) = 600;
    # alpha = 1 - 200 / 600 = 2/3 = 0.67 (tentative only)
    r1 = [[80, 60]] * 3 + [[40, 40]] * 3
    assert hand_alpha(r1) == Fraction(2, 3)
    lo1, hi1 = alpha_ci(np.array(r1, dtype=float).T, "interval", n_resamples=1000, seed=0)
    assert f"| openai:judge-1 | 2 | 6 | 0.67 | {lo1:.2f} to {hi1:.2f} |" in section
    # judge-2 repeats itself exactly: D_o = 0, alpha = 1, and every bootstrap resample with variation is 1: an
    # interval without variation, said so
    assert "| openai:judge-2 | 2 | 6 | 1.00 | no variation over 6 units |" in section
    # the value uses each judge's mean over its repeats: gpt-a units (70 + 70) / 2 = 70, other-b (40 + 50) / 2 = 45
    assert "| 1 | replay:gpt-a | 70.00 |" in report and "| 2 | replay:other-b | 45.00 |" in report
    # inter-judge agreement on the repeat means: units (70, 70) x 3 and (40, 50) x 3; by hand D_o = 3 * 200 / 12 = 50,
    # the 12 values (mean 57.5) have squared deviations 6 * 156.25 + 3 * 306.25 + 3 * 56.25 = 2025,
    # D_e = 2 * 12 * 2025 / 132 = 4050/11; alpha = 1 - 50 / (4050/11) = 1 - 11/81 = 70/81 = 0.86
    assert hand_alpha([[70, 70]] * 3 + [[40, 50]] * 3) == Fraction(70, 81)
    assert "| rigor | interval | openai:judge-1, openai:judge-2 | 6 | 0.86 |" in section
