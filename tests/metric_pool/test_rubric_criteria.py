"""Rubric criteria as any Unicode text, strict criterion sets in judge replies, and rubric YAML checks."""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from sgieval.core import Criterion, InputError, Item, Response, Rubric, criterion_key
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.rubric import RubricMetric, _judgement_schema
from sgieval.models.base import NamedModel

ITEM = Item(id="t/1", benchmark="t", task="idea_generation", prompt="Propose a design.")
RESP = Response(item_id="t/1", model="openai:target-a", text="A design.")


def rubric(*names: str, weights: dict | None = None) -> Rubric:
    return Rubric(
        name="r",
        tasks=["idea_generation"],
        criteria=[Criterion(name=n, description=f"d {n}") for n in names],
        weights=weights or {},
    )


def judge(replies: list[dict | str]) -> NamedModel:
    msgs = [AIMessage(content=r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) for r in replies]
    return NamedModel(name="j", role="judge", chat=FakeMessagesListChatModel(responses=msgs), provider="fake-j")


def scores(**by_name: float) -> dict:
    return {"scores": [{"criterion": c, "score": s, "rationale": "r"} for c, s in by_name.items()]}


async def _score(r: Rubric, replies: list) -> object:
    [s] = await RubricMetric(r, max_attempts=3).score(ITEM, RESP, ScoringContext(judges=[judge(replies)]))
    return s


@pytest.mark.parametrize(
    "names,values,want",
    [
        (("逻辑严谨性", "可行性"), (9, 2), 55.0),  # the input: (9 + 2) / 2 x 10
        (("Präzision", "Durchführbarkeit", "Klarheit"), (10, 4, 7), 70.0),  # accented names: 21 / 3 x 10
        (("новизна", "ясность"), (3, 8), 55.0),
    ],
)
async def test_unicode_criteria_are_distinct(names, values, want):
    s = await _score(rubric(*names), [scores(**dict(zip(names, values)))])
    assert s.status == "ok" and s.value == pytest.approx(want)
    assert s.details["criteria"] == dict(zip(names, map(float, values)))


async def test_unicode_weighted():
    # (3 x 9 + 1 x 2) / 4 x 10 = 72.5
    s = await _score(
        rubric("逻辑严谨性", "可行性", weights={"逻辑严谨性": 3.0, "可行性": 1.0}),
        [scores(**{"逻辑严谨性": 9, "可行性": 2})],
    )
    assert s.value == pytest.approx(72.5)


@pytest.mark.parametrize(
    "bad",
    [
        scores(**{"逻辑严谨性": 9, "可行性": 2, "新颖性": 10}),  # a criterion the rubric lacks
        scores(**{"逻辑严谨性": 9}),  # a missing criterion
        {
            "scores": [
                {"criterion": "逻辑严谨性", "score": 9},
                {"criterion": "逻辑严谨性 ", "score": 10},
                {"criterion": "可行性", "score": 2},
            ]
        },  # one criterion twice
        scores(**{"novelty": 10, "clarity": 10}),  # none of the rubric's criteria
    ],
)
async def test_wrong_criterion_set_is_retried_then_judge_error_never_a_score(bad):
    s = await _score(rubric("逻辑严谨性", "可行性"), [bad] * 3)
    assert s.status == "judge_error" and s.value is None
    assert "score exactly these criteria" in s.error


async def test_wrong_criterion_set_then_right_one_is_retried():
    s = await _score(
        rubric("逻辑严谨性", "可行性"),
        [scores(**{"逻辑严谨性": 9, "可行性": 2, "extra": 10}), scores(**{"逻辑严谨性": 9, "可行性": 2})],
    )
    assert s.status == "ok" and s.value == pytest.approx(55.0)


def test_reply_names_match_up_to_case_and_punctuation():
    schema = _judgement_schema(rubric("Logical rigor", "可行性"))
    parsed = schema.model_validate(scores(**{"LOGICAL-RIGOR!": 4, "可行性。": 6}))
    assert [(c.criterion, c.score) for c in parsed.scores] == [("Logical rigor", 4), ("可行性", 6)]


def test_criterion_key():
    assert criterion_key("Logical rigor") == criterion_key("logical_RIGOR.") == "logicalrigor"
    assert criterion_key("逻辑严谨性") != criterion_key("可行性")
    assert criterion_key("ＡＢＣ") == "abc"  # NFKC: full-width letters


# ------------------------------------------------------------------ rubric definitions
@pytest.mark.parametrize(
    "names,dup",
    [
        (("Rigor", "rigor!"), "rigor!"),
        (("可行性", "可行性。"), "可行性。"),
        (("Logical rigor", "logical-rigor"), "logical-rigor"),
    ],
)
def test_repeated_criterion_is_an_error(names, dup):
    with pytest.raises(ValueError, match=f"criterion '{dup}' repeats criterion"):
        rubric(*names)


YAML_REPEATED_KEY = """name: r
tasks: [idea_generation]
criteria:
  - name: 逻辑严谨性
    description: a
  - name: 可行性
    description: b
weights:
  逻辑严谨性: 1
  可行性: 2
  逻辑严谨性: 3
"""


def test_yaml_repeating_a_key_is_an_input_error_naming_file_and_key(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text(YAML_REPEATED_KEY, encoding="utf-8")
    with pytest.raises(InputError) as e:
        Rubric.from_yaml(p)
    assert str(p) in str(e.value) and "repeated key '逻辑严谨性'" in str(e.value)


def test_yaml_repeating_a_top_level_key_is_an_input_error(tmp_path):
    p = tmp_path / "r2.yaml"
    p.write_text("name: r\nname: s\ntasks: [x]\ncriteria:\n  - {name: a, description: d}\n", encoding="utf-8")
    with pytest.raises(InputError, match="repeated key 'name'"):
        Rubric.from_yaml(p)


def test_yaml_repeating_a_criterion_is_an_input_error_naming_file(tmp_path):
    p = tmp_path / "r3.yaml"
    p.write_text(
        "name: r\ntasks: [x]\ncriteria:\n  - {name: Rigor, description: d}\n  - {name: 'RIGOR ', description: e}\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as e:
        Rubric.from_yaml(p)
    assert str(p) in str(e.value) and "criterion 'RIGOR ' repeats criterion 'Rigor'" in str(e.value)


def test_unicode_rubric_yaml_round_trip(tmp_path):
    r = rubric("逻辑严谨性", "可行性")
    assert Rubric.from_yaml(r.to_yaml(tmp_path / "u.yaml") and tmp_path / "u.yaml") == r
