"""SGI-Bench Idea Generation (METRICS.md A.2) with hand-computed values.

Objective parts use a scripted embedder (text -> fixed vector) so every cosine is
computed by hand; one end-to-end test uses the real offline MiniLM.  Judge paths
use GenericFakeChatModel wrapped in NamedModel.
"""

import json

import numpy as np
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from sgieval.core import Item, Response
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.sgi import idea_generation as ig
from sgieval.models.base import NamedModel


# ------------------------------------------------------------------ helpers
def table_encoder(table: dict[str, list[float]], default=(0.0, 0.0)):
    """Scripted embedder: known texts map to fixed vectors, others to ``default``."""

    def encode(texts):
        for t in texts:
            if not isinstance(t, str):
                raise TypeError("not a string")
        return np.array([table.get(t, list(default)) for t in texts], dtype=float)

    return encode


def broken_encoder(texts):
    raise RuntimeError("encoder down")


def make_item(**over) -> Item:
    ref = {
        "core_idea": "Reference idea about graph neural networks for molecules.",
        "keywords": ["graph", "neural net"],
        "implementation_steps": "{'1': 'load data', '2': 'train model', '3': 'test'}",
        "implementation_order": ["1-2", "1-3"],
        "data": "QM9",
        "evaluation_metrics": "{'MAE': 'mean absolute error'}",
        "expected_outcome": "Lower MAE.",
        "related_work": "{'a': 'rw1'}",
        "existing_solutions": "{'b': 'es1'}",
        "related_work_test": "{'x': 't1'}",
        "challenge": "c",
        "limitation": "l",
        "motivation": "m",
        "task_objective": "t",
    }
    ref.update(over)
    return Item(
        id="sgi-bench/SGI_IdeaGeneration_0000",
        benchmark="sgi-bench",
        task="idea_generation",
        prompt="Propose an idea.",
        reference=ref,
    )


def reply_json(**fields) -> str:
    base = {
        "Idea": "idea",
        "ImplementationSteps": {"1": "load data", "2": "train model", "3": "evaluate model"},
        "ImplementationOrder": ["1-2", "2-3"],
        "Dataset": "QM9",
        "EvaluationMetrics": {"MAE": "error"},
        "ExpectedOutcome": "better",
    }
    base.update(fields)
    return "```json\n" + json.dumps(base) + "\n```\nHope this helps."


def judge(name: str, replies: list) -> NamedModel:
    msgs = [r if isinstance(r, AIMessage) else AIMessage(content=r) for r in replies]
    return NamedModel(name=name, role="judge", chat=GenericFakeChatModel(messages=iter(msgs)))


def five(eff: str, nov: str, det: str, fea: str, ove: str = "[Win A]") -> str:
    return (
        f"Effectiveness: {eff} because x.\nNovelty: {nov} because y.\nDetailedness: {det} because z.\n"
        f"Feasibility: {fea} because w.\nOverall: {ove} because v."
    )


# ------------------------------------------------------------------ parser
def test_parse_fenced_with_trailing_text():
    text = 'Sure.\n```json\n{"Idea": "X", "ImplementationOrder": ["1-2"]}\n```\nHope this helps!'
    assert ig.parse_idea(text) == {"Idea": "X", "ImplementationOrder": ["1-2"]}


def test_parse_whole_text_and_trailing_text_variants():
    assert ig.parse_idea('{"Idea": "X"}') == {"Idea": "X"}
    text = '{"Idea": "X \\"quoted\\" word", "Dataset": "D"} Thanks!'
    # tolerant (default): raw_decode of the first object, trailing text ignored
    assert ig.parse_idea(text) == {"Idea": 'X "quoted" word', "Dataset": "D"}
    # code variant: json.loads fails -> regex fallback; the quoted Idea value ends at the first quote
    # character (the backslash before it stays), Dataset needs a following ', "' so it is not matched
    assert ig.parse_idea(text, tolerant=False) == {"Idea": "X \\"}


def test_parse_numbered_headings_fallback():
    text = (
        'Here is my proposal.\n'
        '1. Idea: Use graphene sensors.\n'
        '2. Implementation Steps: "1": "build", "2": "test"\n'
        '3. Implementation Order: "1-2"\n'
        '4. Dataset: lab data\n'
        '5. Evaluation Metrics: "Accuracy": "fraction correct"\n'
        '6. Expected Outcome: Better sensors.\n'
    )
    assert ig.parse_idea(text) == {
        "Idea": "Use graphene sensors.",
        "ImplementationSteps": {"1": "build", "2": "test"},
        "ImplementationOrder": ["1-2"],
        "Dataset": "lab data",
        "EvaluationMetrics": {"Accuracy": "fraction correct"},
        "ExpectedOutcome": "Better sensors.",
    }


