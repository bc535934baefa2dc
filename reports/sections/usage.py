"""Cost and usage: calls, cached and failed calls, tokens, latency and cost per (model, role) from the run's ledger,
prompt caching, where the prices come from, the estimate made before any call, interrupted calls and the budget."""

from __future__ import annotations

from typing import Any

from ..blocks import Block, Section, Table, Text
from ..context import ReportContext
from ..format import fmt
from . import section


def cached_share_text(summ: dict[str, Any]) -> str:
    """The sentence on prompt caching of a ledger summary, "" when no provider reported cached input tokens.

    Args:
        summ: ``Ledger.summary()``: ``rows`` and ``total`` with ``input_tokens`` and ``cache_read_tokens`` (the
            input tokens a provider served from its prompt cache, part of ``input_tokens``).

    Returns:
        E.g. "Prompt caching: 1,200 of 2,000 input tokens (60.0%) were served from the providers' prompt caches,
        priced at the cached rate where the price is known (...); by model and role: openai:judge (judge) 75.0% of
        1,600."
    """
    total = summ.get("total") or {}
    cached, inp = int(total.get("cache_read_tokens") or 0), int(total.get("input_tokens") or 0)
    if not cached or not inp:
        return ""
    parts = [
        f"{r['model']} ({r['role']}) {100 * r['cache_read_tokens'] / r['input_tokens']:.1f}% of {r['input_tokens']:,}"
        for r in summ.get("rows") or []
        if r.get("cache_read_tokens") and r.get("input_tokens")
    ]
    return (
        f"Prompt caching: {cached:,} of {inp:,} input tokens ({100 * cached / inp:.1f}%) were served from the "
        "providers' prompt caches, priced at the cached rate where the price is known (a price given with --price "
        "applies to every input token); by model and role: " + "; ".join(parts) + "."
    )


@section("usage", title="Cost and usage", after="task")
def usage_builder(ctx: ReportContext) -> Section | None:
    """The "Cost and usage" section of the ledger summary and the estimate; unknown prices show as n/a, never 0."""
    if ctx.usage is None:
        return None
    summ, estimate = ctx.usage, ctx.usage_estimate
    if not summ.get("rows"):
        return Section("usage", "Cost and usage", _no_calls(summ, estimate))

    def row(t: dict[str, Any]) -> list[Any]:
        counts = [
            t[k] for k in ("model", "role", "calls", "cached_calls", "failed_calls", "input_tokens", "output_tokens")
        ]
        return [*counts, fmt(t["latency_s"]), "n/a" if t["cost"] is None else f"{t['cost']:.4f}"]

    headers = "model|role|calls|cached|failed|input tokens|output tokens|latency (s)|cost (USD)".split("|")
    blocks: list[Any] = [Table(headers, [row(t) for t in summ["rows"]] + [row(summ["total"])], name="usage")]
    cached_text = cached_share_text(summ)
    if cached_text:
        blocks.append(Text(cached_text))
    if summ.get("prices"):
        blocks.append(Text(summ["prices"]))
    blocks += estimate
    if summ.get("interrupted"):  # counted among the failed calls; what they cost is not in the totals
        blocks.append(
            Text(
                f"{summ['interrupted']} call(s) were interrupted: the process ended after their requests were sent "
                "and before their replies were recorded. They are counted as failed; their tokens and cost are "
                "unknown and not in the totals (the provider may have billed them)."
            )
        )
    if summ.get("budget_usd") is not None:
        text = f"Budget {summ['budget_usd']} USD; spent {summ['spent_usd']:.4f} USD in all."
        if summ.get("stopped"):
            st = summ["stopped"]
            text += (
                f" The budget was reached at {st.get('spent_usd', 0.0):.4f} USD, before a {st.get('role', '')} "
                f"call to {st.get('model', '')}; calls already in flight then finished and are counted."
            )
        blocks.append(Text(text))
    return Section("usage", "Cost and usage", blocks)


def _no_calls(summ: dict[str, Any], estimate: list[Block]) -> list[Block]:
    """The blocks of a run that made no model call."""
    est = summ.get("estimate") if isinstance(summ.get("estimate"), dict) else None
    blocks_none: list[Any] = [
        Text(
            "No model calls were made (replayed responses and objective metrics only, or every call "
            "served from the cache)."
        )
    ]
    if est and est.get("rows"):  # calls were estimated, none was made (every one served from the cache)
        blocks_none += estimate
    elif est:  # estimate.jsonl is a file of the run folder: data, its lines shown only when they are text
        lines = [str(x).strip().rstrip(".") for x in est.get("lines") or [] if isinstance(x, str) and x.strip()]
        if lines:
            blocks_none.append(Text(f"The estimate made before any call agrees: {'; '.join(lines)}."))
    return blocks_none
