"""SGI-Bench Deep Research: answer tags (A.0, D.1), EM / em_normalised and SLA (A.1)."""

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda

from sgieval.core import Item, Response
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.answers import normalised_match
from sgieval.metric_pool.sgi.common import extract_answer_tag, is_empty_or_none, model_answer
from sgieval.metric_pool.sgi.deep_research import (
    ExactMatchMetric,
    StepLevelAccuracyMetric,
    parser_example,
    parser_messages,
)
from sgieval.models.base import NamedModel

TARGET = "test:target"


def item(answer="0.25", steps=("Compute the ratio.", "Round to two decimals.")):
    return Item(
        id="sgi-bench/SGI_DeepResearch_0000",
        benchmark="sgi-bench",
        task="deep_research",
        discipline="physics",
        prompt="Q?",
        reference={"answer": answer, "steps": list(steps)},
        metadata={"question": "What is the ratio?"},
    )


def resp(text, **kw):
    return Response(item_id="sgi-bench/SGI_DeepResearch_0000", model=TARGET, text=text, **kw)


def judge(*replies, name="fake:judge"):
    return NamedModel(
        name=name, role="judge", chat=FakeMessagesListChatModel(responses=[AIMessage(content=r) for r in replies])
    )


def by_metric(scores):
    return {s.metric: s for s in scores}


# ------------------------------------------------------------------ answer tags
@pytest.mark.parametrize(
    "text,expected",
    [
        ("a <answer>1</answer> b <answer> 2 </answer>", "2"),  # last opening tag wins, stripped
        ("<answer>1</answer> then <answer>2", None),  # last opening tag has no closing tag
        ("<answer>a<answer>b</answer></answer>", "b"),  # last <answer>, first </answer> after it
        ("<answer></answer>", ""),  # empty tags = empty answer (D.1)
        ("<answer>  \n </answer>", ""),
        ("<ANSWER>3</ANSWER>", None),  # case-sensitive (D.1)
        ("<answer>x\n</answer>\n", "x"),
        ("no tags at all", None),
    ],
)
def test_extract_answer_tag(text, expected):
    assert extract_answer_tag(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [("", True), ("none", True), ("NoNe", True), (" none", False), ("none\n", False), (" ", False), ("0", False)],
)
def test_empty_or_none_on_raw_reply(text, expected):
    assert is_empty_or_none(text) is expected


def test_model_answer_fallbacks():
    assert model_answer("The answer is 5\n") == "The answer is 5\n"  # no tags: whole response, unstripped
    assert model_answer("<answer></answer>") == ""  # empty tags: no fallback
    assert model_answer("") == "None"
    assert model_answer("NONE") == "None"


# ------------------------------------------------------------------ exact match
async def em_scores(ref, text, judges=()):
    return by_metric(await ExactMatchMetric().score(item(ref), resp(text), ScoringContext(judges=list(judges))))


@pytest.mark.parametrize(
    "ref,text,em,emn",
    [
        ("0.25", "Step 1 ...\n<answer>0.250</answer>", 0, 1),  # numeric formatting: EM 0, normalised 1
        ("0.25", "Step 1 ...\n<answer> 0.25 </answer>", 1, 1),
        ("0.25", "0.25", 1, 1),  # missing tags: whole response compared
        ("0.25", "0.25\n", 0, 1),  # trailing newline breaks EM (no tags, unstripped)
        ("0.25", "", 0, 0),  # empty reply -> "None"
        ("None", "none", 1, 1),  # "none" reply stored as "None" (A.0)
        ("0.25", "<answer></answer>", 0, 0),  # empty tags: empty answer, no fallback
        ("T cell", "<answer>t cell</answer>", 0, 1),  # case fold only in the normalised EM
        ("T cell and B cell", "<answer>T  cell\tand B cell</answer>", 0, 1),  # whitespace collapse
        ("3", "<answer>3.4</answer>", 0, 1),  # rounded to the reference's 0 decimals
        ("3", "<answer>3.5</answer>", 0, 0),  # 3.5 -> 4 (half up)
    ],
)
async def test_em_without_parser(ref, text, em, emn):
    s = await em_scores(ref, text)
    assert (s["em"].value, s["em_normalised"].value) == (em, emn)
    assert s["em"].judge == "objective" and s["em"].status == "ok"
    assert s["em"].details["model_answer_after_llm_parser"] is None or text in ("", "none")


