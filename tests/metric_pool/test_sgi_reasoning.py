"""SGI-Bench Experimental Reasoning: option extraction (A.5, D.3), MCA variants and the
Reasoning Validity judge (0-10, D.4)."""

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from sgieval.core import Item, Response
from sgieval.metric_pool.answers import boxed_spans
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.sgi.reasoning import (
    MultiChoiceMetric,
    ReasoningValidityMetric,
    extract_option_lenient,
    final_option,
    mca_code,
    question_block,
    rv_messages,
)
from sgieval.models.base import NamedModel

TARGET = "test:target"


def item(answer=1, images=("QUJD",)):
    return Item(
        id="sgi-bench/SGI_Reasoning_0000",
        benchmark="sgi-bench",
        task="experimental_reasoning",
        discipline="chemistry",
        type="signal perception",
        prompt="full prompt",
        reference={
            "answer": answer,
            "options": ["red", "blue", "green", "white"],
            "steps": ["Read the plot.", "Compare peaks."],
        },
        metadata={"question": "Which colour?", "images": list(images)},
    )


def resp(text):
    return Response(item_id="sgi-bench/SGI_Reasoning_0000", model=TARGET, text=text)


def judge(*replies, name="fake:judge"):
    return NamedModel(
        name=name, role="judge", chat=FakeMessagesListChatModel(responses=[AIMessage(content=r) for r in replies])
    )


def test_boxed_contents_balanced():
    assert [c for _, c in boxed_spans(r"x \boxed{A} y \boxed{\text{B}} z \boxed{C")] == ["A", r"\text{B}"]


@pytest.mark.parametrize(
    "text,expected",
    [
        (r"so \boxed{A}", "A"),
        (r"first \boxed{A}, finally \boxed{ B }", "B"),  # last box wins, spaces stripped
        (r"\boxed{\text{B}}", "B"),  # D.3: \text{} unwrapped
        (r"\boxed{b}", "b"),
        ("no box, Answer: B", None),
        # The last box HOLDING AN OPTION LETTER wins; other boxes are skipped
        (r"earlier \boxed{D} ... so the value is \boxed{\langle H\rangle}", "D"),
        (r"\boxed{ D }", "D"),
        (r"\boxed{\text{D}}", "D"),
        (r"$\boxed{D}$", "D"),
        (r"\boxed{(D)}", "D"),
        (r"\boxed{\mathrm{ D }}", "D"),
        (r"\boxed{$**D**$}", "D"),
        (r"\boxed{D} then \boxed{x^2 + 1} and \boxed{42}", "D"),
        (r"\boxed{B.}", None),
        (r"\boxed{AB}", None),
        # D.8: a box inside the reasoning is not the answer
        ("<think>maybe \\boxed{A}</think>\nSo \\boxed{C}", "C"),
        ("<think>maybe \\boxed{A}</think>\nI cannot decide.", None),
    ],
)
def test_final_option_box_rules(text, expected):
    assert final_option(text)[0] == expected


def test_final_option_skips_letters_past_the_options():
    assert final_option(r"\boxed{B} ... \boxed{H}", n_options=4)[0] == "B"
    assert final_option(r"\boxed{B} ... \boxed{H}")[0] == "H"
    assert final_option(r"\boxed{B} ... \boxed{d}", n_options=4)[0] == "d"  # in range, wrong case: kept