def test_parse_full_text_and_non_dict():
    assert ig.parse_idea("no structure at all") == {"full_text": "no structure at all"}
    assert ig.parse_idea("[1, 2]") == [1, 2]


# ------------------------------------------------------------------ objective parts
def test_effectiveness_embedding_path():
    # cos([1,0],[0.6,0.8]) = 0.6 -> 10 x 0.6 = 6.0
    enc = table_encoder({"graph, neural net": [1, 0], "my idea": [0.6, 0.8]})
    value, det = ig.effectiveness_obj("my idea", ["graph", "neural net"], enc)
    assert value == pytest.approx(6.0) and det["path"] == "embedding"
    # negative cosine clipped to 0
    enc = table_encoder({"graph, neural net": [1, 0], "my idea": [-1, 0]})
    assert ig.effectiveness_obj("my idea", ["graph", "neural net"], enc)[0] == 0.0


def test_effectiveness_keyword_fallback():
    # encoder raises -> 10 x hits/keywords; "graph" in, "neural net" in ("neural network"), "quantum" not: 10 x 2/3
    idea = "A Graph Neural Network for molecules"
    value, det = ig.effectiveness_obj(idea, ["Graph", "neural net", "quantum"], broken_encoder)
    assert value == pytest.approx(20 / 3)
    assert det["path"] == "keyword_fallback" and det["hits"] == ["Graph", "neural net"]
    # non-string idea: lowercased text is "" -> no hits; no keywords -> 0
    assert ig.effectiveness_obj({"x": 1}, ["graph"], table_encoder({}))[0] == 0.0
    assert ig.effectiveness_obj("text", [], broken_encoder)[0] == 0.0


def test_novelty_parts():
    ref = ig.reference_idea(make_item())
    # A: cos(idea, rw1) = 1, cos(idea, es1) = 0 -> mean 0.5 -> 10 x 0.5 = 5
    # B: snippet "x: t1" -> cos 0.6 -> 10 x 0.4 = 4 ; novelty = 0.5 x 5 + 0.5 x 4 = 4.5
    enc = table_encoder({"idea": [1, 0], "rw1": [1, 0], "es1": [0, 1], "x: t1": [0.6, 0.8]})
    value, det = ig.novelty_obj("idea", ref, enc)
    assert (value, det["A"], det["B"]) == (pytest.approx(4.5), pytest.approx(5.0), pytest.approx(4.0))
    # unparsable related_work_test -> A = B = 0
    bad = ig.reference_idea(make_item(related_work_test="{not python"))
    assert ig.novelty_obj("idea", bad, enc)[0] == 0.0
    # no related work / existing solutions -> A = 0, B still computed: 0.5 x 0 + 0.5 x 4 = 2
    empty = ig.reference_idea(make_item(related_work="{}", existing_solutions="{}"))
    assert ig.novelty_obj("idea", empty, enc)[0] == pytest.approx(2.0)
    # empty related_work_test: B is "the same" as A (A.2), 0 with nothing to compare with;
    # the published code's mean of nothing is NaN and max(0, min(10, NaN)) = 10 -> B = 10 in its variant
    nan_b = ig.reference_idea(make_item(related_work_test="{}"))
    assert ig.novelty_obj("idea", nan_b, enc)[1]["B"] == 0.0
    assert ig.novelty_obj("idea", nan_b, enc, code_empty_b=True)[1]["B"] == 10.0


def test_length_penalty():
    assert ig.length_penalty("x" * 800) == pytest.approx(1.0)  # (800 - 700)/100
    assert ig.length_penalty("x" * 250) == pytest.approx(0.5)  # (300 - 250)/100
    assert ig.length_penalty("") == 0.0
    assert ig.length_penalty("x" * 500) == 0.0
    assert ig.length_penalty("x" * 2000) == 10.0  # 13 capped at 10
    with pytest.raises(TypeError):
        ig.length_penalty(5)