@pytest.mark.parametrize(
    "ref,text,emn",
    [
        ("-0.76", "<answer>\u22120.76</answer>", 1),  # minus sign (U+2212) is '-' (D.11)
        ("-0.76", "<answer>\u20130.760</answer>", 1),  # en dash, and a third decimal written
        ("-0.76", "<answer>\uff0d0.76</answer>", 1),  # full-width hyphen-minus (NFKC)
        ("-0.76", "<answer>0.76</answer>", 0),  # the sign still counts
        ("\u00e5ngstr\u00f6m", "<answer>a\u030angstro\u0308m</answer>", 1),  # NFD against NFC
        ("\u00c5ngstr\u00f6m", "<answer>\u212bngstr\u00f6m</answer>", 1),  # the angstrom sign
        ("\u00e5ngstr\u00f6m", "<answer>angstrom</answer>", 0),  # accents are not dropped
        ("12345", "<answer>\uff11\uff12\uff13\uff14\uff15</answer>", 1),  # full-width digits
    ],
)
async def test_em_normalised_unicode(ref, text, emn):
    # the deep-research em_normalised uses the one D.11 normalisation of every normalised metric
    s = await em_scores(ref, text)
    assert (s["em"].value, s["em_normalised"].value) == (0.0, emn)
    assert s["em_normalised"].status == "ok"


def test_one_normalisation_for_every_normalised_metric():
    for ref, pred in (("-0.76", "\u22120.76"), ("\u00e5ngstr\u00f6m", "a\u030angstro\u0308m"), ("0.25", "0.250")):
        assert normalised_match(ref, pred) is True


async def test_em_details_for_empty_tags():
    s = await em_scores("0.25", "<answer></answer>")
    assert s["em"].details["model_answer"] == ""
    # no answer found, counted apart from a wrong answer; variant: whitespace-only tags
    assert s["em"].details["no_answer"] is True and s["em"].value == 0.0
    assert (await em_scores("0.25", "<answer> \n </answer>"))["em"].details["no_answer"] is True
    assert "no_answer" not in (await em_scores("0.25", "<answer>0.3</answer>"))["em"].details


async def test_em_with_parser_keeps_raw_output_trailing_newline():
    # The parser returns "0.25\n": EM compares it raw -> "0.25" != "0.25\n" and != "about 0.25 mM" -> 0;
    # normalised strips -> 1.  Raw output is kept in evidence.
    s = await em_scores("0.25", "<answer>about 0.25 mM</answer>", [judge("0.25\n")])
    assert (s["em"].value, s["em_normalised"].value) == (0.0, 1.0)
    assert s["em"].judge == "fake:judge"
    ev = s["em"].evidence[0]
    assert (ev.tool, ev.details["raw"], ev.input, ev.details["example"]) == (
        "answer_parser",
        "0.25\n",
        "about 0.25 mM",
        "0.25",
    )


async def test_em_parser_rescues_answer():
    s = await em_scores(
        "T cell and B cell", "the cells are <answer>T and B cells</answer>", [judge("T cell and B cell")]
    )
    assert s["em"].value == 1.0
    assert s["em"].details["model_answer_after_llm_parser"] == "T cell and B cell"


async def test_em_parser_failure_falls_back_to_extracted_answer():
    def boom(_):
        raise ValueError("parser down")

    failing = NamedModel(name="fake:broken", role="judge", chat=RunnableLambda(boom))
    s = await em_scores("0.25", "<answer>0.25</answer>", [failing])
    assert s["em"].value == 1.0
    assert s["em"].details["model_answer_after_llm_parser"] == "0.25"  # extracted answer stored instead (A.0)
    assert "parser down" in s["em"].evidence[0].error


