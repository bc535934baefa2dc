"""Who judged: the judgement sources recorded on the scores (stored or live acceptance decisions), the Run
table's judge row, and self-preference (a ranked model that judged its own answers)."""

from __future__ import annotations

from typing import Iterable

from ..core import Score, same_model


def judgement_sources(scores: Iterable[Score], models: list[str]) -> list[dict[str, str]]:
    """The distinct ``details["judged_by"]`` records (who decided acceptance) of the target models' scores, first seen
    first.

    Args:
        scores: the run's scores.
        models: the target models.

    Returns:
        The records.
    """
    out: list[dict[str, str]] = []
    for s in scores:
        jb = (s.details or {}).get("judged_by")
        if s.model in models and isinstance(jb, dict) and jb not in out:
            out.append(jb)
    return out


def judge_summary(sources: list[dict[str, str]], live_judges: list[str], judge_metrics_scored: bool) -> str:
    """The Run table's judge row: the live judges (or none) and every stored judgement source."""
    if live_judges:
        parts = [", ".join(live_judges)]
    else:
        parts = ["none called in this run" + ("" if judge_metrics_scored else " (judge metrics not run)")]
    for src in sources:
        what = (
            f"coherence by {src.get('coherence')}, novelty by {src.get('novelty')} embeddings "
            f"(from {src.get('source')})"
        )
        if src.get("origin") == "stored":
            parts.append(f"stored judgements of the original run: {what}")
        elif not live_judges or src.get("coherence") not in live_judges:
            parts.append(f"open-creativity protocol: {what}")
    return "; ".join(parts)


def self_preference(
    models: list[str], sources: list[dict[str, str]], live_judges: list[str], allow_self_judge: bool
) -> list[str]:
    """Sentences naming every ranked target that is the same model as a judge that decided its scores (a stored
    coherence judge of a replay, or a live judge under ``--allow-self-judge``).

    Args:
        models: the ranked target models.
        sources: :func:`judgement_sources` records.
        live_judges: the run's judge models.
        allow_self_judge: whether ``--allow-self-judge`` was set.

    Returns:
        The sentences (empty when none).
    """
    out = []
    for m in models:
        src = next((s for s in sources if s.get("coherence") and same_model(s["coherence"], m)), None)
        live = next((j for j in live_judges if same_model(j, m)), None) if allow_self_judge else None
        if src is not None:
            how = "stored judgements of the original run" if src.get("origin") == "stored" else "live"
            out.append(
                f"{m} is ranked while {src['coherence']} judged the coherence that decided its accepted answers "
                f"({how}): a judge may favour its own answers (self-preference), so its position may be overstated"
            )
        elif live is not None:
            out.append(
                f"{m} is ranked while {live} judged its responses (--allow-self-judge): a judge may favour its own "
                "answers (self-preference)"
            )
    return out
