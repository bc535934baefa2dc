"""Judge-reply types (METRICS.md D.17): strict score fields, verdict words, provider refusals.

Each kind of fault is run through the real metric with a scripted judge: a boolean score is a parse error
(retried, then ``judge_error``), never 1 or 10; ``Incorrect.`` is ``incorrect``; a refusal is one call, recorded as
``judge_error`` with its text.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from sgieval.core import Item, Response, judge_number, refusal_text, verdict_word
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.judge import ask_judge
from sgieval.metric_pool.rubric import RubricMetric
from sgieval.metric_pool.rubrics import load_rubric
from sgieval.metric_pool.sgi.deep_research import StepJudgement, StepLevelAccuracyMetric
from sgieval.metric_pool.sgi.dry_experiment import DryJudgement
from sgieval.metric_pool.sgi.reasoning import ReasoningValidityJudgement, ReasoningValidityMetric
from sgieval.models.base import NamedModel

RIGOR = [
    "logical self-consistency",
    "theory and literature grounding",
    "precise problem definition",
    "discipline-aligned terminology",
    "methodological soundness",
    "risk awareness",
]


class Counting(FakeMessagesListChatModel):
    """Scripted chat model that counts its calls."""

    calls: int = 0

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001
        self.calls += 1
        return super()._generate(messages, stop, run_manager, **kwargs)


def judge(*replies, name="openai:j") -> NamedModel:
    msgs = [r if isinstance(r, AIMessage) else AIMessage(content=r) for r in replies]
    return NamedModel(name=name, role="judge", chat=Counting(responses=msgs), provider=f"fake-{name}")


def rubric_reply(first_score) -> str:
    scores = [{"criterion": c, "score": 5, "rationale": "r", "evidence": []} for c in RIGOR]
    scores[0]["score"] = first_score
    return json.dumps({"scores": scores})


IDEA = Item(id="t/1", benchmark="t", task="idea_generation", prompt="Propose a way to raise graphene mobility.")
IDEA_RESP = Response(item_id="t/1", model="openai:target-a", text="Encapsulate graphene in hBN and anneal.")
MCQ = Item(
    id="sgi-bench/SGI_Reasoning_0000",
    benchmark="sgi-bench",
    task="experimental_reasoning",
    prompt="p",
    reference={"answer": 1, "options": ["a", "b"], "steps": ["Read.", "Compare."]},
    metadata={"question": "Which?"},
)
MCQ_RESP = Response(item_id=MCQ.id, model="openai:target-a", text=r"Peaks... \boxed{B}")


# ------------------------------------------------------------------ score fields
@pytest.mark.parametrize(
    "value,reason",
    [
        (True, "score must be a number, got the boolean True"),
        (False, "score must be a number, got the boolean False"),
        (None, "score must be a number, got null None"),
        ("high", "score must be a number, got the string 'high'"),
        ("7/10", "score must be a number, got the string '7/10'"),
        ([7], "score must be a number, got a list [7]"),
        (float("nan"), "score must be a finite number, got nan"),
    ],
)
def test_judge_number_rejects_what_is_not_a_number(value, reason):
    with pytest.raises(ValueError) as e:
        judge_number(value, integer=False)
    assert str(e.value) == reason


def test_judge_number_accepts_numbers_and_numeric_strings():
    assert judge_number(7, integer=True) == 7 and judge_number(7.0, integer=True) == 7
    assert judge_number(" 7 ", integer=True) == 7 and judge_number("6.5", integer=False) == 6.5
    with pytest.raises(ValueError, match=r"^score must be an integer, got the decimal 7.5$"):
        judge_number(7.5, integer=True)


@pytest.mark.parametrize("bad", [True, "true", None, "eight"])
async def test_rubric_boolean_or_word_score_is_a_parse_error_never_a_score(bad):
    # three replies with the bad first criterion: retried, then judge_error (not 1/10 -> rubric value 10.0)
    j = judge(*[rubric_reply(bad)] * 3)
    [s] = await RubricMetric(load_rubric("rigor")).score(IDEA, IDEA_RESP, ScoringContext(judges=[j]))
    assert (s.status, s.value) == ("judge_error", None)
    assert "score must be a number" in s.error and j.chat.calls == 3


async def test_rubric_boolean_then_number_is_retried_and_scored():
    j = judge(rubric_reply(True), rubric_reply(8))
    [s] = await RubricMetric(load_rubric("rigor")).score(IDEA, IDEA_RESP, ScoringContext(judges=[j]))
    # equal weights: (8 + 5 x 5) / 6 = 5.5 on 0-10, x 10 = 55.0
    assert (s.status, s.value) == ("ok", pytest.approx(55.0))
    assert j.chat.calls == 2


@pytest.mark.parametrize("bad", ["true", "false", '"high"', "null", "7.5"])
async def test_reasoning_validity_boolean_score_is_a_judge_error(bad):
    reply = f'{{"rationale": "fine", "score": {bad}}}'
    j = judge(reply, reply, reply)
    [s] = await ReasoningValidityMetric().score(MCQ, MCQ_RESP, ScoringContext(judges=[j]))
    assert (s.status, s.value) == ("judge_error", None)  # never 1 (true) or 0 (false) with status ok
    assert "unparsable judge reply after 3 attempt(s)" in s.error


def test_schemas_reject_booleans_directly():
    with pytest.raises(ValueError, match="got the boolean True"):
        ReasoningValidityJudgement.model_validate({"score": True})
    assert ReasoningValidityJudgement.model_validate({"score": "9"}).score == 9


# ------------------------------------------------------------------ verdict words
@pytest.mark.parametrize(
    "word,want",
    [
        ("Incorrect.", "incorrect"),
        (" CORRECT! ", "correct"),
        ("incorrect;", "incorrect"),
        ("Correct\u3002", "correct"),  # an ideographic full stop
        ("not sure", "not sure"),  # left for the schema to reject
    ],
)
def test_verdict_word(word, want):
    assert verdict_word(word) == want


def test_verdict_schemas_read_trailing_punctuation():
    assert DryJudgement.model_validate({"judgment": "Incorrect."}).judgment == "incorrect"
    assert DryJudgement.model_validate({"judgment": "Correct!"}).judgment == "correct"
    assert StepJudgement.model_validate({"judge": "Incorrect."}).judge == "incorrect"
    with pytest.raises(ValueError):
        DryJudgement.model_validate({"judgment": "mostly correct."})


async def test_sla_counts_incorrect_with_a_full_stop_as_incorrect():
    it = Item(
        id="sgi-bench/SGI_DeepResearch_0000",
        benchmark="sgi-bench",
        task="deep_research",
        prompt="Q?",
        reference={"answer": "0.25", "steps": ["a", "b"]},
        metadata={"question": "Q?"},
    )
    reply = json.dumps(
        [
            {"solution_step": "s1", "reason": "r", "judge": "Correct."},
            {"solution_step": "s2", "reason": "r", "judge": "Incorrect."},
            {"solution_step": "s3", "reason": "r", "judge": "incorrect"},
        ]
    )
    [s] = await StepLevelAccuracyMetric().score(
        it,
        Response(item_id=it.id, model="openai:t", text="<answer>0.3</answer>"),
        ScoringContext(judges=[judge(reply)]),
    )
    assert (s.status, s.value) == ("ok", pytest.approx(1 / 3))


# ------------------------------------------------------------------ provider refusals
REFUSAL = "I'm sorry, but I can't help with grading this."


@pytest.mark.parametrize(
    "message",
    [
        AIMessage(content="", additional_kwargs={"refusal": REFUSAL}),  # OpenAI chat completions
        AIMessage(content=[{"type": "refusal", "refusal": REFUSAL}]),  # the Responses API's content block
        AIMessage(content=REFUSAL, response_metadata={"stop_reason": "refusal"}),  # Anthropic
    ],
)
def test_refusal_text_of_each_provider_shape(message):
    assert refusal_text(message) == REFUSAL


def test_ordinary_replies_are_no_refusal():
    assert refusal_text(AIMessage(content='{"score": 3}')) is None
    assert refusal_text(AIMessage(content="x", additional_kwargs={"refusal": None})) is None


async def test_refusal_is_asked_once_and_recorded_with_its_text():
    refused = AIMessage(content="", additional_kwargs={"refusal": REFUSAL})
    j = judge(refused, '{"rationale": "fine", "score": 7}')
    out = await ask_judge(j, [HumanMessage(content="rate")], ReasoningValidityJudgement)
    assert (out.parsed, out.refused, out.attempts, j.chat.calls) == (None, True, 1, 1)
    assert out.error == f"refused: {REFUSAL}" and out.raw == [REFUSAL]
    assert out.evidence().flags == ["refused"]


async def test_a_refusing_rv_judge_is_a_judge_error_with_the_refusal_not_three_parse_errors():
    refused = AIMessage(content="", additional_kwargs={"refusal": REFUSAL})
    j = judge(refused, refused, refused)
    [s] = await ReasoningValidityMetric().score(MCQ, MCQ_RESP, ScoringContext(judges=[j]))
    assert (s.status, s.value, s.error) == ("judge_error", None, f"openai:j: refused: {REFUSAL}")
    assert j.chat.calls == 1
    assert s.evidence[0].raw == [REFUSAL] and "refused" in s.evidence[0].flags


async def test_a_refusing_rubric_judge_is_a_judge_error_with_the_refusal():
    refused = AIMessage(content=REFUSAL, response_metadata={"stop_reason": "refusal"})
    j = judge(refused, rubric_reply(8))
    [s] = await RubricMetric(load_rubric("rigor")).score(IDEA, IDEA_RESP, ScoringContext(judges=[j]))
    assert (s.status, s.value) == ("judge_error", None)
    assert f"refused: {REFUSAL}" in s.error and j.chat.calls == 1