async def test_em_empty_reply_skips_parser():
    s = await em_scores("0.25", "", [judge("0.25")])
    assert s["em"].value == 0.0 and s["em"].evidence == []
    assert s["em"].details["model_answer_after_llm_parser"] == "None"


async def test_em_failed_response_is_not_a_zero():
    scores = await ExactMatchMetric().score(item(), resp("", error="timeout"), ScoringContext())
    assert [(s.metric, s.status, s.value) for s in scores] == [
        ("em", "infra_error", None),
        ("em_normalised", "infra_error", None),
    ]


async def test_em_missing_reference_is_input_error():
    it = Item(id="x", benchmark="sgi-bench", task="deep_research", prompt="q", reference={"steps": []})
    scores = await ExactMatchMetric().score(it, resp("<answer>1</answer>"), ScoringContext())
    assert scores[0].status == "input_error"
    assert scores[0].error == (
        "item x: reference has no field 'answer'. Fix: load the item with the SGI item "
        "contract for task 'deep_research'"
    )


@pytest.mark.parametrize(
    "ref,pred,expected",
    [
        ("0.25", "0.250", True),
        ("0.250", "0.25", True),
        ("3", "3.4", True),
        ("3", "3.5", False),
        ("0.13", "0.125", True),  # 0.125 -> 0.13 half up
        ("1e5", "100000", True),
        ("1e5", "149999", True),
        ("1e5", "150000", False),  # rounded to 1e5
        ("0.25", "0.25 mg", False),  # no unit handling
        ("inf", "INF", True),  # non-finite: compared as text after case folding
        ("abc", "ABC ", True),
    ],
)
def test_normalised_equal(ref, pred, expected):
    assert normalised_match(ref, pred) is expected


@pytest.mark.parametrize(
    "ref,example", [("1e5", "0.25"), (" 3 ", "0.25"), ("inf", "0.25"), ("abc", "T cell and B cell")]
)
def test_parser_example(ref, example):
    assert parser_example(ref) == example


def test_parser_messages_carry_example_and_text():
    sys_msg, user = parser_messages("about 0.25", "0.25")
    assert "<example>\n0.25\n</example>" in sys_msg.content and "<class 'str'>" in sys_msg.content
    assert "<input_text>\nabout 0.25\n</input_text>" in user.content


# ------------------------------------------------------------------ SLA
LIST_3 = (
    '[{"solution_step": "s1", "reason": "ok", "judge": "correct"},'
    ' {"solution_step": "s2", "reason": "wrong unit", "judge": "incorrect"},'
    ' {"solution_step": "s3", "reason": "ok", "judge": " Correct "}]'
)


async def sla(judges, text="Step 1 ... <answer>0.3</answer>", allow_self=False):
    ctx = ScoringContext(judges=list(judges), allow_self_judge=allow_self)
    return (await StepLevelAccuracyMetric().score(item(), resp(text), ctx))[0]


async def test_sla_bare_list_proportion():
    s = await sla([judge("Here is my verdict:\n" + LIST_3)])
    # 2 of 3 steps correct ("Correct" with spaces is normalised) -> 2/3
    assert s.status == "ok" and s.value == pytest.approx(2 / 3)
    assert s.judge == "fake:judge"
    assert [st["judge"] for st in s.details["per_judge"]["fake:judge"]["steps"]] == ["correct", "incorrect", "correct"]
    assert s.evidence[0].raw == ["Here is my verdict:\n" + LIST_3]


