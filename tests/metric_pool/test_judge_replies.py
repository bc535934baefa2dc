"""Judge-reply parsing (METRICS.md D.4, D.8): reasoning drafts, LaTeX escapes."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel, Field

from sgieval.metric_pool.judge import ask_judge, parse_json_object, protect_latex_escapes, split_reasoning
from sgieval.models.base import NamedModel


class Verdict(BaseModel):
    judge: str
    reason: str = ""


class Scored(BaseModel):
    score: float = Field(ge=0, le=10)


def judge(replies: list[str]) -> NamedModel:
    chat = FakeMessagesListChatModel(responses=[AIMessage(content=r) for r in replies])
    return NamedModel(name="j", role="judge", chat=chat, provider="fake-j")


# ------------------------------------------------------------------ reasoning drafts (D.8)
@pytest.mark.parametrize(
    "reply,want",
    [
        # the shape: a JSON draft inside <think>, then the final JSON
        ('<think>Draft: {"score": 2}. Hmm, the method is sound.</think>\n{"score": 8}', 8.0),
        # fenced drafts and a fenced final answer
        ('<think>```json\n{"score": 1}\n```\nno wait</think>\n```json\n{"score": 6.5}\n```', 6.5),
        # an unfinished draft object inside the reasoning (json_repair alone would swallow the final JSON into it)
        ('<think>I would write {"score": 2, "note": "hmm</think>\n{"score": 8}', 8.0),
        ('<think>{"score": 9}\nLet me reconsider.</think>\n\nFinal: {"score": 4, "why": "x"}', 4.0),
        # two think blocks: the text after the LAST </think> is the answer
        ('<think>{"score": 3}</think>{"score": 4}<think>{"score": 9}</think> {"score": 5}', 5.0),
    ],
)
async def test_think_draft_then_final_json_parses_the_final_json_in_one_call(reply, want):
    out = await ask_judge(judge([reply, '{"score": 0}']), [HumanMessage(content="rate")], Scored)
    assert out.parsed == Scored(score=want) and out.attempts == 1 and out.error is None


async def test_unclosed_think_has_no_answer_and_is_retried():
    out = await ask_judge(
        judge(['<think>{"score": 2} still thinking', '{"score": 7}']), [HumanMessage(content="r")], Scored
    )
    assert out.parsed == Scored(score=7) and out.attempts == 2


def test_split_reasoning_is_the_core_one():
    assert split_reasoning("<think>a</think>\nb") == ("a", "b")
    assert split_reasoning("<think>a") == ("a", "")
    assert split_reasoning("plain") == (None, "plain")


# ------------------------------------------------------------------ LaTeX in JSON strings
@pytest.mark.parametrize(
    "raw,reason",
    [
        (r'{"judge":"correct","reason":"E = \frac{1}{2}"}', "E = \\frac{1}{2}"),  # \f: form feed to JSON
        (r'{"judge":"correct","reason":"\beta = 0.3"}', "\\beta = 0.3"),  # \b: backspace to JSON
        (r'{"judge":"correct","reason":"\alpha and \sum_i x_i"}', "\\alpha and \\sum_i x_i"),  # invalid escapes
        (
            r'{"judge":"correct","reason":"\nabla \cdot E = \rho, \theta \times \tau"}',
            "\\nabla \\cdot E = \\rho, \\theta \\times \\tau",
        ),
        (r'{"judge":"correct","reason":"\\frac stays \\frac"}', "\\frac stays \\frac"),  # already escaped: unchanged
        (r'{"judge":"correct","reason":"line one\nThe second\tcol \u00e9"}', "line one\nThe second\tcol \u00e9"),
    ],
)
def test_latex_backslashes_survive_json_parsing(raw, reason):
    assert parse_json_object(raw) == {"judge": "correct", "reason": reason}


async def test_ask_judge_keeps_frac_in_the_stored_reason():
    out = await ask_judge(
        judge([r'{"judge":"correct","reason":"E = \frac{1}{2}"}']), [HumanMessage(content="x")], Verdict
    )
    assert out.parsed.reason == "E = \\frac{1}{2}" and "\f" not in out.parsed.reason


def test_protect_latex_escapes_leaves_plain_text_alone():
    assert protect_latex_escapes('{"a": "no backslash"}') == '{"a": "no backslash"}'
    assert protect_latex_escapes(r'"\f"') == r'"\f"'  # a lone \f is the JSON escape