def test_repetition_penalty():
    enc = table_encoder({"The first sentence is long": [1, 0], "The second sentence is long": [0.6, 0.8]})
    # fewer than 2 segments longer than 10 chars -> 0 ("Short" is dropped)
    assert ig.repetition_penalty("The first sentence is long. Short.", enc) == 0.0
    # 2 segments, cos 0.6 -> 10 x (0.6 - 0.2) = 4.0
    assert ig.repetition_penalty("The first sentence is long. The second sentence is long!", enc) == pytest.approx(4.0)
    assert ig.repetition_penalty(["not", "a string"], enc) == 0.0


def test_completeness_and_detailedness():
    gen = ig.generated_fields({"Idea": "x" * 500, "Dataset": None})
    assert ig.completeness(gen) == pytest.approx(50 / 6)  # 5 of 6 fields non-None
    # one 500-char segment -> repetition 0; length 500 -> 0; 0.2 x 8.333 + 0.4 x 10 + 0.4 x 10 = 9.6667
    value, det = ig.detailedness_obj(gen, table_encoder({}))
    assert value == pytest.approx(0.2 * 50 / 6 + 8)
    # full_text-only parse -> empty idea: completeness 10, penalties 0 -> 10
    assert ig.detailedness_obj(ig.generated_fields({"full_text": "t"}), table_encoder({}))[0] == pytest.approx(10.0)
    with pytest.raises(TypeError):
        ig.detailedness_obj(ig.generated_fields({"Idea": None}), table_encoder({}))


def test_graph_similarity_hand_example():
    gen = {
        "ImplementationSteps": {"1": "load data", "2": "train model", "3": "evaluate model"},
        "ImplementationOrder": ["1-2", "2-3"],
    }
    ref = {
        "ImplementationSteps": {"1": "load the data", "2": "train model", "3": "test"},
        "ImplementationOrder": ["1-2", "1-3"],
    }
    # edges {(1,2),(2,3)} vs {(1,2),(1,3)}: 1/3.  tokens {load,data,train,model,evaluate} vs
    # {load,the,data,train,model,test}: 4 shared / 7 -> 0.6/3 + 0.4 x 4/7 = 0.428571
    sim, det = ig.graph_similarity(gen, ref)
    assert det["edge"] == pytest.approx(1 / 3) and det["text"] == pytest.approx(4 / 7)
    assert sim == pytest.approx(0.2 + 1.6 / 7)
    assert ig.feasibility_obj(gen, ref)[0] == pytest.approx(10 * (0.2 + 1.6 / 7))


def test_graph_similarity_string_sorted_digits():
    steps = {"1": "alpha", "2": "beta", "10": "gamma"}
    # all-digit order ["2","10","1"] chains string-sorted "1" -> "10" -> "2"
    gen = {"ImplementationSteps": steps, "ImplementationOrder": ["2", "10", "1"]}
    same = {"ImplementationSteps": steps, "ImplementationOrder": ["1-10", "10-2"]}
    numeric = {"ImplementationSteps": steps, "ImplementationOrder": ["1-2", "2-10"]}
    assert ig.graph_similarity(gen, same)[0] == pytest.approx(1.0)  # 0.6 x 1 + 0.4 x 1
    assert ig.graph_similarity(gen, numeric)[0] == pytest.approx(0.4)  # no shared edge: 0.4 x 1


def test_graph_similarity_edge_cases():
    ref = {"ImplementationSteps": {"1": "alpha gamma", "2": "delta"}, "ImplementationOrder": ["1-2"]}
    # single node: no edges even after chaining -> text similarity alone: {alpha,beta} vs {alpha,gamma,delta} = 1/4
    single = {"ImplementationSteps": {"1": "alpha beta"}, "ImplementationOrder": ["1"]}
    assert ig.graph_similarity(single, ref)[0] == pytest.approx(0.25)
    # integer order items -> exception -> 0
    ints = {"ImplementationSteps": {"1": "alpha", "2": "delta"}, "ImplementationOrder": [1, 2]}
    assert ig.graph_similarity(ints, ref)[0] == 0.0
    # empty order / missing key -> 0
    assert ig.graph_similarity({"ImplementationSteps": {"1": "a"}, "ImplementationOrder": []}, ref)[0] == 0.0
    assert ig.graph_similarity({"ImplementationSteps": {"1": "a"}}, ref)[0] == 0.0
    # "1 - 2" splits into "1 " and " 2" (no trimming) -> no edge -> nodes chained 1 -> 2: same edges as ref
    spaced = {"ImplementationSteps": {"1": "alpha gamma", "2": "delta"}, "ImplementationOrder": ["1 - 2"]}
    assert ig.graph_similarity(spaced, ref)[0] == pytest.approx(1.0)
    # non-string step texts: METRICS.md A.2 step 7 -> any exception gives 0 (the default)
    dict_steps = {"ImplementationSteps": {"1": {"t": "alpha"}, "2": "delta"}, "ImplementationOrder": ["1-2"]}
    assert ig.graph_similarity(dict_steps, ref)[0] == 0.0
    # the published code's reading: only the text part is 0, edges still count: 0.6 x 1 + 0.4 x 0
    assert ig.graph_similarity(dict_steps, ref, code_text_errors=True)[0] == pytest.approx(0.6)