async def test_sla_object_format_and_two_judges_mean():
    j1 = judge('```json\n{"steps": [{"solution_step": "a", "reason": "r", "judge": "correct"}]}\n```', name="fake:j1")
    j2 = judge(
        '{"steps": [{"solution_step": "a", "reason": "r", "judge": "incorrect"},'
        ' {"solution_step": "b", "reason": "r", "judge": "correct"}]}',
        name="fake:j2",
    )
    s = await sla([j1, j2])
    # j1: 1/1 = 1.0, j2: 1/2 = 0.5 -> mean 0.75
    assert s.value == pytest.approx(0.75)
    assert s.judge == "fake:j1,fake:j2"


async def test_sla_retries_unparsable_reply():
    s = await sla([judge("I think it is fine.", LIST_3)])
    assert s.value == pytest.approx(2 / 3)
    assert s.evidence[0].attempts == 2
    assert s.evidence[0].raw == ["I think it is fine.", LIST_3]


async def test_sla_empty_list_is_judge_error():
    s = await sla([judge("[]", '{"steps": []}', "[]")])
    assert s.status == "judge_error" and s.value is None
    assert s.error.startswith("fake:judge: ")
    assert len(s.evidence[0].raw) == 3  # three attempts, all kept


async def test_sla_bad_verdict_word_is_retried_then_judge_error():
    bad = '[{"solution_step": "s", "reason": "r", "judge": "partially"}]'
    s = await sla([judge(bad, bad, bad)])
    assert s.status == "judge_error"
    assert "unparsable judge reply after 3 attempt(s)" in s.error


async def test_sla_no_judge_not_run():
    s = await sla([])
    assert (s.status, s.value, s.error) == ("not_run", None, "sla needs a judge: no judge configured (pass --judge)")


async def test_sla_self_judge_skipped():
    s = await sla([judge(LIST_3, name="other:target")])
    assert s.status == "not_run"
    assert s.error == (
        "sla needs a judge: the only judge(s) (other:target) are the target model test:target; "
        "pass another --judge or --allow-self-judge"
    )
    s2 = await sla([judge(LIST_3, name="other:target")], allow_self=True)
    assert s2.value == pytest.approx(2 / 3)


async def test_em_reads_the_text_after_the_last_think_close():
    # The draft <answer>B</answer> inside the reasoning is not the answer
    text = "Let me see. <answer>B</answer>. Wait, no... so D.\n</think>\n\nD"
    it = item(answer="D")
    em, emn = await ExactMatchMetric().score(it, resp(text), ScoringContext())
    assert (em.value, emn.value, em.details["model_answer"]) == (1.0, 1.0, "D")
    # variant: tags after the reasoning, a wrong draft answer inside it
    em2, _ = await ExactMatchMetric().score(
        it, resp("<think><answer>B</answer></think>\nSo: <answer>D</answer>"), ScoringContext()
    )
    assert (em2.value, em2.details["model_answer"]) == (1.0, "D")


async def test_sla_judge_repeats_mean_per_judge():
    # --judge-repeats 2: j1 gives 2/3 (LIST_3) then 1/1; j2 gives 1/2 twice.  By hand: j1 mean (2/3 + 1) / 2 = 5/6,
    # j2 1/2; value = (5/6 + 1/2) / 2 = 2/3
    j1 = judge(LIST_3, '{"steps": [{"solution_step": "a", "reason": "r", "judge": "correct"}]}', name="fake:j1")
    j2 = judge(
        '{"steps": [{"solution_step": "a", "reason": "r", "judge": "incorrect"},'
        ' {"solution_step": "b", "reason": "r", "judge": "correct"}]}',
        name="fake:j2",
    )
    ctx = ScoringContext(judges=[j1, j2], options={"judge_repeats": 2})
    s = (await StepLevelAccuracyMetric().score(item(), resp("Step 1 ... <answer>0.3</answer>"), ctx))[0]
    assert s.value == pytest.approx(2 / 3)
    assert s.details["judge_repeats"] == {"fake:j1": [pytest.approx(2 / 3), 1.0], "fake:j2": [0.5, 0.5]}
    assert s.details["per_judge"]["fake:j1"]["sla"] == pytest.approx(5 / 6)
    assert "repeat_failures" not in s.details and s.details["repeats"] == 2
