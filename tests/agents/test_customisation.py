"""Customisation agent: offline plan with library rubrics, the LLM path drafting rubrics (PDF-grounded, drafted
for a quality with no metric), PDF detection, and the offline rubric revisions of `sgieval metric define`."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

from sgieval.agents.customisation import named_pdfs, run_customisation  # noqa: E402
from sgieval.agents.rubric_authoring import generic_rubric, key_phrases, match_criterion, revise_offline  # noqa: E402
from sgieval.core import Item  # noqa: E402
from sgieval.metric_pool.rubrics import load_rubric  # noqa: E402
from sgieval.models.base import NamedModel  # noqa: E402

ITEMS = [
    Item(
        id=f"sgi-bench/idea/{i}",
        benchmark="sgi-bench",
        task="idea_generation",
        discipline="physics",
        prompt=f"Propose idea {i}",
    )
    for i in range(2)
]


class Recording(FakeMessagesListChatModel):
    seen: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001
        self.seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def agent(replies: list[str]) -> NamedModel:
    return NamedModel(
        name="scripted-agent",
        role="agent",
        provider="scripted-agent",
        chat=Recording(responses=[AIMessage(content=r) for r in replies], seen=[]),
    )


@pytest.fixture(autouse=True)
def _user_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SGIEVAL_RUBRIC_DIR", str(tmp_path / "user"))


async def test_offline_plan_takes_the_rigor_starter_rubric():
    plan, metrics, _ = await run_customisation("Which model has the best rigor in idea generation?", ITEMS)
    assert [r.name for r in plan.custom] == ["rigor"] and plan.primary == "rigor"
    assert len(plan.custom[0].criteria) == 6
    assert "idea_final_score" in plan.predefined  # predefined metrics kept beside the custom one
    assert plan.planner == "offline"


@pytest.mark.slow
async def test_offline_plan_notes_quality_without_rubric():
    plan, _, _ = await run_customisation("Which model shows the most cost awareness in idea generation?", ITEMS)
    assert plan.custom == []
    assert "'cost awareness' has no predefined metric for the selected tasks and no starter rubric" in plan.notes


JSONL_ITEMS = [
    Item(id=f"jsonl:qa/q{i}", benchmark="jsonl:qa", task="generic", prompt=f"Question {i}", reference={"answer": "4"})
    for i in range(2)
]


@pytest.mark.parametrize("request_", ["Which model is most accurate?", "Which model gives the most correct answers?"])
async def test_accuracy_on_a_user_benchmark_is_exact_match(request_):
    """Exact Match measures accuracy: the plan ranks by it and says so, never "no predefined metric"."""
    plan, _, _ = await run_customisation(request_, JSONL_ITEMS)
    assert plan.primary == "exact_match" and plan.custom == []
    assert "'accuracy' is measured by the predefined metric exact_match" in plan.reason
    assert not any("accuracy" in n for n in plan.notes)


def make_pdf(path: Path, lines: list[str]) -> Path:
    with PdfPages(path, metadata={"Title": "Cost Rubric", "Author": "A. Reviewer"}) as pdf:
        fig = plt.figure(figsize=(6, 4))
        for i, line in enumerate(lines):
            fig.text(0.05, 0.9 - 0.1 * i, line)
        pdf.savefig(fig)
        plt.close(fig)
    return path


RUBRIC = {
    "name": "Cost Awareness",
    "tasks": [],
    "description": "Awareness of the cost of the proposed work.",
    "criteria": [
        {"name": "budget", "description": "Gives a budget.", "anchors": {"0": "none", "10": "itemised"}},
        {
            "name": "cheap alternatives",
            "description": "Names cheaper options.",
            "anchors": {"0": "none", "5": "one", "10": "several, compared"},
        },
    ],
    "weights": {"budget": 2},
}


async def test_llm_plan_reads_named_pdf_and_cites_it(tmp_path):
    pdf = make_pdf(tmp_path / "cost_rubric.pdf", ["Criterion 1: budget is itemised", "Criterion 2: cheap alternatives"])
    a = agent(
        [
            json.dumps(
                {
                    "primary": "cost_awareness",
                    "qualities": ["cost awareness"],
                    "custom": [RUBRIC],
                    "reason": "cost awareness is not measured by the pool",
                }
            )
        ]
    )
    request = f"Which model shows the most cost awareness in idea generation? Use the rubric in {pdf}."
    plan, _, trace = await run_customisation(request, ITEMS, agent=a)
    [r] = plan.custom
    assert r.name == "cost_awareness" and r.tasks == ["*"] and r.weights == {"budget": 2.0, "cheap alternatives": 1.0}
    assert r.source == (f"drafted by agent scripted-agent from the request: {request}; {pdf} (Cost Rubric)")
    assert plan.primary == "cost_awareness" and plan.planner == "scripted-agent"
    assert trace["documents"] == [{"path": str(pdf), "title": "Cost Rubric", "pages": 1, "partial": False}]
    human = a.chat.seen[0][1].content
    assert "<<<DOCUMENT>>>" in human and "Criterion 1: budget is itemised" in human
    assert len(a.chat.seen) == 1  # one structured call: the plan already covers the quality


async def test_llm_drafts_rubric_for_quality_the_pool_lacks():
    a = agent([json.dumps({"primary": "idea_final_score", "qualities": ["cost awareness"]}), json.dumps(RUBRIC)])
    plan, _, trace = await run_customisation(
        "Which model shows the most cost awareness in idea generation?", ITEMS, agent=a
    )
    [r] = plan.custom
    assert r.name == "cost_awareness" and r.source == "drafted by scripted-agent for 'cost awareness'"
    assert not any(n.startswith("'cost awareness' has no predefined metric") for n in plan.notes)
    assert len(a.chat.seen) == 2 and "Quality to measure: cost awareness" in a.chat.seen[1][1].content


async def test_unreadable_pdf_is_noted(tmp_path):
    bad = tmp_path / "broken.pdf"
    bad.write_text("not a pdf")
    plan, _, _ = await run_customisation(f"rigor in idea generation per {bad}", ITEMS)
    assert plan.notes[0].startswith(f"the PDF {bad} named in the request could not be read:")
    assert [r.name for r in plan.custom] == ["rigor"]


def test_named_pdfs():
    assert named_pdfs("use ~/p/rubric.pdf, and '/my papers/r.pdf' or rel/a.PDF.") == [
        "/my papers/r.pdf",
        "~/p/rubric.pdf",
        "rel/a.PDF",
    ]
    assert named_pdfs("no documents here") == []


def test_key_phrases_and_generic_rubric():
    assert key_phrases("A metric for cost awareness and use of cheap reagents") == [
        "cost awareness",
        "use of cheap reagents",
    ]
    r = generic_rubric("A metric for cost awareness and use of cheap reagents")
    assert r.name == "cost_awareness"
    assert [c.name for c in r.criteria] == ["cost awareness", "use of cheap reagents", "correctness", "completeness"]
    assert all(sorted(c.anchors) == [0, 5, 10] for c in r.criteria)


@pytest.mark.parametrize(
    "request_, weights",
    [
        ("weigh risk awareness double", {"risk awareness": 2.0}),
        ("risk awareness weight 3", {"risk awareness": 3.0}),
        ("set the weight of methodology to 0.5", {"methodological soundness": 0.5}),
        ("double the weight of grounding", {"theory and literature grounding": 2.0}),
        ("weigh risks double; terminology weight 2", {"risk awareness": 2.0, "discipline-aligned terminology": 2.0}),
        ("weigh risk awareness x1.5", {"risk awareness": 1.5}),
    ],
)
def test_offline_weight_revisions(request_, weights):
    r, msg = revise_offline(load_rubric("rigor"), request_)
    assert {k: v for k, v in r.weights.items() if v != 1.0} == weights
    assert msg.startswith("weight of '")


def test_offline_drop_add_rename_and_errors():
    rig = load_rubric("rigor")
    r, msg = revise_offline(rig, "drop terminology")
    assert msg == "dropped 'discipline-aligned terminology'." and len(r.criteria) == 5
    r, msg = revise_offline(rig, "add criterion cost awareness: states the cost")
    assert r.criteria[-1].name == "cost awareness" and r.criteria[-1].description == "states the cost"
    r, msg = revise_offline(rig, "rename to Strict Rigor")
    assert r.name == "strict_rigor" and msg == "renamed rigor -> strict_rigor."
    r, msg = revise_offline(rig, "weigh foo double")
    assert r == rig and msg.startswith("no criterion matches 'foo' (criteria: logical self-consistency,")
    r, msg = revise_offline(rig, "risk awareness weight -1")
    assert r == rig and msg.startswith("I did not understand 'risk awareness weight -1'.")


def test_match_criterion():
    rig = load_rubric("rigor")
    assert match_criterion(rig, "Risk Awareness") == "risk awareness"
    assert match_criterion(rig, "the literature") == "theory and literature grounding"
    assert match_criterion(rig, "methodology") == "methodological soundness"
    assert match_criterion(rig, "banana") is None


async def test_offline_plan_notes_an_unknown_quality_and_finds_a_matching_user_rubric(tmp_path):
    from sgieval.agents.customisation import unrecognised_qualities
    from sgieval.core import Criterion, Rubric
    from sgieval.metric_pool.rubrics import save_rubric

    assert unrecognised_qualities("Which model is most honest about limitations? The clearest?") == ["honest"]
    assert unrecognised_qualities("the most cost awareness; most creative; most recent models") == []
    req = "Which model is most honest about limitations in idea generation?"
    plan, _, _ = await run_customisation(req, ITEMS)
    assert plan.custom == [] and plan.primary == "idea_final_score"
    assert (
        "'honest' (asked in the request) is measured by no metric or rubric here, so the ranking does not "
        "measure it; define one with `sgieval metric define`"
    ) in plan.notes
    # once the user has an honesty rubric, the same request uses it
    anchors = {0: "hides every limitation", 5: "mentions some", 10: "states every limitation"}
    save_rubric(
        Rubric(
            name="honesty",
            tasks=["*"],
            description="How honest the response is about its limitations and uncertainty",
            criteria=[
                Criterion(
                    name="honesty about limitations",
                    description="states what the idea cannot do and what is uncertain",
                    anchors=anchors,
                )
            ],
        ),
        user=True,
    )
    plan, _, _ = await run_customisation(req, ITEMS)
    assert [r.name for r in plan.custom] == ["honesty"] and plan.primary == "honesty"
    assert "'honest' matches the rubric honesty (1 criteria)" in plan.reason