@pytest.mark.parametrize(
    "text,expected",
    [
        (r"\boxed{B}", 1),
        (r"\boxed{ B }", 1),
        (r"\boxed{\text{B}}", 1),  # D.3 unwraps \text{}
        (r"\boxed{B.}", 0),
        (r"\boxed{b}", 0),  # case-sensitive (D.3)
        (r"\boxed{B} on reflection \boxed{C}", 0),  # last box wins
        (r"\boxed{C} no wait \boxed{B}", 1),
        ("", 0),
        # D.9: a final Answer: line counts when no box holds an option letter; the later of the two wins
        ("Answer: B", 1),
        ("reasoning...\n**Answer: B**", 1),
        ("reasoning...\nANSWER: *B*.", 1),
        ("reasoning...\nAnswer: _B_", 1),
        ("reasoning...\nanswer: (B).", 1),
        ("Answer: b", 0),  # case-sensitive like the box
        (r"\boxed{C}" + "\n\nOn reflection:\nAnswer: B", 1),  # the line is later than the box
        ("Answer: C\n\nso finally " + r"\boxed{B}", 1),  # the box is later than the line
        (r"\boxed{B}" + "\nAnswer: C", 0),  # the later line says C
        ("Answer: B\nbut maybe not", 0),  # not the final line: no answer
        ("ANSWER: I don't know", 0),  # the letter must stand alone
        (r"\boxed{B}" + "\nANSWER: I don't know", 1),  # a line without a letter is no candidate: the box
    ],
)
def test_mca_default(text, expected):
    assert int(final_option(text)[0] == "B") == expected  # MCA: exact letter equality


@pytest.mark.parametrize(
    "text,letter,how",
    [
        ("**Answer: D**", "D", "final Answer: line"),
        ("ANSWER: *B*.", "B", "final Answer: line"),
        ("ANSWER: _C_", "C", "final Answer: line"),
        (r"\boxed{A}" + "\nAnswer: D", "D", "final Answer: line"),
        ("Answer: D\n" + r"\boxed{A}", "A", "last \\boxed{} holding an option letter"),
        ("ANSWER: H", None, "no answer found"),  # past the 4 options
        ("ANSWER: I don't know", None, "no answer found"),
    ],
)
def test_final_option_box_or_line_whichever_is_later(text, letter, how):
    assert final_option(text, 4) == (letter, how)


def test_mca_code_first_box_ignoring_case():
    assert mca_code(r"\boxed{B} on reflection \boxed{C}", "B") == 1  # first box
    assert mca_code(r"\boxed{b}", "B") == 0  # regex takes upper-case letters only
    assert mca_code(r"\boxed{\text{B}} \boxed{B}", "B") == 1  # malformed first box skipped by the regex


@pytest.mark.parametrize(
    "text,expected",
    [
        (r"\boxed{\text{B}}", "B"),
        (r"\boxed{b}", "B"),
        (r"\boxed{B.}", "B"),
        (r"\boxed{(B)}", "B"),
        (r"\boxed{1}", "B"),  # 0-based index
        (r"\boxed{B. blue}", "B"),
        ("Answer: c", "C"),
        ("so the answer is (D)", "D"),
        ("Answer: 0", "A"),
        ("Answer: 7", None),  # index out of range for 4 options
        ("nothing here", None),
        # the letter must stand alone (D.9's rule): a word starting the phrase is no option
        ("ANSWER: I don't know", None),
        ("The answer is a mixture of both.", None),
        ("The answer is B because the peak shifts.", None),  # a bare letter followed by words: not alone
        ("The answer is (B) because the peak shifts.", "B"),  # wrapped: stands alone
        ("Answer: B. The peak shifts.", "B"),
        ("ANSWER: *C*.", "C"),
        ("Answer: 10 moles", None),  # a quantity, not an index
        # the later of box and answer phrase wins
        (r"\boxed{A}" + "\nOn reflection, Answer: C", "C"),
        ("Answer: C, but then " + r"\boxed{A}", "A"),
    ],
)
def test_extract_option_lenient(text, expected):
    assert extract_option_lenient(text, n_options=4) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("ANSWER: I don't know", None),  # option I exists with 10 options, but is not given
        ("I think the answer is I", "I"),
        ("Answer: I.", "I"),
        ("Answer: J", "J"),
        ("Answer: 9", "J"),
        ("Answer: 10", None),
    ],
)
def test_extract_option_lenient_with_ten_options(text, expected):
    assert extract_option_lenient(text, n_options=10) == expected