# ------------------------------------------------------------------ vote parsing and thresholds
def test_parse_votes_three_stages():
    reply = (
        "Effectiveness: [ win b ] because it is better.\n"
        "Novelty: Win A because older work.\n"
        "Detailedness - I would say Win B overall because of detail.\n"
        "Feasibility: [Win A] because cheap.\n"
        "Overall: [WinB] because.\n"
    )
    v = ig.parse_votes(reply)
    assert {d: v[d]["judgment"] for d in v} == {
        "effectiveness": "win_B",
        "novelty": "win_A",
        "detailedness": "win_B",
        "feasibility": "win_A",
        "overall": "win_B",
    }
    assert v["effectiveness"]["reason"] == "it is better."
    assert ig.parse_votes("Effectiveness: [Win A] because x.") is None  # other dimensions missing


def test_decide_thresholds():
    # N = 3 (6 votes): spec g > 3 win, novelty g > 4, lose g <= 2
    assert [ig.decide(g, 3, "effectiveness") for g in range(7)] == ["lose"] * 3 + ["tie"] + ["win"] * 3
    assert [ig.decide(g, 3, "novelty") for g in range(7)] == ["lose"] * 3 + ["tie"] * 2 + ["win"] * 2
    # N = 1 (2 votes): win g > 1; novelty 3g > 4 -> g = 2; lose 3g <= 2 -> g = 0
    assert [ig.decide(g, 1, "feasibility") for g in range(3)] == ["lose", "tie", "win"]
    assert [ig.decide(g, 1, "novelty") for g in range(3)] == ["lose", "tie", "win"]


# ------------------------------------------------------------------ the metric end to end
ENC = table_encoder(
    {"graph, neural net": [1, 0], "idea": [0.6, 0.8], "rw1": [1, 0], "es1": [0, 1], "x: t1": [0.6, 0.8]}
)
# objective parts for make_item() and reply_json() with ENC:
#   effectiveness = 10 x 0.6 = 6.0
#   novelty: cos(idea, rw1) = 0.6, cos(idea, es1) = 0.8 -> A = 10 x (1 - 0.7) = 3; B = 10 x (1 - 1) = 0 -> 1.5
#   detailedness: L = 4 -> length (300 - 4)/100 = 2.96, repetition 0, completeness 10
#                 -> 0.2 x 10 + 0.4 x 10 + 0.4 x (10 - 2.96) = 8.816
#   feasibility: edges {(1,2),(2,3)} vs {(1,2),(1,3)} -> 1/3; tokens {load,data,train,model,evaluate} vs
#                {load,data,train,model,test} -> 4/6 -> 10 x (0.6/3 + 0.4 x 4/6) = 4.6667
OBJ = {"effectiveness": 6.0, "novelty": 1.5, "detailedness": 8.816, "feasibility": 10 * (0.2 + 0.4 * 4 / 6)}


async def test_metric_no_judge_reports_objective_and_not_run():
    m = ig.IdeaGenerationMetric()
    resp = Response(item_id="x", model="openai:target", text=reply_json())
    scores = {s.metric: s for s in await m.score(make_item(), resp, ScoringContext(embedder=ENC))}
    assert [s.name for s in m.specs] == list(scores)
    for d, v in OBJ.items():
        assert scores[f"idea_{d}_obj"].value == pytest.approx(v), d
    for name in ("idea_novelty_win", "idea_novelty", "idea_final_score"):
        assert scores[name].status == "not_run" and "no judge configured" in scores[name].error


