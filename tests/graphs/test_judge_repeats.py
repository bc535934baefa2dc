"""``--judge-repeats k``: each judge asked k times per judged item; the score's value is the
panel mean of each judge's mean over its repeats; every repeat is recorded (a failed one as a failure with its
reason, never a zero); each repeat is its own call-cache entry; the report's Judge reliability section gives each
judge's test-retest alpha with its CI.  Scripted judges, hand-computed values."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
from fractions import Fraction

import numpy as np
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

import sgieval
from sgieval.core import Item, Response, RunConfig
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.reliability import alpha_ci, reliability
from sgieval.metric_pool.rubric import RubricMetric
from sgieval.metric_pool.rubrics import find_rubric
from sgieval.models import cache
from sgieval.models.base import NamedModel, repeat_of
from sgieval.tests.conftest import FIXTURES
from sgieval.tests.metric_pool.test_reliability import hand_alpha

TEXT_A, TEXT_B = "A careful answer with its assumptions stated.", "B: a guess."


class SequenceJudge(BaseChatModel):
    """A rubric judge that scores every criterion of the prompt with the next number of
    ``script[answer under review]`` for that (answer, task) pair, in call order; ``None`` replies text that is
    no JSON (a parse failure).  ``calls`` counts the calls made."""

    script: dict
    counters: dict
    calls: list

    @property
    def _llm_type(self) -> str:
        return "scripted-sequence-judge"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        user = "\n".join(str(m.content) for m in messages if m.type == "human")
        names = re.findall(r"^- (.+?) \(weight [^)]*\):", "\n".join(str(m.content) for m in messages), flags=re.M)
        text = next(t for t in self.script if t in user)
        task = user.split("<<<END_TASK>>>")[0]
        with _LOCK:
            n = self.counters.get((text, task), 0)
            self.counters[(text, task)] = n + 1
            self.calls.append(text)
        seq = self.script[text]
        score = seq[min(n, len(seq) - 1)]
        reply = (
            "I cannot decide."
            if score is None
            else json.dumps(
                {"scores": [{"criterion": c, "score": score, "rationale": "r", "evidence": []} for c in names]}
            )
        )
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


_LOCK = threading.Lock()


def judge(name: str, script: dict, **params) -> NamedModel:
    chat = SequenceJudge(script=script, counters={}, calls=[])
    return NamedModel(name=name, role="judge", chat=chat, provider=f"scripted-{name}", params=params)


RIGOR = find_rubric("rigor")
ITEM = Item(id="x/1", benchmark="jsonl:x", task="short_answer", prompt="Explain why the sky is blue.")
ITEM2 = Item(id="x/2", benchmark="jsonl:x", task="short_answer", prompt="Explain why leaves are green.")


def _score(judges, k, item=ITEM, text=TEXT_A):
    ctx = ScoringContext(judges=judges, options={"judge_repeats": k, "tool_budget": 0})
    [s] = asyncio.run(RubricMetric(RIGOR).score(item, Response(item_id=item.id, model="replay:m", text=text), ctx))
    return s


def test_value_is_the_panel_mean_of_each_judges_repeat_mean_and_a_failed_repeat_is_recorded():
    # j1: repeats 8, (no JSON three times: the repeat fails after its 3 attempts), 7 -> 80, failed, 70
    # j2: 6, 6, 6 -> 60, 60, 60.  Every criterion gets the same score, so a rubric value is 10 x that score.
    # By hand: j1's mean over its repeats that parsed = (80 + 70) / 2 = 75; j2's = 60; value = (75 + 60) / 2 = 67.5
    # (the mean over all five draws, (80 + 70 + 3 x 60) / 5 = 66, is NOT what the value uses).
    j1 = judge("scripted:j1", {TEXT_A: [8, None, 7, None, None]})
    j2 = judge("scripted:j2", {TEXT_A: [6]})
    s = _score([j1, j2], 3)
    assert s.status == "ok" and s.value == pytest.approx(67.5)
    assert len(j1.chat.calls) == 5 and len(j2.chat.calls) == 3  # 3 repeats + 2 retries of the failing one
    reps = s.details["judge_repeats"]
    assert sorted(reps) == ["scripted:j1", "scripted:j2"] and reps["scripted:j2"] == [60.0, 60.0, 60.0]
    # which repeat index drew which reply depends on call order; the failed one is None, never 0
    assert sorted(v for v in reps["scripted:j1"] if v is not None) == [70.0, 80.0]
    assert reps["scripted:j1"].count(None) == 1 and 0.0 not in reps["scripted:j1"]
    [(idx, why)] = s.details["repeat_failures"]["scripted:j1"].items()
    assert reps["scripted:j1"][int(idx)] is None and "scripted:j1" not in s.details["repeat_failures"].get("x", {})
    assert "3 attempt" in why or "attempt" in why
    assert s.details["repeats"] == 3 and s.details["n_judges"] == 2
    assert s.details["per_judge"]["scripted:j1"]["logical self-consistency"] == pytest.approx(7.5)
    # every repeat's judge reply is evidence, with its index
    replies = [e for e in s.evidence if e.kind == "judge_reply"]
    assert sorted((e.judge, e.details["repeat"]) for e in replies) == [
        ("scripted:j1", 0),
        ("scripted:j1", 1),
        ("scripted:j1", 2),
        ("scripted:j2", 0),
        ("scripted:j2", 1),
        ("scripted:j2", 2),
    ]
    assert [e.error is not None for e in replies if e.judge == "scripted:j1"].count(True) == 1
    assert "(repeat " in s.rationale and "Judges without a valid reply" in s.rationale


def test_one_repeat_keeps_the_single_call_record():
    s = _score([judge("scripted:j1", {TEXT_A: [8]})], 1)
    assert s.value == pytest.approx(80.0)
    assert "judge_repeats" not in s.details and "repeats" not in s.details
    assert all("repeat" not in e.details for e in s.evidence)


def test_test_retest_alpha_with_a_failed_repeat_as_missing_value():
    j1 = judge("scripted:j1", {TEXT_A: [8, None, 7, None, None], TEXT_B: [5, 5, 4]})
    j2 = judge("scripted:j2", {TEXT_A: [6], TEXT_B: [6]})
    scores = [_score([j1, j2], 3, ITEM, TEXT_A), _score([j1, j2], 3, ITEM2, TEXT_B)]
    rel = reliability(scores, RIGOR, n_resamples=200)
    # j1's repeats per unit: (80, 70) (the failed repeat missing) and (50, 50, 40).  By hand (Krippendorff 2011,
    # interval, pairable values only): ordered-pair squared differences / (m_u - 1): 200 / 1 = 200 and
    # 400 / 2 = 200, n = 5 values, D_o = 400 / 5 = 80; values 80, 70, 50, 50, 40 (mean 58) have squared
    # deviations 484 + 144 + 64 + 64 + 324 = 1080, D_e = 2 * 5 * 1080 / (5 * 4) = 540;
    # alpha = 1 - 80 / 540 = 23/27 = 0.852
    assert hand_alpha([[80, 70], [50, 50, 40]]) == Fraction(23, 27)
    assert rel.retest["scripted:j1"] == pytest.approx(23 / 27)
    assert rel.retest["scripted:j2"] is None  # 60 every time: no variation, alpha undefined (never 1 or 0)
    assert rel.retest_units["scripted:j1"] == (2, 3)


def test_each_repeat_is_its_own_cache_entry(fresh_call_cache):
    # a judge at temperature 0 would be served from the cache: the repeat index is part of the key from 1 on
    j = judge("scripted:cached", {TEXT_A: [8, 6, 7]}, temperature=0)
    first = _score([j], 3)
    assert len(j.chat.calls) == 3
    assert sorted(first.details["judge_repeats"]["scripted:cached"]) == [60.0, 70.0, 80.0]
    again = _score([j], 3)
    assert len(j.chat.calls) == 3  # all three repeats answered by the cache, each with its own reply
    assert again.details["judge_repeats"] == first.details["judge_repeats"]
    msgs = [SystemMessage(content="s"), HumanMessage(content="u")]
    keys = [cache.cache_key_for(repeat_of(j, r), msgs) for r in range(3)]
    assert len(set(keys)) == 3 and keys[0] == cache.cache_key_for(j, msgs)
    assert cache.model_params(repeat_of(j, 2))["repeat"] == 2 and "repeat" not in cache.model_params(j)


def test_run_config_validates_judge_repeats():
    assert RunConfig.checked(run_id="r", judge_repeats=3).judge_temperature == 0.7  # 0 would only repeat itself
    assert RunConfig.checked(run_id="r", judge_repeats=3, judge_temperature=1.1).judge_temperature == 1.1
    assert RunConfig.checked(run_id="r").judge_temperature == 0.0
    with pytest.raises(sgieval.InputError, match="judge_repeats: must be an integer from 1 to 20"):
        sgieval.evaluate("x", judge_repeats=0)


def test_cli_rejects_a_bad_judge_repeats(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "sgieval.cli",
            "ask",
            "Which model is most rigorous?",
            "--judge-repeats",
            "0",
            "-b",
            str(FIXTURES / "jsonl" / "sample_qa.jsonl"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert res.returncode == 2
    assert "--judge-repeats: must be an integer from 1 to 20 (times each judge is asked per item), got 0" in res.stderr


def test_api_run_reports_test_retest_alpha_per_judge(tmp_path):
    ids = ["jsonl:sample_qa/q1", "jsonl:sample_qa/q2", "jsonl:sample_qa/3"]
    for name, text in (("gpt-a", TEXT_A), ("other-b", TEXT_B)):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(json.dumps({"item_id": i, "text": t}) + "\n" for i, t in zip(ids, [text] * 3))
        )
    solo = judge("scripted:solo", {TEXT_A: [8, 8, 7], TEXT_B: [4, 5, 4]})
    run = sgieval.evaluate(
        "Which model is most rigorous?",
        benchmark=str(FIXTURES / "jsonl" / "sample_qa.jsonl"),
        models=[f"replay:{tmp_path / 'gpt-a.jsonl'}", f"replay:{tmp_path / 'other-b.jsonl'}"],
        judge=[solo],
        judge_repeats=3,
        out_dir=tmp_path / "runs",
        bootstrap_resamples=999,
    )
    assert run.config.judge_repeats == 3
    assert json.loads((run.run_dir / "config.json").read_text())["judge_repeats"] == 3
    assert len(solo.chat.calls) == 18  # 3 items x 2 models x 3 repeats
    rigor = {(s.item_id, s.model): s for s in run.scores if s.metric == "rigor"}
    # each unit's value is the judge's mean over its repeats: (80 + 80 + 70) / 3 and (40 + 50 + 40) / 3
    for (i, m), s in rigor.items():
        assert s.value == pytest.approx(230 / 3 if "gpt-a" in m else 130 / 3)
        assert sorted(s.details["judge_repeats"]["scripted:solo"]) == (
            [70.0, 80.0, 80.0] if "gpt-a" in m else [40.0, 40.0, 50.0]
        )
    # test-retest by hand: units (80, 80, 70) x 3 and (40, 50, 40) x 3; ordered-pair squared differences per
    # unit 400, / (3 - 1) = 200, D_o = 6 * 200 / 18 = 200/3; the 18 values (mean 60) have squared deviations
    # 6 * 900 = 5400, D_e = 2 * 18 * 5400 / (18 * 17) = 10800/17; alpha = 1 - (200/3) / (10800/17) = 145/162
    units = [[80, 80, 70]] * 3 + [[40, 50, 40]] * 3
    assert hand_alpha(units) == Fraction(145, 162)
    lo, hi = alpha_ci(np.array(units, dtype=float).T, "interval", n_resamples=1000, seed=0)
    report = run.report.read_text()
    assert "each asked 3 times per judged item" in report
    section = report.split("## Judge reliability")[1].split("\n## ")[0]
    assert "one judge (scripted:solo) scored the items" in section and "| metric | level |" not in section
    assert f"| scripted:solo | 3 | 6 | {145 / 162:.2f} | {lo:.2f} to {hi:.2f} |" in section
    answer = report.split("## Run")[0]
    # 0.90 >= 0.800, but 6 units leave a CI reaching below 0.667: not established
    assert lo < 0.667
    assert (
        f"Test-retest agreement on rigor (Krippendorff's alpha between a judge's repeats; Krippendorff 2004 "
        f"thresholds): scripted:solo {145 / 162:.2f} (95% CI {lo:.2f} to {hi:.2f}) over 3 repeats, not "
        "established (its CI reaches below 0.667)."
    ) in answer
    assert (
        "On rigor one judge (scripted:solo) scored the items, so agreement between judges cannot be measured." in answer
    )