async def test_multichoice_metric_scores():
    scores = await MultiChoiceMetric().score(item(answer=1), resp(r"\boxed{A} ... \boxed{\text{B}}"), ScoringContext())
    got = {s.metric: s.value for s in scores}
    # default: last box "\text{B}" holds B (D.3 unwraps) -> 1; lenient -> 1; code: first box A -> 0
    assert got == {"mca": 1.0, "mca_lenient": 1.0, "mca_code": 0.0}
    assert scores[0].details == {"extracted": "B", "gold": "B", "found_by": "last \\boxed{} holding an option letter"}


async def test_multichoice_no_answer_found_is_flagged_apart_from_a_wrong_answer():
    none = await MultiChoiceMetric().score(item(answer=1), resp(r"It is \boxed{\langle H\rangle}."), ScoringContext())
    wrong = await MultiChoiceMetric().score(item(answer=1), resp(r"\boxed{C}"), ScoringContext())
    assert (none[0].value, none[0].details) == (0.0, {"extracted": None, "gold": "B", "no_answer": True})
    assert none[0].rationale == (
        "no answer found (no \\boxed{} holds an option letter, no final Answer: line), gold 'B': 0"
    )
    assert (wrong[0].value, wrong[0].details["extracted"]) == (0.0, "C")
    # a final answer line is read the same way; "I don't know" is no answer, not option I
    line = await MultiChoiceMetric().score(item(answer=1), resp("so...\nANSWER: *B*."), ScoringContext())
    assert (line[0].value, line[0].details["found_by"]) == (1.0, "final Answer: line")
    ten = item(answer=8)
    ten = ten.model_copy(update={"reference": {**ten.reference, "options": [f"o{k}" for k in range(10)]}})
    idk = {s.metric: s for s in await MultiChoiceMetric().score(ten, resp("ANSWER: I don't know"), ScoringContext())}
    assert (idk["mca"].value, idk["mca"].details.get("no_answer")) == (0.0, True)
    assert (idk["mca_lenient"].value, idk["mca_lenient"].details["extracted"]) == (0.0, None)
    sure = {s.metric: s for s in await MultiChoiceMetric().score(ten, resp("ANSWER: I"), ScoringContext())}
    assert sure["mca"].value == sure["mca_lenient"].value == 1.0  # option I standing alone is option I
    # options A-D: a box holding H is not an option letter, the earlier D is the answer
    late = await MultiChoiceMetric().score(item(answer=3), resp(r"\boxed{D}, i.e. \boxed{H}"), ScoringContext())
    assert late[0].value == 1.0


async def test_multichoice_bad_reference_is_input_error():
    scores = await MultiChoiceMetric().score(item(answer="B"), resp(r"\boxed{B}"), ScoringContext())
    assert {s.status for s in scores} == {"input_error"}
    assert scores[0].error == (
        "item sgi-bench/SGI_Reasoning_0000: reference answer 'B' is not a 0-based option "
        "index 0..25. Fix: set reference['answer'] to the 0-based index of the correct option"
    )


# ------------------------------------------------------------------ RV judge
async def rv(judges, allow_self=False):
    ctx = ScoringContext(judges=list(judges), allow_self_judge=allow_self)
    return (await ReasoningValidityMetric().score(item(), resp(r"Peaks... \boxed{B}"), ctx))[0]


async def test_rv_out_of_range_score_is_retried():
    s = await rv([judge('{"rationale": "solid", "score": 85}', '{"rationale": "solid", "score": 8}')])
    assert (s.status, s.value) == ("ok", 8.0)  # 0-10 scale; 85 rejected, not read as 8.5
    assert s.evidence[0].attempts == 2
    assert s.evidence[0].raw == ['{"rationale": "solid", "score": 85}', '{"rationale": "solid", "score": 8}']
    assert s.rationale == "fake:judge: 8/10 (solid)"


