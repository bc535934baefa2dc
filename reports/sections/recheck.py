"""Stored judgements rechecked (``--recheck``): each stored answer's novelty recomputed with the run's embedder
and the accepted answers re-decided (METRICS.md B.3, B.5), and whether the ranking by accepted answers changes."""

from __future__ import annotations

from ..blocks import Section, Table, Text
from ..context import ReportContext
from . import section


@section("recheck", title="Stored judgements rechecked", after="retrieval")
def recheck_builder(ctx: ReportContext) -> Section | None:
    """The "Stored judgements rechecked" section of a ``--recheck`` run, its sentence under the Answer's caveats."""
    if not ctx.recheck or ctx.pool is None:
        return None
    found = ctx.pool.recheck(ctx.responses, ctx.embedding_model)
    if found is None:
        return None
    rows, stored, ours, changed, name = found.rows, found.stored, found.ours, found.changed, found.embedder
    table = Table(
        [
            "target model",
            "questions",
            "answers compared",
            "Spearman rho",
            "same decision at 0.15",
            "accepted (stored)",
            "accepted (re-decided)",
        ],
        [
            [
                r.model,
                r.n_questions,
                r.n_answers,
                "n/a" if r.rho is None else f"{r.rho:.3f}",
                "n/a" if r.same_share is None else f"{r.same_share:.1%}",
                r.stored_accepted,
                r.recheck_accepted,
            ]
            for r in rows
        ],
        name="recheck",
    )
    sentence = (
        f"Rechecked with {name}, the stored acceptance decisions "
        + ("would change the ranking order" if changed else "give the same ranking order")
        + "."
    )
    return Section(
        "recheck",
        "Stored judgements rechecked",
        [
            Text(
                f"Each stored answer's novelty recomputed with {name} (1 - max cosine against the earlier answers "
                "of its list, METRICS.md B.3) against the stored text-embedding-3-large value, over the non-first "
                "answers; accepted answers re-decided with the B.5 stop rule (stored coherence, recomputed "
                "novelty; a list the recheck would continue past its stored end counts as a lower bound)."
            ),
            table,
            Text(
                f"Ranking by accepted answers: stored {' > '.join(stored)}; re-decided {' > '.join(ours)} "
                + ("(the order changes)." if changed else "(same order).")
            ),
        ],
        answer={"caveats": [sentence]},
    )
