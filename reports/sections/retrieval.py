"""Retrieved works: the related works retrieved for each idea scored by ``retrieval_novelty`` (METRICS.md E),
with their similarity to the idea and the query used."""

from __future__ import annotations

from typing import Any

from ...core import RetrievalEvidence
from ..blocks import Section, Table, Text
from ..context import ReportContext
from ..format import fmt
from . import section


@section("retrieval", title="Retrieved works", after="labels")
def retrieval_builder(ctx: ReportContext) -> Section | None:
    """The "Retrieved works" section: per ``retrieval_novelty`` score (METRICS.md E), S_inn and the works retrieved
    with their similarity to the idea (at most ``limit`` rows); None without such evidence."""
    limit = 40
    rows = []
    for s in ctx.grouped.get("retrieval_novelty", []):
        ev = next((e for e in (s.evidence or []) if isinstance(e, RetrievalEvidence)), None)
        if ev is None:
            continue
        works = (
            "; ".join(
                f"{w.get('title', '')} ({w['similarity']:.3f})" if "similarity" in w else str(w.get("title"))
                for w in ev.works
            )
            or "none found"
        )
        value = fmt(s.value) if s.value is not None else (s.error or s.status)
        rows.append([s.item_id, s.model, value, works, ev.query])
    if not rows:
        return None
    blocks: list[Any] = [
        Text(
            "Works retrieved for each idea (n = 4 requested; cosine similarity to the idea with the run's "
            "embedder) and the query used; S_inn = clip(10 (1 - mean similarity), 0, 10)."
        ),
        Table(
            ["item", "target model", "S_inn (0-10)", "retrieved works (similarity)", "query"],
            rows[:limit],
            name="retrieved",
        ),
    ]
    if len(rows) > limit:
        blocks.append(Text(f"{len(rows) - limit} more rows in scores.jsonl (evidence of retrieval_novelty)."))
    return Section("retrieval", "Retrieved works", blocks)
