"""`sgieval metric define` chat graph (interrupts resumed with Command) and the `sgieval metric` CLI.

Offline paths use the real MiniLM match; the LLM path uses scripted chat models; `metric test` goes through
the real OpenAI client against the local mock server (bench/mock_openai.py).
"""

from __future__ import annotations

import json
import uuid

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.types import Command
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.core import Rubric
from sgieval.graphs.metric_chat import DESCRIBE_PROMPT, build_metric_chat, run_metric_chat
from sgieval.metric_pool.rubrics import load_rubric
from sgieval.models.base import NamedModel

RIGOR = [
    "logical self-consistency",
    "theory and literature grounding",
    "precise problem definition",
    "discipline-aligned terminology",
    "methodological soundness",
    "risk awareness",
]


@pytest.fixture(autouse=True)
def _user_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SGIEVAL_RUBRIC_DIR", str(tmp_path / "user"))


@pytest.mark.slow
async def test_graph_with_command_resume(tmp_path):
    g = build_metric_chat(save_dir=tmp_path / "out", name="idea_rigor")
    cfg = {"configurable": {"thread_id": str(uuid.uuid4())}}
    r = await g.ainvoke({}, cfg)
    assert r["__interrupt__"][0].value == {"kind": "describe", "message": DESCRIBE_PROMPT}
    r = await g.ainvoke(Command(resume="A rubric for how rigorous a research idea is"), cfg)
    p = r["__interrupt__"][0].value
    assert p["kind"] == "review"
    assert p["message"].startswith("Starting from the library rubric rigor (match 0.")
    assert [c["name"] for c in p["rubric"]["criteria"]] == RIGOR and p["rubric"]["name"] == "idea_rigor"
    r = await g.ainvoke(Command(resume="weigh risk awareness double"), cfg)
    p = r["__interrupt__"][0].value
    assert p["message"] == "weight of 'risk awareness' 1 -> 2."
    assert Rubric.from_yaml(p["yaml"]).weights["risk awareness"] == 2.0
    r = await g.ainvoke(Command(resume="done"), cfg)
    assert "__interrupt__" not in r and r["status"] == "done"
    saved = Rubric.from_yaml(r["saved"])
    assert r["saved"] == str(tmp_path / "out" / "idea_rigor.yaml")
    assert saved == Rubric.model_validate(r["rubric"])  # the YAML loads back equal
    assert saved.weights == {**{c: 1.0 for c in RIGOR}, "risk awareness": 2.0}
    # same criteria/anchors as the starter, only the name and one weight changed
    assert saved.criteria == load_rubric("rigor").criteria
    # value with all criteria at 5 except risk awareness 10: (5*5 + 2*10)/7 = 45/7 -> x10 = 64.29
    assert saved.aggregate({**{c: 5 for c in RIGOR}, "risk awareness": 10}) == pytest.approx(450 / 7)


@pytest.mark.slow
async def test_offline_generic_rubric_and_cancel(tmp_path):
    turns = iter(
        [
            "A metric for cost awareness and use of cheap reagents",
            "drop completeness",
            "add criterion budget table: gives a cost table in USD",
            "make lunch",
            "cancel",
        ]
    )
    seen = []
    state = await run_metric_chat(lambda p: (seen.append(p), next(turns))[1], save_dir=tmp_path)
    assert state["status"] == "cancelled" and "saved" not in state and not list(tmp_path.glob("*.yaml"))
    r = Rubric.model_validate(state["rubric"])
    assert r.name == "cost_awareness"
    assert [c.name for c in r.criteria] == ["cost awareness", "use of cheap reagents", "correctness", "budget table"]
    assert seen[1]["message"].startswith("No library rubric matches (best 0.")
    assert seen[2]["message"] == "dropped 'completeness'."
    assert seen[3]["message"] == "added criterion 'budget table' (weight 1)."
    assert seen[4]["message"].startswith("I did not understand 'make lunch'. Try: 'weigh X double'")


def agent_model(replies: list[str]) -> NamedModel:
    return NamedModel(
        name="scripted-agent",
        role="agent",
        provider="scripted-agent",
        chat=FakeMessagesListChatModel(responses=[AIMessage(content=r) for r in replies]),
    )


async def test_llm_proposal_and_revision(tmp_path):
    def rubric(w: float) -> str:
        return json.dumps(
            {
                "name": "Data Honesty",
                "tasks": [],
                "description": "Honest reporting of data.",
                "criteria": [
                    {
                        "name": "no fabrication",
                        "description": "No invented data.",
                        "anchors": {"0": "fabricated", "5": "unclear", "10": "all data sourced"},
                    },
                    {"name": "uncertainty", "description": "Error bars given.", "anchors": {"0": "none", "10": "all"}},
                ],
                "weights": {"uncertainty": w},
            }
        )

    agent = agent_model([rubric(1), "not json at all", rubric(3)])
    turns = iter(["how honestly results are reported", "uncertainty weight 3", "done"])
    state = await run_metric_chat(lambda p: next(turns), agent=agent, save_dir=tmp_path)
    saved = Rubric.from_yaml(state["saved"])
    assert state["saved"] == str(tmp_path / "data_honesty.yaml")
    assert saved.name == "data_honesty" and saved.tasks == ["*"]
    assert saved.weights == {"no fabrication": 1.0, "uncertainty": 3.0}
    assert saved.source == "user (sgieval metric define)"
    # the revision reply "not json at all" was retried (ask_judge) and the second reply used
    assert [h["text"] for h in state["history"] if h["role"] == "agent"][
        1
    ] == "scripted-agent revised the rubric (2 criteria)."


