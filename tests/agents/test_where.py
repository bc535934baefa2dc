"""Where the models differ, on the real stored SciAidanBench answers through `sgieval ask`: the "Who wins where"
tables, where o1-mini's lead comes from, the near-ties, the facet values where the overall winner is not first, and
the items whose order departs most from the overall one (linked to the viewer)."""

from __future__ import annotations

import pytest
from sgieval.cli import app
from sgieval.reports.answer.where import WHERE_REQUEST
from sgieval.reports.sections.where import item_link
from typer.testing import CliRunner

runner = CliRunner()


def _report(tmp_path, request: str) -> str:
    res = runner.invoke(app, ["ask", request, "--yes", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    return (run_dir / "report.md").read_text()


def section(text: str, title: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_physics_creativity_names_synchrotron_and_the_condensed_matter_near_tie(tmp_path):
    text = _report(tmp_path, "How do the models compare on physics creativity, and where do they disagree?")
    answer = section(text, "Answer")
    # the request asks where: the Answer says where first, then the fixed verdict.  o1-mini - 4o per item summed over
    # the 57 physics items: 299; over the 10 Synchrotron items 151 (230 - 79); o1-mini's 781 accepted answers hold
    # 230 from Synchrotron
    lines = answer.strip().splitlines()
    assert lines[1].startswith("- **Verdict:** ")
    assert lines[0].startswith(
        "- **Where it differs:** replay:o1-mini's lead over replay:openai/4o comes mostly from Synchrotron: its 10 items hold 151 (51%) of "
        "the 299 by which replay:o1-mini's summed aidan_accepted_answers exceeds replay:openai/4o's on the 57 items "
        "both scored; replay:o1-mini has 230 of its 781 there."
    )
    # Condensed Matter: 71/7 = 10.14 against 66/7 = 9.43, a lead of 7% of the first's mean, p = 0.98
    assert (
        "Condensed Matter is a near-tie: replay:o1-mini 10.14 against replay:llama3.3:latest 9.43 "
        "aidan_accepted_answers per item; the paired test does not separate them (p = 0.9844)."
    ) in answer
    where = section(text, "Who wins where")
    assert "### By discipline" not in where  # one discipline selected: no table
    assert (
        "| Synchrotron | 10 | replay:o1-mini (23.00) | replay:openai/4o (7.90) | +15.10 | yes (p = 0.0156, 10 items) |"
    ) in where
    assert (
        "| Condensed Matter | 7 | replay:o1-mini (10.14) | replay:llama3.3:latest (9.43) | +0.71 | no (p = 0.9844"
        in (where)
    )
    assert "### Items where the order differs most" in where
    assert (
        "| [sciaidanbench/physics-condensed-matter/1](viewer/index.html#/item/sciaidanbench%2Fphysics-condensed-matter%2F1)"
        " | 16 | replay:phi4:latest 23 > replay:qwen2.5:latest 9 > replay:o1-mini 8 >"
    ) in where


@pytest.mark.slow
def test_disciplines_request_names_biology_where_o1_mini_is_third(tmp_path):
    text = _report(tmp_path, "Where do the models disagree on creativity across disciplines?")
    answer = section(text, "Answer")
    assert (
        answer.strip()
        .splitlines()[0]
        .startswith(
            "- **Where it differs:** By discipline, replay:o1-mini is first overall but not in Biology (replay:llama3.3:latest first, "
            "replay:o1-mini 3rd)."
        )
    )
    assert answer.count("not in Biology") == 1  # the direction table's Biology row is not named twice
    # Biology: llama3.3 181/20 = 9.05, 4o 179/20 = 8.95, o1-mini 150/20 = 7.50
    assert "| Biology | 20 | replay:llama3.3:latest (9.05) | replay:openai/4o (8.95) | +0.10 | no (p = 0.9817" in (
        section(text, "Who wins where")
    )


def test_a_leader_the_paired_test_does_not_separate_is_never_called_first_overall(tmp_path):
    text = _report(tmp_path, "Where do the models disagree on creativity in chemistry and biology?")
    answer = section(text, "Answer")
    # 4o: 274 (chemistry) + 179 (biology) = 453 over 45 items, o1-mini 296 + 150 = 446: 4o has the highest mean, but
    # the paired test gives p = 0.94, so "first overall" would be a claim the data do not support
    assert "first overall" not in text
    assert (
        "- **Where it differs:** By discipline, replay:openai/4o has the highest overall mean (the paired test does "
        "not separate it from replay:o1-mini) but is not first in Biology (replay:llama3.3:latest first, "
        "replay:openai/4o 2nd); Chemistry (replay:o1-mini first, replay:openai/4o 2nd). Biology alone holds a lead of "
        "29 for replay:openai/4o over replay:o1-mini" in answer
    )


def test_a_ranking_request_states_the_verdict_first(tmp_path):
    text = _report(tmp_path, "Which model is the most creative in physics?")
    answer = section(text, "Answer").strip()
    assert answer.startswith(
        '- **Verdict:** To "Which model is the most creative in physics?": **replay:o1-mini** ranks first'
    )
    # o1-mini is separated from 4o (p < 0.05): the winner in bold; of the other adjacent pairs only
    # llama3.3 vs phi4 and qwen2.5 vs mistral are separated
    assert "the paired test separates it from the runner-up replay:openai/4o at the 5% level (p = 0.0" in answer
    assert (
        "): replay:o1-mini > replay:openai/4o ≈ replay:llama3.3:latest > replay:phi4:latest ≈ replay:qwen2.5:latest "
        "> replay:mistral:latest." in answer
    )
    assert answer.splitlines()[1].startswith("- **How sure:** ")  # not asked where: the test comes first
    assert "comes mostly from Synchrotron" in answer


def test_where_words():
    asks_where = WHERE_REQUEST.search
    assert asks_where("Where do the models disagree?") and asks_where("In which fields does o1-mini lead?")
    assert asks_where("which topics favour llama?") and not asks_where("Which model is the most creative?")
    assert item_link("sciaidanbench/chemistry/2") == "viewer/index.html#/item/sciaidanbench%2Fchemistry%2F2"


# The new user's benchmark: model_d is model_a with q2 right.  exact_match per item (discipline):
#   q1 math d 1 a 1 b 0 | q2 chemistry b 1 d 1 a 0 | q3 physics b 1 d 0 a 0 | q4 biology d 1 a 1 b 0
#   q5 math all 0       | q6 physics b 1 d 0 a 0
# overall b 3/6 = 0.50, d 0.50, a 2/6 = 0.33
NEWUSER = {
    "q1": ("math", {"d": 1, "a": 1, "b": 0}),
    "q2": ("chemistry", {"b": 1, "d": 1, "a": 0}),
    "q3": ("physics", {"b": 1, "d": 0, "a": 0}),
    "q4": ("biology", {"d": 1, "a": 1, "b": 0}),
    "q5": ("math", {"d": 0, "a": 0, "b": 0}),
    "q6": ("physics", {"b": 1, "d": 0, "a": 0}),
}


def _where(table, ranked, request="In which fields do the models differ in accuracy?"):
    from sgieval.agents.reporting import POOL
    from sgieval.core import Item, Score
    from sgieval.metric_pool.generic import EXACT
    from sgieval.reports.sections.where import where_report

    items = [Item(id=i, benchmark="b", task="qa", discipline=d, prompt="?") for i, (d, _v) in table.items()]
    scores = [
        Score(item_id=i, model=m, metric=EXACT.name, value=float(x))
        for i, (_d, v) in table.items()
        for m, x in v.items()
    ]
    return where_report(request, items, scores, EXACT, ranked, pool=POOL, n_resamples=1000, seed=0)


def test_tied_models_are_one_group_in_the_where_table_and_the_answer_names_where_they_differ_most():
    rep = _where(NEWUSER, [("b", 0.5), ("d", 0.5), ("a", 2 / 6)])
    rows = {r[0]: r for r in rep.section.blocks[2].rows}
    # biology: d = a at 1.00 (a tie, never "d 1.00 > a 1.00"), b 0.00 second
    assert rows["biology"][2:5] == ["d = a (1.00)", "b (0.00)", "tie"]
    assert rows["biology"][6] == "d = a 1.00 > b 0.00"
    # physics: b 1.00 first; the second is the group d = a at 0.00, not d chosen by name; b - d = b - a = (1, 1):
    # of the 4 sign flips 2 reach |mean| 1: p = 0.5
    assert rows["physics"][2:6] == ["b (1.00)", "d = a (0.00)", "+1.00", "no (p = 0.5000, 2 items)"]
    assert rows["physics"][6] == "b 1.00 > d = a 0.00"
    # the Answer names the largest gap first-to-second group (1.00 in physics, biology, chemistry; math 0.50),
    # the value with a single first model first, and the ties after
    s = rep.sentences
    assert s[0] == (
        "The models differ most in physics (discipline): b (1.00) against d = a (0.00), a gap of 1.00 exact_match "
        "per item (the paired test does not separate them, p = 0.5000); biology (discipline): d = a (1.00) against "
        "b (0.00), a gap of 1.00 exact_match per item; chemistry (discipline): b = d (1.00) against a (0.00), a gap "
        "of 1.00 exact_match per item."
    )
    assert s[1:] == [
        "biology is a tie: d = a at 1.00 exact_match per item.",
        "chemistry is a tie: b = d at 1.00 exact_match per item.",
        "math is a tie: d = a at 0.50 exact_match per item.",
    ]
    # departures: overall ranks b 1.5, d 1.5, a 3.  q1, q4 (d = a 1.5, b 3): 1.5 + 0 + 1.5 = 3; q3, q6 (b 1,
    # d = a 2.5): 0.5 + 1 + 0.5 = 2; q2 (b = d > a) 0; q5 (all 0) has no order and is left out
    dep = rep.section.blocks[-1].rows
    assert [(r[0].split("]")[0][1:], r[1], r[2]) for r in dep] == [
        ("q1", "3", "d = a 1 > b 0"),
        ("q4", "3", "d = a 1 > b 0"),
        ("q3", "2", "b 1 > d = a 0"),
        ("q6", "2", "b 1 > d = a 0"),
    ]


def test_facets_that_offset_a_lead_are_named_instead_of_a_share_over_100_percent():
    # x leads y overall by 1 (x 2/3 = 0.67, y 1/3 = 0.33): physics x - y = +2 on 2 items, chemistry -1 on 1 item
    table = {
        "p1": ("physics", {"x": 1, "y": 0}),
        "p2": ("physics", {"x": 1, "y": 0}),
        "c1": ("chemistry", {"x": 0, "y": 1}),
    }
    rep = _where(table, [("x", 2 / 3), ("y", 1 / 3)], request="Which model is most accurate?")
    assert (
        "physics alone holds a lead of 2 for x over y (summed exact_match on its 2 items), larger than the overall "
        "lead of 1 on the 3 items both scored: other discipline values offset it (chemistry -1)."
    ) in rep.sentences
    assert not any("%)" in s for s in rep.sentences)


@pytest.mark.slow
def test_the_stored_answers_name_where_the_models_differ_most_once_and_print_ties_as_ties(tmp_path):
    text = _report(tmp_path, "In which fields do the models differ?")
    answer = " ".join(section(text, "Answer").split())
    # Nanoscience is both a discipline and a direction of the same 32 items: named once, with its gap (o1-mini
    # 911 accepted answers over 32 items = 28.47 per item, 4o 11.66)
    assert (
        "The models differ most in Nanoscience (discipline): replay:o1-mini (28.47) against replay:openai/4o "
        "(11.66), a gap of 16.81 aidan_accepted_answers per item (the paired test separates them, p = 0.0004)."
    ) in answer
    assert "Nanoscience (direction)" not in answer


def test_one_model_request_states_its_neighbours_and_ties_in_the_where_table(tmp_path):
    res = runner.invoke(app, ["ask", "How good is llama3.3 at physics?", "--k", "10", "--yes", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    text = next(tmp_path.glob("*/report.md")).read_text()
    answer = " ".join(section(text, "Answer").split())
    assert (
        "Among the 6 evaluated models it ranks 2nd; first is replay:o1-mini (mean 13.80). By the paired tests it is "
        "not separated from replay:o1-mini just above (p = 0.50, 10 items) and not separated from replay:openai/4o "
        "just below (p = 0.28, 10 items); so its rank is not established."
    ) in answer
    # qwen2.5 and phi4 both have 9 accepted answers on the 2 Condensed Matter items (4.50 each): a tie
    assert "replay:mistral:latest 5.00 > replay:qwen2.5:latest = replay:phi4:latest 4.50 |" in text


def test_a_shared_second_place_is_said_beside_the_lead_breakdown():
    # x 3/3 = 1.00 first; y and z both 1/3 = 0.33, tied for second.  x - y: physics (p1, p2) 1 + 0 = 1, chemistry
    # (c1) 1: total 2, physics 1 of 2 (50%)
    table = {
        "p1": ("physics", {"x": 1, "y": 0, "z": 1}),
        "p2": ("physics", {"x": 1, "y": 1, "z": 0}),
        "c1": ("chemistry", {"x": 1, "y": 0, "z": 0}),
    }
    rep = _where(table, [("x", 1.0), ("y", 1 / 3), ("z", 1 / 3)], request="Which model is most accurate?")
    assert "y shares second place with z at 0.33 exact_match per item: the lead above is over y only." in rep.sentences
