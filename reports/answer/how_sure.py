"""The Answer's "How sure": the paired test behind the verdict (or why there is none), what the full order does not
settle, and the judges' reliability.  Significance wording comes only from the paired test; CI overlap is named only
as overlap, and a CI without variation is never used."""

from __future__ import annotations

from typing import Any

from ..format import count_phrase, fmt2
from ..ranking import ModelStat, ci_overlap, no_variation

__all__ = ["how_sure", "order_note", "reliability_sentences"]


def how_sure(
    ranking: list[ModelStat],
    groups: list[list[ModelStat]],
    pairs: list[dict[str, Any]],
    leader_tests: dict[str, dict[str, Any]] | None = None,
    metric: str = "the ranking metric",
) -> list[str]:
    """The Answer's "How sure" sentences: the paired test behind the verdict (leader against the runner-up, against
    each model tied for second (``leader_tests``), or within a tie for first), or why there is none."""
    ranked = [s for s in ranking if s.summary is not None]
    if len(ranked) < 2 or not groups:
        return []
    top = groups[0]
    if len(top) > 1:
        inside = [p for p in pairs[: len(top) - 1] if p["p"] is not None]
        if not inside:
            return [f"{' and '.join(s.model for s in top)} share too few scored items for a paired test."]
        return [
            "The paired test does not separate them: "
            + "; ".join(f"{p['a']} vs {p['b']} on {count_phrase(p['n'])}, p = {p['p_value']}" for p in inside)
            + "."
        ]
    best, second = top[0], groups[1]
    if len(second) > 1:
        tests = [(leader_tests or {}).get(s.model) for s in second]
        names = " and ".join(s.model for s in second)
        head = f"Against {names}, tied for second (mean {fmt2(second[0].stats.mean)} each)"
        done = [t for t in tests if t is not None and t["p"] is not None]
        if len(done) < len(second):
            return [f"{head}, not every pair shares 2 scored items, so the order is not tested."]
        sig = [t["significant"] for t in done]
        verdict = (
            "a significant difference from each at the 5% level"
            if all(sig)
            else "no significant difference from any of them at the 5% level"
            if not any(sig)
            else "a significant difference from some of them only, at the 5% level"
        )
        return [
            f"{head}, the paired tests give "
            + ", ".join(f"p = {t['p_value']} against {t['b']} ({count_phrase(t['n'])})" for t in done)
            + f": {verdict}."
        ]
    runner = second[0]
    comparison = pairs[0] if pairs else None
    if comparison and comparison.get("p") is not None:
        word = "a significant" if comparison["p"] < 0.05 else "no significant"
        return [
            f"Against the runner-up {runner.model} (mean {fmt2(runner.stats.mean)}), the paired test on "
            f"{comparison['n']} items gives p = {comparison['p_value']}: {word} difference at the 5% level."
        ]
    if best.corpus:
        return [
            f"No paired test against the runner-up {runner.model} (mean {fmt2(runner.stats.mean)}): "
            f"{metric} is one corpus-level value per model, with no per-item values to pair, so the order "
            "alone is not evidence of a difference."
        ]
    shared = comparison["n"] if comparison else 0
    out = [
        f"No paired test against the runner-up {runner.model} (mean {fmt2(runner.stats.mean)}): they share "
        f"{count_phrase(shared, 'scored item')} and the test needs at least 2, so the order is not evidence of a "
        "difference."
    ]
    if not (no_variation(best.stats) or no_variation(runner.stats)) and ci_overlap(best.stats, runner.stats):
        out.append("Their 95% CIs overlap.")
    return out


def order_note(pairs: list[dict[str, Any]]) -> str:
    """What the full order of :func:`separated_order` does not settle, for a ranking with more than one adjacent
    pair: non-adjacent pairs are not tested, and the p-values are not adjusted for multiple comparisons ("" for
    one pair or none).

    Args:
        pairs: the adjacent-rank tests (:func:`pair_entry`).

    Returns:
        One sentence, or "".
    """
    if len(pairs) < 2:
        return ""
    n_tests = sum(1 for p in pairs if p.get("p") is not None)
    return "The full order tests adjacent models only, so it does not settle the order of models further apart" + (
        f"; its {n_tests} p-values are not adjusted for multiple comparisons." if n_tests > 1 else "."
    )


def reliability_sentences(rows: list[dict[str, Any]], primary: str) -> str:
    """The verdict on the ranking metric's judges (else the first judged metric's) and significant self-preferences."""
    if not rows:
        return ""
    # an idea-generation dimension (idea_novelty) is judged through its votes (idea_novelty_win)
    main = next((r for r in rows if r["metric"] == primary), None) or next(
        (r for r in rows if r["metric"] == f"{primary}_win"), rows[0]
    )
    text = " " + main["verdict"]
    if main.get("retest_sentence"):
        text += " " + main["retest_sentence"]
    prefs = [p for r in rows for p in r["significant_self_preference"]]
    if prefs:
        text += " Self-preference: " + "; ".join(prefs) + "."
    return text