@pytest.mark.slow
def test_cli_define_with_stdin(tmp_path):
    res = CliRunner().invoke(
        app,
        ["metric", "define", "--name", "my_rigor"],
        input="a rubric for how rigorous a research idea is\nweigh risk awareness double\ndone\n",
    )
    assert res.exit_code == 0, res.output
    path = tmp_path / "user" / "my_rigor.yaml"
    assert f"saved: {path}" in res.output.replace("\n", "")
    r = Rubric.from_yaml(path)
    assert Rubric.from_yaml(r.to_yaml()) == r
    assert r.weights["risk awareness"] == 2.0 and sum(r.weights.values()) == 7.0
    # list / show see the user rubric
    res = CliRunner().invoke(app, ["metric", "show", "my_rigor"])
    assert res.exit_code == 0 and Rubric.from_yaml(res.output) == r
    res = CliRunner().invoke(app, ["metric", "list"])
    assert res.exit_code == 0 and "my_rigor" in res.output and "starter" in res.output


@pytest.mark.slow
def test_cli_define_eof_cancels(tmp_path):
    res = CliRunner().invoke(app, ["metric", "define"], input="how clear the answer is\n")
    assert res.exit_code == 3
    assert "cancelled; nothing saved" in res.output
    assert not (tmp_path / "user").exists()


def test_cli_show_unknown_is_exit_2():
    res = CliRunner().invoke(app, ["metric", "show", "elegance"])
    assert res.exit_code == 2
    assert "no rubric called 'elegance'" in res.output


def test_cli_metric_test_through_openai_client(tmp_path):
    from sgieval.bench.mock_openai import MockOpenAI

    reply = json.dumps(
        {
            "scores": [
                {"criterion": c, "score": s, "rationale": f"why {i}", "evidence": []}
                for i, (c, s) in enumerate(zip(RIGOR, [8, 6, 7, 5, 9, 4]))
            ]
        }
    )
    resp = tmp_path / "idea.txt"
    resp.write_text("Encapsulate graphene in hBN; control for substrate disorder.")
    with MockOpenAI(replies=[reply]) as mock:
        res = CliRunner().invoke(
            app,
            [
                "metric",
                "test",
                "rigor",
                "--response",
                str(resp),
                "--judge",
                "openai:mock",
                "--base-url",
                mock.url,
                "--question",
                "How to raise graphene mobility?",
            ],
        )
        body = mock.log()
    assert res.exit_code == 0, res.output
    # equal weights: (8+6+7+5+9+4)/6 = 39/6 = 6.5 -> 65.0
    assert "rigor: 65.0 / 100 (judge: openai:mock; tools used: none)" in res.output
    assert "why 5" in res.output and "risk awareness" in res.output
    assert len(body) == 1


def test_cli_metric_test_missing_response_file_is_an_error(tmp_path):
    # a path-like --response that does not exist is not scored as text
    res = CliRunner().invoke(
        app,
        [
            "metric",
            "test",
            "rigor",
            "--response",
            str(tmp_path / "missing.txt"),
            "--judge",
            "openai:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
    )
    assert res.exit_code == 2
    assert f"--response {tmp_path / 'missing.txt'}: no such file" in " ".join(res.output.split())


@pytest.mark.slow
async def test_edited_starter_is_saved_beside_it_not_over_it(tmp_path):
    turns = iter(["A rubric for how rigorous a research idea is", "add a criterion about safety of reagents", "done"])
    state = await run_metric_chat(lambda payload: next(turns), save_dir=tmp_path / "out")
    assert state["status"] == "done"
    saved = Rubric.from_yaml(state["saved"])
    assert state["saved"] == str(tmp_path / "out" / "rigor_custom.yaml") and saved.name == "rigor_custom"
    assert [c.name for c in saved.criteria] == [*RIGOR, "safety of reagents"]
    assert "rigor is a starter rubric" in state["message"]
    assert load_rubric("rigor").criteria != saved.criteria  # the starter is untouched


@pytest.mark.slow
async def test_explicit_name_of_a_starter_says_it_replaces_it(tmp_path):
    turns = iter(["whether the answer uses emojis", "done"])
    state = await run_metric_chat(lambda payload: next(turns), save_dir=tmp_path / "out", name="clarity")
    assert state["saved"] == str(tmp_path / "out" / "clarity.yaml")
    assert state["message"].endswith(
        "(it replaces the starter rubric clarity in every later run; delete the file to undo)"
    )