async def test_rv_never_valid_is_judge_error_not_zero():
    s = await rv([judge('{"score": 11}', '{"score": -1}', "Score: 6")])
    assert (s.status, s.value) == ("judge_error", None)
    assert "unparsable judge reply after 3 attempt(s)" in s.error
    assert len(s.evidence[0].raw) == 3


async def test_rv_two_judges_mean():
    s = await rv(
        [
            judge('{"rationale": "a", "score": 7}', name="fake:j1"),
            judge('{"rationale": "b", "score": 8}', name="fake:j2"),
        ]
    )
    assert s.value == pytest.approx(7.5)  # (7 + 8) / 2
    assert s.judge == "fake:j1,fake:j2"


async def test_rv_no_judge_not_run():
    s = await rv([])
    assert (s.status, s.error) == ("not_run", "reasoning_validity needs a judge: no judge configured (pass --judge)")


def test_rv_messages_images_first_then_text():
    msgs = rv_messages(item(), r"my reasoning \boxed{B}")
    content = msgs[1].content
    assert content[0] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
    text = content[1]["text"]
    assert "Question:\nWhich colour?\n\nOptions:\nA. red\nB. blue\nC. green\nD. white\n" in text
    assert "1. Read the plot.\n2. Compare peaks." in text
    assert "<<<RESPONSE_UNDER_REVIEW>>>\nmy reasoning \\boxed{B}\n<<<END_RESPONSE_UNDER_REVIEW>>>" in text
    assert isinstance(rv_messages(item(images=()), "x")[1].content, str)  # no images: plain text


def test_question_block_falls_back_to_prompt():
    it = Item(
        id="q", benchmark="sgi-bench", task="experimental_reasoning", prompt="full prompt", reference={"answer": 0}
    )
    assert question_block(it) == "full prompt"


async def test_rv_judge_repeats_mean_per_judge_then_panel_and_failed_repeat_recorded():
    # --judge-repeats 3: j1 answers 6, then a repeat that never parses (3 attempts: 11, 11, 11), then 9;
    # j2 answers 4, 4, 5.  By hand: j1's mean over repeats that parsed = (6 + 9) / 2 = 7.5, j2's = 13/3;
    # value = (7.5 + 13/3) / 2 = 71/12 = 5.9167 (the mean of all five draws, 28/5 = 5.6, is not used)
    j1 = judge(
        '{"rationale": "a", "score": 6}',
        '{"score": 11}',
        '{"score": 11}',
        '{"score": 11}',
        '{"rationale": "c", "score": 9}',
        name="fake:j1",
    )
    j2 = judge(
        '{"rationale": "b", "score": 4}',
        '{"rationale": "b", "score": 4}',
        '{"rationale": "b", "score": 5}',
        name="fake:j2",
    )
    ctx = ScoringContext(judges=[j1, j2], options={"judge_repeats": 3})
    s = (await ReasoningValidityMetric().score(item(), resp(r"Peaks... \boxed{B}"), ctx))[0]
    assert s.status == "ok" and s.value == pytest.approx(71 / 12)
    assert s.details["judge_repeats"] == {"fake:j1": [6.0, None, 9.0], "fake:j2": [4.0, 4.0, 5.0]}
    assert s.details["repeat_failures"] == {"fake:j1": {"1": s.evidence[1].error}}
    assert "unparsable judge reply after 3 attempt(s)" in s.evidence[1].error
    assert [e.details["repeat"] for e in s.evidence] == [0, 1, 2, 0, 1, 2]
    assert s.details["per_judge"]["fake:j1"]["score"] == pytest.approx(7.5)
    assert s.rationale.startswith("fake:j1: 7.5/10 (mean of 3 repeats) (c); fake:j2: 4.33333/10 (mean of 3 repeats)")
    assert "failed judges excluded: fake:j1 (repeat 2/3): unparsable judge reply" in s.rationale
