"""Choosing the ranking metric (--metric, or a metric the request names) and saying when a variant of it disagrees,
on a JSONL benchmark answered by two replayed models through the real `sgieval ask` command.

Ten items with reference "Tesla".  alpha answers "Tesla" on items 1-3 and "tesla " on items 4-9 (right after
case-folding), "Gauss" on item 10; beta answers "Tesla" on items 1-2 and "Gauss" elsewhere.
exact_match: alpha 3/10 = 0.30, beta 2/10 = 0.20; alpha - beta is 1 on item 3 and 0 elsewhere, so every sign flip
gives |mean| 0.1: p = 1.  exact_match_normalised: alpha 9/10 = 0.90, beta 0.20; the difference is 1 on items 3-9
and 0 elsewhere: of the 2^10 = 1024 sign flips (exact enumeration) only the 2 x 2^3 = 16 that keep the seven 1s
together reach |mean| 0.7: p = 16/1024 = 0.015625."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sgieval.agents.metric_choice import named_metric, variants_of
from sgieval.cli import app
from sgieval.metric_pool.generic import EXACT, NORMALISED, NUMERIC

runner = CliRunner()


@pytest.fixture
def folder(tmp_path):
    items = [
        {"id": str(i), "prompt": f"Who is the SI unit of flux density {i} named after?", "reference": "Tesla"}
        for i in range(1, 11)
    ]
    (tmp_path / "units.jsonl").write_text("".join(json.dumps(x) + "\n" for x in items))
    alpha = ["Tesla"] * 3 + ["tesla "] * 6 + ["Gauss"]
    beta = ["Tesla"] * 2 + ["Gauss"] * 8
    for name, texts in (("alpha", alpha), ("beta", beta)):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(json.dumps({"item_id": f"jsonl:units/{i}", "text": t}) + "\n" for i, t in enumerate(texts, 1))
        )
    return tmp_path


def _ask(folder, request: str, *opts: str) -> str:
    res = runner.invoke(
        app,
        [
            "ask",
            request,
            "-b",
            str(folder / "units.jsonl"),
            "--models",
            f"replay:{folder / 'alpha.jsonl'},replay:{folder / 'beta.jsonl'}",
            "--yes",
            "--out",
            str(folder / "runs"),
            *opts,
        ],
    )
    assert res.exit_code == 0, res.output
    return next((folder / "runs").glob("*/report.md")).read_text()


def section(text: str, title: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_strict_ranking_says_the_normalised_variant_disagrees(folder):
    text = _ask(folder, "Which model is most accurate?")
    assert "## Ranking by exact_match " in text
    answer = " ".join(section(text, "Answer").split())
    assert (
        "The variant exact_match_normalised disagrees with the ranking metric exact_match about whether replay:alpha "
        "and replay:beta differ: on the 10 items every model scored, exact_match_normalised gives replay:alpha 0.90 "
        "against replay:beta 0.20 (p = 0.0156, separated), where exact_match gives replay:alpha 0.30 against "
        "replay:beta 0.20 (p = 1.0000, not separated); rank by it with --metric exact_match_normalised."
    ) in answer


def test_metric_option_sets_the_ranking_metric_and_the_run_table_says_so(folder):
    text = _ask(folder, "Which model is most accurate?", "--metric", "exact_match_normalised")
    assert "## Ranking by exact_match_normalised " in text
    assert (
        "| ranking metric | exact_match_normalised (set by --metric exact_match_normalised; instead of exact_match"
        in text
    )
    assert "| 1 | replay:alpha | 0.90 |" in text
    # now the strict variant disagrees the other way round
    assert "The variant exact_match disagrees with the ranking metric exact_match_normalised" in " ".join(text.split())


def test_a_metric_named_in_the_request_is_used(folder):
    text = _ask(folder, "Which model wins by normalised exact match?")
    assert "## Ranking by exact_match_normalised " in text
    assert "| ranking metric | exact_match_normalised (named in the request ('exact match normalised')" in text


def test_unknown_metric_option_is_an_error(folder):
    res = runner.invoke(
        app,
        [
            "ask",
            "Which model is most accurate?",
            "-b",
            str(folder / "units.jsonl"),
            "--models",
            f"replay:{folder / 'alpha.jsonl'}",
            "--yes",
            "--out",
            str(folder / "runs"),
            "--metric",
            "exact_mach",
        ],
    )
    assert res.exit_code == 2
    assert "--metric exact_mach is no metric or rubric of this run; did you mean exact_match?" in " ".join(
        res.output.split()
    )


def test_named_metric_by_name_words_and_description():
    names = ["exact_match", "exact_match_normalised", "wet_sequence_similarity"]
    desc = {"wet_sequence_similarity": "SS, 0-1: the sequence similarity of the action sequences"}
    assert named_metric("rank by exact_match_normalised", names, desc) == (
        "exact_match_normalised",
        "exact_match_normalised",
    )
    assert named_metric("rank by exact match", names, desc) == ("exact_match", "exact match")
    assert named_metric("who wins on normalised exact matches?", names, desc) == (
        "exact_match_normalised",
        "exact match normalised",
    )
    # not every word of the name ("wet"), but two consecutive words of its description
    assert named_metric("whose action sequence similarity is best?", names, desc) == (
        "wet_sequence_similarity",
        "sequence similarity",
    )
    assert named_metric("whose action sequence similarity is best?", names, {}) is None
    assert named_metric("Which model is most creative?", names, desc) is None


def test_variants_of():
    assert [s.name for s in variants_of(EXACT, [EXACT, NORMALISED, NUMERIC])] == [
        "exact_match_normalised",
        "numeric_match",
    ]
    assert [s.name for s in variants_of(NORMALISED, [EXACT, NORMALISED, NUMERIC])] == ["exact_match", "numeric_match"]


@pytest.mark.slow  # loads MiniLM
def test_metric_option_adds_a_registered_metric_the_plan_lacks(folder):
    papers = folder / "papers"
    papers.mkdir()
    (papers / "p.md").write_text("# Flux\nThe tesla is the unit of magnetic flux density.")
    text = _ask(folder, "Which model is most accurate?", "--metric", "retrieval_novelty", "--corpus", str(papers))
    assert "## Ranking by retrieval_novelty (scale 0-10, higher is better)" in text
    assert "| ranking metric | retrieval_novelty (set by --metric retrieval_novelty; instead of exact_match" in text


def test_variant_sentence_gives_both_metrics_on_the_verdicts_items_and_names_the_pairs_that_differ():
    from sgieval.agents.metric_choice import variant_disagreements
    from sgieval.core import Score

    # i1-i4 scored by A, B, C; i5 only by A and B (C has no score there), so the verdict's basis is i1-i4.
    #   exact_match:            A 1 1 0 0 = 0.50, B 1 0 1 0 = 0.50, C 1 0 0 0 = 0.25  -> A = B > C
    #   exact_match_normalised: A 1 1 1 0 = 0.75, B 1 0 1 0 = 0.50, C 1 0 1 0 = 0.50  -> A > B = C
    # On each model's own items A would be 3/5 = 0.60 and 4/5 = 0.80: the sentence must not mix these in.
    # A against B (= then >) and B against C (> then =) differ; A against C (> both) does not.
    em = {"A": [1, 1, 0, 0, 1], "B": [1, 0, 1, 0, 1], "C": [1, 0, 0, 0]}
    norm = {"A": [1, 1, 1, 0, 1], "B": [1, 0, 1, 0, 1], "C": [1, 0, 1, 0]}
    scores = [
        Score(item_id=f"i{k}", model=m, metric=spec.name, value=float(x))
        for spec, table in ((EXACT, em), (NORMALISED, norm))
        for m, xs in table.items()
        for k, x in enumerate(xs, 1)
    ]
    out = variant_disagreements(scores, EXACT, [EXACT, NORMALISED], ["A", "B", "C"], n_resamples=1000)
    assert out == [
        "The variant exact_match_normalised disagrees with the ranking metric exact_match about A against B and B "
        "against C: on the 4 items every model scored, exact_match_normalised gives A 0.75 > B = C 0.50, where "
        "exact_match gives A = B 0.50 > C 0.25; rank by it with --metric exact_match_normalised."
    ]
    # equal at 2 decimals is a tie, not an order: C (1.004 + 0 + 1 + 0) / 4 = 0.501 under the variant still ties
    # B at 0.50 (listed by exact mean inside the group, joined by "=")
    scores.append(Score(item_id="i1", model="C", metric=NORMALISED.name, value=1.004))
    out = variant_disagreements(scores, EXACT, [EXACT, NORMALISED], ["A", "B", "C"], n_resamples=1000)
    assert "exact_match_normalised gives A 0.75 > C = B 0.50, where" in out[0]
    # a variant that differs from the ranking metric only below the printed precision (A 0.501 against 0.50) does
    # not disagree: A = B under both
    close = [s for s in scores if s.metric == EXACT.name] + [
        Score(item_id=s.item_id, model=s.model, metric=NORMALISED.name, value=s.value)
        for s in scores
        if s.metric == EXACT.name
    ]
    close.append(Score(item_id="i1", model="A", metric=NORMALISED.name, value=1.004))
    assert variant_disagreements(close, EXACT, [EXACT, NORMALISED], ["A", "B", "C"], n_resamples=1000) == []
