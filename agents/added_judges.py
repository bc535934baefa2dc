"""Judges added to a finished run (``sgieval ask ... --into RUN --judge J``): the report header's judge line.

An added judge scores the run's judge and rubric metrics on the stored responses (no target model is called again;
:func:`sgieval.agents.evaluation.score_added_judge`), into ``added_judge_scores.jsonl``; the report's "Added judges"
section (``reports/sections/added_judges.py``) shows its scores beside the run's own, which it never replaces.
"""

from __future__ import annotations

__all__ = ["judges_line"]


def judges_line(run_judges: list[str], added: list[str], repeats: int = 1) -> str:
    """The report header's judge line.

    Args:
        run_judges: the run's own judges (``RunConfig.judges``).
        added: the judges added to the finished run (``RunConfig.added_judges``).
        repeats: ``--judge-repeats``.

    Returns:
        E.g. ``openai:j1 (the run's judge: the ranking uses its scores); added by ask --into: openai:j2 (scored
        beside it, see Added judges)``; without added judges the run's judges alone, ``none (judge metrics not
        run)`` when there are none.
    """
    own = ", ".join(run_judges)
    if repeats > 1 and (own or added):
        own += f" (each asked {repeats} times per judged item)"
    if not added:
        return own or "none (judge metrics not run)"
    one = len(run_judges) == 1
    base = (
        f"{', '.join(run_judges)} (the run's judge{'' if one else 's'}: the ranking uses {'its' if one else 'their'} "
        "scores)"
        if run_judges
        else "none of the run's own (its judge metrics were not run)"
    )
    return f"{base}; added by ask --into: {', '.join(added)} (scored beside them, see Added judges)"