async def test_metric_votes_three_judges_with_swap_and_retry():
    # judge 1: reference=A / generated=B: all Win B; swapped: all Win A (-> flipped to generated) = 2 votes each dim
    j1 = judge(
        "j1", [five("[Win B]", "[Win B]", "[Win B]", "[Win B]"), five("[Win A]", "[Win A]", "[Win A]", "[Win A]")]
    )
    # judge 2: normal eff B, nov B, det A, fea B; swapped eff A, nov A, det B, fea B
    #   -> generated votes eff 2, nov 2, det 0, fea 1
    j2 = judge(
        "j2", [five("[Win B]", "[Win B]", "[Win A]", "[Win B]"), five("[Win A]", "[Win A]", "[Win B]", "[Win B]")]
    )
    # judge 3: a malformed reply first (retried), then normal eff A, nov A, det B (stage 3 format), fea A;
    #   swapped all Win B (= reference) -> generated votes eff 0, nov 0, det 1, fea 0
    j3 = judge(
        "j3",
        [
            "I like B better.",
            "Effectiveness: [Win A] because a.\nNovelty: Win A because b.\nDetailedness - honestly Win B because c.\n"
            "Feasibility: [Win A] because d.\nOverall: [Win A] because e.",
            five("[Win B]", "[Win B]", "[Win B]", "[Win B]"),
        ],
    )
    # totals g: eff 4 (> 3 win), nov 4 (not > 4: tie -> 0), det 3 (tie -> 0), fea 3 (tie -> 0)
    ctx = ScoringContext(judges=[j1, j2, j3], embedder=ENC)
    resp = Response(item_id="x", model="openai:target", text=reply_json())
    scores = {s.metric: s for s in await ig.IdeaGenerationMetric().score(make_item(), resp, ctx)}
    assert scores["idea_effectiveness_win"].value == 100.0
    assert scores["idea_effectiveness_win"].details["generated_votes"] == 4
    assert scores["idea_novelty_win"].value == 0.0
    assert scores["idea_novelty_win"].details["result"] == "tie"
    assert scores["idea_detailedness_win"].details["generated_votes"] == 3
    assert scores["idea_feasibility_win"].details["generated_votes"] == 3
    win = {"effectiveness": 100.0, "novelty": 0.0, "detailedness": 0.0, "feasibility": 0.0}
    dims = {d: (10 * OBJ[d] + win[d]) / 2 for d in OBJ}  # e.g. effectiveness (60 + 100)/2 = 80
    for d in OBJ:
        assert scores[f"idea_{d}"].value == pytest.approx(dims[d])
    assert scores["idea_final_score"].value == pytest.approx(sum(dims.values()) / 4)
    ev = scores["idea_final_score"].evidence
    assert [(e.judge, e.details["order"], e.attempts) for e in ev] == [
        ("j1", "A=reference,B=generated", 1),
        ("j1", "A=generated,B=reference", 1),
        ("j2", "A=reference,B=generated", 1),
        ("j2", "A=generated,B=reference", 1),
        ("j3", "A=reference,B=generated", 2),
        ("j3", "A=generated,B=reference", 1),
    ]
    assert ev[4].raw[0] == "I like B better."


async def test_metric_unparsable_judge_casts_no_votes():
    # one judge; normal order: five unparsable replies -> no votes; swapped: all Win A (-> generated)
    j = judge("j", ["nope"] * 5 + [five("[Win A]", "[Win A]", "[Win A]", "[Win A]")])
    ctx = ScoringContext(judges=[j], embedder=ENC)
    resp = Response(item_id="x", model="openai:target", text=reply_json())
    scores = {s.metric: s for s in await ig.IdeaGenerationMetric().score(make_item(), resp, ctx)}
    # N = 1, g = 1 of 2: not > 1 -> tie -> 0 for every dimension
    assert scores["idea_effectiveness_win"].value == 0.0
    assert scores["idea_effectiveness_win"].details["failed_calls"] == 1
    assert scores["idea_effectiveness_win"].evidence[0].raw == ["nope"] * 5


class _Down:
    async def ainvoke(self, messages):
        raise PermissionError("401 no key")


async def test_metric_unreachable_judge_is_judge_error():
    ctx = ScoringContext(judges=[NamedModel(name="jdown", role="judge", chat=_Down())], embedder=ENC)
    resp = Response(item_id="x", model="openai:target", text=reply_json())
    scores = {s.metric: s for s in await ig.IdeaGenerationMetric().score(make_item(), resp, ctx)}
    assert scores["idea_final_score"].status == "judge_error"
    assert "PermissionError: 401 no key" in scores["idea_final_score"].error
    assert scores["idea_effectiveness_obj"].value == pytest.approx(6.0)


