"""A judge panel on "Which model is most rigorous?" on a JSONL benchmark, two replayed target
models, a panel of three scripted judges; the report's Judge reliability section shows alpha with its CI, the
per-judge offsets, leave-one-judge-out and the self-preference check, equal to the hand computation."""

from __future__ import annotations

import asyncio
import json
import re
from fractions import Fraction
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from sgieval.core import RunConfig
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.models.base import NamedModel
from sgieval.tests.conftest import FIXTURES
from sgieval.tests.metric_pool.test_reliability import hand_alpha

TEXT_A, TEXT_B = "A careful answer with its assumptions stated.", "B: a guess."
# criterion score each judge gives to every criterion of the rigor rubric, by the answer it reads
SCRIPT = {
    "scripted:judge-1": {TEXT_A: 8, TEXT_B: 4},
    "scripted:judge-2": {TEXT_A: 7, TEXT_B: 5},
    "openai:gpt-a": {TEXT_A: 9, TEXT_B: 4},
}


class RubricJudge(BaseChatModel):
    """Scores every criterion listed in the rubric prompt with ``SCRIPT[name][answer under review]``."""

    name_: str

    @property
    def _llm_type(self) -> str:
        return "scripted-rubric-judge"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        user = "\n".join(str(m.content) for m in messages if m.type == "human")
        names = re.findall(r"^- (.+?) \(weight [^)]*\):", "\n".join(str(m.content) for m in messages), flags=re.M)
        score = SCRIPT[self.name_][TEXT_A] if TEXT_A in user else SCRIPT[self.name_][TEXT_B]
        reply = json.dumps(
            {"scores": [{"criterion": n, "score": score, "rationale": "r", "evidence": []} for n in names]}
        )
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def test_three_judge_panel_reliability_section(tmp_path: Path):
    bench = FIXTURES / "jsonl" / "sample_qa.jsonl"
    ids = ["jsonl:sample_qa/q1", "jsonl:sample_qa/q2", "jsonl:sample_qa/3"]
    for name, text in (("gpt-a", TEXT_A), ("other-b", TEXT_B)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"item_id": i, "text": text}) + "\n" for i in ids))
    judges = [NamedModel(name=n, role="judge", chat=RubricJudge(name_=n), provider=f"scripted-{n}") for n in SCRIPT]
    cfg = RunConfig(
        run_id="panel",
        request="Which model is most rigorous?",
        benchmarks=[str(bench)],
        out_dir=str(tmp_path / "runs"),
        yes=True,
        bootstrap_resamples=999,
        models=[f"replay:{tmp_path / 'gpt-a.jsonl'}", f"replay:{tmp_path / 'other-b.jsonl'}"],
        judges=list(SCRIPT),
        allow_self_judge=True,
    )
    rt = make_runtime(cfg, judges=judges)
    state = asyncio.run(execute(rt))
    report = Path(state["report"]).read_text()
    assert state["metric_plan"]["primary"] == "rigor"

    # rubric value per judge = criterion score x 10 (equal weights); 3 items x 2 models = 6 units:
    # gpt-a units (80, 70, 90), other-b units (40, 50, 40)
    units = [[80, 70, 90]] * 3 + [[40, 50, 40]] * 3
    # by hand: within-unit squared differences over ordered pairs: gpt-a 2*(100+100+400) = 1200, / 2 = 600 each;
    # other-b 2*(100+0+100) = 400, / 2 = 200 each; D_o = (3*600 + 3*200) / 18 = 2400/18 = 400/3.
    # D_e: the 18 values have mean 1110/18 and sum of squared deviations 75300 - 1110^2/18 = 6850, so the sum over
    # ordered pairs is 2 * 18 * 6850 = 246600 and D_e = 246600 / (18 * 17) = 41100/51;
    # alpha = 1 - (400/3) / (41100/51) = 1 - 20400/123300 = 1 - 68/411 = 343/411 = 0.8345
    assert hand_alpha(units) == Fraction(343, 411)
    assert "## Judge reliability" in report
    assert f"| rigor | interval | openai:gpt-a, scripted:judge-1, scripted:judge-2 | 6 | {343 / 411:.2f} |" in report
    # 0.83 >= 0.800, but 6 units leave a CI reaching below 0.667: not established; said in the section and the Answer
    verdict = "On rigor, Krippendorff's alpha across 3 judges is 0.83"
    assert verdict in report and "its CI reaches below 0.667" in report
    answer = report.split("## Run")[0]
    assert verdict in answer
    # offsets: unit means 80 and 130/3; judge-1: (0 + 0 + 0 on gpt-a) and (40 - 130/3 = -10/3) -> mean -5/3 = -1.67
    assert "| scripted:judge-1 | -1.67 |" in report
    # gpt-a (judge): +10 on gpt-a, 40 - 130/3 = -10/3 on other-b -> mean 10/3 = 3.33
    assert "| openai:gpt-a | 3.33 |" in report
    # leave-one-judge-out: gpt-a stays first whichever judge is dropped
    assert "| openai:gpt-a | replay:gpt-a > replay:other-b | no | no |" in report
    # self-preference: the judge openai:gpt-a on its own answers (replay:gpt-a, allowed by allow_self_judge):
    # 90 - (80 + 70) / 2 = +15 on all 3 items; none on other-b (another model).  +15 on every unit: the bootstrap
    # CI shows no variation, so it supports no "significant" verdict
    assert "| openai:gpt-a | replay:gpt-a | gpt-a | 15.00 | no variation over 3 units | 3 | no |" in report
    assert "| openai:gpt-a | replay:other-b |" not in report
    assert "Self-preference: openai:gpt-a scores replay:gpt-a" not in answer
    assert "15.00 to 15.00" not in report
