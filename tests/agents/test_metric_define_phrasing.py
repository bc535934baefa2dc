"""Offline `metric define`: several changes in one sentence, quoted names with a weight, no
instruction turned into a criterion name, drafted descriptions that say what is checked, phrasings shown first,
no progress bar in the prompt."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sgieval.agents.rubric_authoring import (
    drafted_criterion,
    generic_rubric,
    key_phrases,
    revise_offline,
    split_revisions,
)
from sgieval.cli import app

BASE = generic_rubric(
    "A metric for cost awareness and use of cheap reagents"
)  # cost awareness, use of ..., correctness, completeness


def _weights(r):
    return [(c.name, r.weights[c.name]) for c in r.criteria]


def test_split_revisions_keeps_quoted_names_whole():
    assert split_revisions('add a criterion "testable hypothesis" with weight 2 and remove completeness') == [
        'add a criterion "testable hypothesis" with weight 2',
        "remove completeness",
    ]
    assert split_revisions('add criterion "cost and safety" and weigh correctness double') == [
        'add criterion "cost and safety"',
        "weigh correctness double",
    ]
    assert split_revisions("drop clarity; rename to strict") == ["drop clarity", "rename to strict"]


@pytest.mark.parametrize(
    "request_",
    [
        'add a criterion "testable hypothesis" with weight 2 and remove completeness',
        "add criterion testable hypothesis weight 2; drop completeness",
        "add a criterion \u201ctestable hypothesis\u201d (weight 2) and then delete completeness",
    ],
)
def test_add_with_weight_and_remove_in_one_sentence(request_):
    r, msg = revise_offline(BASE, request_)
    assert _weights(r) == [
        ("cost awareness", 1.0),
        ("use of cheap reagents", 1.0),
        ("correctness", 1.0),
        ("testable hypothesis", 2.0),
    ]
    assert msg == "added criterion 'testable hypothesis' (weight 2); dropped 'completeness'."
    assert r.criteria[-1].description == (
        "Checks whether the response contains a testable hypothesis that is stated explicitly, is specific enough "
        "to act on or test, and is supported by reasoning or evidence."
    )


def test_an_instruction_is_never_a_criterion_name():
    r, msg = revise_offline(BASE, "add a criterion safety and blah, remove it too")
    assert r == BASE
    assert msg.startswith(
        "I did not understand 'add a criterion safety and blah, remove it too' (which words name "
        "the criterion?); put the name in quotes"
    )
    r, msg = revise_offline(BASE, "add a criterion about safety and make it count double")
    assert _weights(r)[-1] == ("safety", 2.0)
    assert msg == "added criterion 'safety' (weight 1); weight of 'safety' 1 -> 2."


def test_drafted_descriptions_say_what_is_checked():
    assert key_phrases("a metric for how well a research idea states a testable hypothesis and estimates its cost") == [
        "testable hypothesis",
        "estimates its cost",
    ]
    c = drafted_criterion("estimates its cost")
    assert c.description == (
        "Checks whether the response estimates its cost, explicitly and specifically, and whether "
        "that part is correct and supported by reasoning or evidence."
    )
    assert c.anchors[0] == "The response does not estimate its cost."
    for crit in generic_rubric("cost awareness and use of cheap reagents").criteria[:2]:
        assert crit.description.startswith("Checks whether the response contains")
        assert crit.description != f"How well the response shows {crit.name}."


@pytest.mark.slow
def test_cli_shows_phrasings_before_the_first_change_and_no_progress_bar(tmp_path, monkeypatch):
    monkeypatch.setenv("SGIEVAL_RUBRIC_DIR", str(tmp_path))
    res = CliRunner().invoke(
        app,
        ["metric", "define", "--name", "hyp"],
        input=(
            "a metric for how well a research idea states a testable hypothesis and estimates its cost\n"
            'add a criterion "novel mechanism" with weight 2 and remove completeness\ndone\n'
        ),
    )
    assert res.exit_code == 0, res.output
    out = res.output
    assert out.index("Changes you can ask for (offline):") < out.index("added criterion 'novel mechanism' (weight 2)")
    assert "Loading weights" not in out and "it/s]" not in out
    from sgieval.core import Rubric

    r = Rubric.from_yaml(tmp_path / "hyp.yaml")
    assert _weights(r)[-1] == ("novel mechanism", 2.0) and "completeness" not in r.weights


BASE_FORMS = {
    "states": "state", "gives": "give", "estimates": "estimate", "includes": "include", "provides": "provide",
    "proposes": "propose", "describes": "describe", "explains": "explain", "considers": "consider", "uses": "use",
    "has": "have", "contains": "contain", "discusses": "discuss", "identifies": "identify", "addresses": "address",
    "mentions": "mention", "offers": "offer", "presents": "present", "defines": "define", "reports": "report",
    "cites": "cite", "quantifies": "quantify", "justifies": "justify", "compares": "compare", "lists": "list",
    "avoids": "avoid", "follows": "follow",
}  # fmt: skip
"""Every verb the offline drafter reads as an action, with its base form written by hand."""


@pytest.mark.parametrize("verb", sorted(BASE_FORMS))
def test_the_zero_anchor_puts_the_verb_in_its_base_form(verb):
    # "identifies its limits" -> "does not identify its limits" (not "identifi"), "has a control" -> "have"
    assert drafted_criterion(f"{verb} its limits").anchors[0] == f"The response does not {BASE_FORMS[verb]} its limits."


def test_every_action_verb_has_a_hand_written_base_form():
    from sgieval.agents.rubric_authoring import _VERBS

    assert sorted(_VERBS) == sorted(BASE_FORMS)