async def test_metric_non_dict_reply_final_zero_and_bad_reference():
    m = ig.IdeaGenerationMetric()
    scores = {
        s.metric: s
        for s in await m.score(
            make_item(), Response(item_id="x", model="t", text="[1, 2]"), ScoringContext(embedder=ENC)
        )
    }
    assert scores["idea_final_score"].value == 0.0 and scores["idea_final_score"].status == "ok"
    assert scores["idea_effectiveness_obj"].status == "parse_error"
    assert scores["idea_effectiveness_obj"].error == "the reply parses to a list, not a JSON object"
    bad = make_item(implementation_steps="{'1': ")
    scores = await m.score(bad, Response(item_id="x", model="t", text=reply_json()), ScoringContext(embedder=ENC))
    assert {s.status for s in scores} == {"input_error"}
    assert "reference field 'implementation_steps' is not a Python literal" in scores[0].error


@pytest.mark.minilm
async def test_metric_real_minilm_objective():
    m = ig.IdeaGenerationMetric()
    item = make_item(
        keywords=["graph neural network", "molecular property prediction"],
        related_work="{'a': 'Convolutional networks classify images.'}",
        existing_solutions="{'b': 'Random forests on fingerprints.'}",
        related_work_test="{'p': 'Message passing networks for quantum chemistry.'}",
    )
    on = reply_json(Idea="A graph neural network that predicts molecular properties from molecular graphs.")
    off = reply_json(Idea="A survey of medieval poetry and its rhyme schemes in northern Europe.")
    s_on = {s.metric: s for s in await m.score(item, Response(item_id="x", model="t", text=on), ScoringContext())}
    s_off = {s.metric: s for s in await m.score(item, Response(item_id="x", model="t", text=off), ScoringContext())}
    assert s_on["idea_effectiveness_obj"].value > s_off["idea_effectiveness_obj"].value + 2
    for s in (s_on, s_off):
        for d in OBJ:
            assert 0.0 <= s[f"idea_{d}_obj"].value <= 10.0


async def test_position_biased_scripted_judge_gives_the_expected_flip_share():
    """A judge that always picks the idea shown first flips every verdict with the order."""
    from sgieval.metric_pool.reliability import position_flips, reliability

    A4, B4 = ("[Win A]",) * 4, ("[Win B]",) * 4
    biased = judge("biased", [five(*A4), five(*A4)])  # always "A": reference first, then generated first
    fair = judge("fair", [five(*B4), five(*A4)])  # always the generated idea, in both orders
    # partly biased: the generated idea in both orders, except novelty, where it picks B (the second idea) twice
    partly = judge("partly", [five(*B4), five("[Win A]", "[Win B]", "[Win A]", "[Win A]")])
    ctx = ScoringContext(judges=[biased, fair, partly], embedder=ENC)
    resp = Response(item_id="x", model="openai:target", text=reply_json())
    scores = {s.metric: s for s in await ig.IdeaGenerationMetric().score(make_item(), resp, ctx)}
    eff, nov = scores["idea_effectiveness_win"], scores["idea_novelty_win"]
    # oriented to generated-vs-reference, pairs (judge, dimension) whose verdict changes with the order:
    # effectiveness: biased only -> 1 of 3; novelty: biased and partly -> 2 of 3
    assert reliability([eff], ig.WIN_SPECS["effectiveness"]).position_flip_share == pytest.approx(1 / 3)
    rel = reliability([nov], ig.WIN_SPECS["novelty"])
    assert (rel.position_flip_share, rel.position_pairs) == (pytest.approx(2 / 3), 3)
    # over all five dimensions: the overall line is "[Win A]" in every reply (five()'s default), so it flips for
    # all three judges: biased 5, fair 1 (overall), partly 2 (novelty, overall) of 15 pairs -> 8/15
    assert position_flips([nov]) == (pytest.approx(8 / 15), 15)
    # each judge's own verdict, 100 x its votes for the generated idea / 2: novelty biased 50, fair 100, partly 50
    assert nov.details["judge_values"] == {"biased": 50.0, "fair": 100.0, "partly": 50.0}
    assert eff.details["judge_values"] == {"biased": 50.0, "fair": 100.0, "partly": 100.0}
    # the panel's vote count: effectiveness g = 1 + 2 + 2 = 5 > 3 -> win; novelty g = 1 + 2 + 1 = 4, not > 4 -> tie
    assert (eff.value, nov.value, nov.details["generated_votes"]) == (100.0, 0.0, 4)
