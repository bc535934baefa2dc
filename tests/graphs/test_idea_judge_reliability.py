"""SGI-Bench idea generation (the paper's three-judge setting, METRICS.md A.2), through
the Python API: a judge that always picks the idea shown first is position-biased, a judge that picks the longer
idea is not; the report's Judge reliability section gives the flip share of each dimension and each judge's
offset, from hand computation."""

from __future__ import annotations

import shutil
from fractions import Fraction

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

import sgieval
from sgieval.models.base import NamedModel
from sgieval.tests.conftest import FIXTURES
from sgieval.tests.graphs.test_rigor_scripted import DIMENSIONS, RESPONSES, block
from sgieval.tests.metric_pool.test_reliability import hand_alpha


class VoteJudge(BaseChatModel):
    """Idea-generation judge: ``first`` always votes "Win A" (the idea shown first); ``longer`` votes for the
    longer of the two ideas, whatever their order."""

    how: str

    @property
    def _llm_type(self) -> str:
        return "scripted-vote-judge"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        user = "\n".join(str(m.content) for m in messages if m.type == "human")
        a, b = block(user, "HYPOTHESIS_A") or "", block(user, "HYPOTHESIS_B") or ""
        win = "Win A" if self.how == "first" or len(a) >= len(b) else "Win B"
        reply = "\n".join(f"{d}: [{win}] because of it." for d in DIMENSIONS)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def test_position_biased_judge_in_the_report(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "sgi", data / "sgi-bench")
    judges = [
        NamedModel(name=f"scripted:{h}", role="judge", chat=VoteJudge(how=h), provider=f"s-{h}")
        for h in ("first", "longer")
    ]
    run = sgieval.evaluate(
        "Which model has the most novel ideas in idea generation?",
        benchmark="sgi-bench",
        data_dir=data,
        out_dir=tmp_path / "runs",
        judge=judges,
        bootstrap_resamples=999,
        models=[f"replay:{RESPONSES / 'fixture-model-a.jsonl'}", f"replay:{RESPONSES / 'fixture-model-b.jsonl'}"],
    )
    wins = [s for s in run.scores if s.metric == "idea_novelty_win"]
    assert len(wins) == 4  # 2 items x 2 target models
    # "first" votes reference (A) then generated (A after the swap): 1 of 2 -> 50 on every unit; "longer" votes
    # for the longer idea in both orders: the formatted reference ideas of the fixtures are longer than both
    # models' ideas, so 0 on every unit
    assert (
        sorted(
            (s.details["judge_values"]["scripted:first"], s.details["judge_values"]["scripted:longer"]) for s in wins
        )
        == [(50.0, 0.0)] * 4
    )
    report = run.report.read_text()
    section = report.split("## Judge reliability")[1].split("\n## ")[0]
    part = section.split("### idea_novelty_win")[1].split("### ")[0]
    # alpha by hand: 4 units (50, 0): ordered-pair squared differences 2 * 2500 / (2 - 1) = 5000 each,
    # D_o = 4 * 5000 / 8 = 2500; the 8 values (mean 25) have squared deviations 8 * 625 = 5000,
    # D_e = 2 * 8 * 5000 / (8 * 7) = 10000/7; alpha = 1 - 2500 / (10000/7) = 1 - 7/4 = -0.75
    assert hand_alpha([[50, 0]] * 4) == Fraction(-3, 4)
    # the same (50, 0) on every unit: every bootstrap resample gives -0.75, an interval without variation
    assert (
        "| idea_novelty_win | interval | scripted:first, scripted:longer | 4 | -0.75 | no variation over 4 units |"
    ) in part
    # offsets from the unit mean 25: first +25, longer -25 on every unit
    assert "| scripted:first | 25.00 | no variation over 4 units | 4 |" in part
    assert "| scripted:longer | -25.00 | no variation over 4 units | 4 |" in part
    # per (judge, item, model) pair: "first" flips all 4 of its pairs, "longer" none -> 4 of 8
    assert "Position bias: 50.0% of 8 order-swapped vote pairs changed verdict." in part
    # the Answer's verdict is on the votes behind the ranking metric idea_novelty
    answer = report.split("## Run")[0]
    # 2 items: the sign-flip test cannot go below p = 0.5, so no winner
    assert (
        "No model is established as first by idea_novelty on 2 items (task open_creativity/idea_generation): "
        "replay:fixture-model-b leads with mean 35.03 per item"
        in answer
        and "but the paired test does not separate it from replay:fixture-model-a (p = 0.5000)." in answer
    )
    assert (
        "On idea_novelty_win, Krippendorff's alpha across 2 judges is -0.75 over 4 units, and its bootstrap 95% CI "
        "is degenerate (every resample of the 4 units gives alpha -0.75), so it measures no uncertainty, and 4 "
        "units are too few to establish the judges' agreement."
    ) in answer
