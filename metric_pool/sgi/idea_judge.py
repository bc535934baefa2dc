"""The pairwise idea judge of SGI-Bench Idea Generation (METRICS.md A.2 "Judged part"): N judges x 2 position-swapped
calls, each voting "Win A"/"Win B" on five dimension lines; the votes decide win, tie or lose."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from ...models import NamedModel, ask_structured
from ..judge import DATA_NOTICE, INJECTION_FLAG, as_data, injection_flags

IDEA_FIELDS = ("Idea", "ImplementationSteps", "ImplementationOrder", "Dataset", "EvaluationMetrics", "ExpectedOutcome")
CONTEXT_FIELDS = ("related_work", "challenge", "limitation", "motivation", "task_objective", "existing_solutions")
DIMENSIONS = ("effectiveness", "novelty", "detailedness", "feasibility", "overall")
MAX_JUDGE_ATTEMPTS = 5

JUDGE_SYSTEM = "You are an expert reviewer of research proposals. " + DATA_NOTICE

JUDGE_TEMPLATE = """You compare TWO research hypotheses, Hypothesis A and Hypothesis B, on five separate dimensions and pick a \
winner for each one. Ties are NOT allowed: choose A or B for every dimension. Judge only from scientific principles and \
the background context given after these instructions.

## Dimensions
1) Effectiveness: which hypothesis is more likely to achieve the stated research objective if implemented with standard \
practice in the field (mechanistic plausibility, causal logic, addressing the core problem)?
2) Novelty: which hypothesis is more innovative or original? Compare each idea with the related work and existing \
solutions in the context; lower similarity to them means greater novelty.
3) Detailedness: which hypothesis specifies mechanisms, assumptions, experimental steps, variables and dependencies more \
clearly and completely, so a competent researcher could implement it with little ambiguity?
4) Feasibility: which hypothesis is more realistic and implementable with current technology?
5) Overall: weighing all aspects, with emphasis on coherence and scientific grounding, which hypothesis is better?

Judge each dimension on its own. Give one judgment line per dimension followed by 1-3 sentences of reasoning.

## Output format (follow exactly; "Win A" or "Win B" inside the brackets)
Effectiveness: [Win A/Win B] because ...
Novelty: [Win A/Win B] because ...
Detailedness: [Win A/Win B] because ...
Feasibility: [Win A/Win B] because ...
Overall: [Win A/Win B] because ...

## Background context
{context}

## Hypothesis A
{a}

## Hypothesis B
{b}
"""


def _fields_text(d: dict[str, Any], fields: tuple[str, ...]) -> str:
    """ "name: value" for each of ``fields`` with a truthy value, separated by blank lines (A.2)."""
    return "\n\n".join(f"{f}: {d[f]}" for f in fields if d.get(f))


def judge_prompt(idea_a: str, idea_b: str, context: str) -> str:
    """The pairwise judge prompt (A.2 "Judged part"); the ideas are wrapped as delimited data."""
    return JUDGE_TEMPLATE.format(
        context=as_data(context, "CONTEXT") if context else "(none)",
        a=as_data(idea_a, "HYPOTHESIS_A"),
        b=as_data(idea_b, "HYPOTHESIS_B"),
    )


def _verdict(m: re.Match) -> str:
    return "win_A" if "WIN A" in re.sub(r"\s+", " ", m.group(1).upper()) else "win_B"


def vote_match(text: str, dim: str) -> re.Match[str] | None:
    """The vote for dimension ``dim`` that :func:`parse_votes` reads in ``text`` (A.2), case-insensitive, first match in
    the whole text: (1) ``Name : [Win A|B]``; (2) ``Name : Win A|B`` followed by whitespace; (3) the first "Win A|B"
    later on the name's line.  Group 1 holds the verdict; None when there is no vote.

    Args:
        text: a judge reply, or a candidate idea checked for vote lines.
        dim: one of :data:`DIMENSIONS`.

    Returns:
        The match, or None.
    """
    name = dim.capitalize()
    return (
        re.search(rf"{name}\s*:\s*\[\s*(Win\s*A|Win\s*B)\s*\]", text, re.IGNORECASE)
        or re.search(rf"{name}\s*:\s*(Win\s*A|Win\s*B)\s+", text, re.IGNORECASE)
        or re.search(rf"{name}[^\n]*?(Win\s*A|Win\s*B)", text, re.IGNORECASE)
    )


def parse_votes(reply: str) -> dict[str, dict[str, str]] | None:
    """Parse a five-line judge reply (A.2, :func:`vote_match`): {dim: {"judgment": "win_A"|"win_B", "reason"}} for all
    five dimensions, or None when any fails (the call is retried)."""
    out: dict[str, dict[str, str]] = {}
    for dim in DIMENSIONS:
        name = dim.capitalize()
        m = vote_match(reply, dim)
        if not m:
            return None
        r = re.search(rf"{name}\s*:[^\n]*?because\s*([^\n]*)", reply, re.IGNORECASE)
        out[dim] = {"judgment": _verdict(m), "reason": r.group(1).strip() if r else ""}
    return out


def flip_votes(votes: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """Swap win_A and win_B (verdicts from the swapped order, A.2)."""
    swap = {"win_A": "win_B", "win_B": "win_A"}
    return {d: {**v, "judgment": swap[v["judgment"]]} for d, v in votes.items()}


def decide(g: int, n_judges: int, dim: str) -> str:
    """ "win" / "tie" / "lose" for g votes for the generated idea out of 2N (sgieval's generalisation of A.2, stated for
    N = 3): win if g > N (novelty 3g > 4N), lose if 3g <= 2N, else tie."""
    win = 3 * g > 4 * n_judges if dim == "novelty" else g > n_judges
    if win:
        return "win"
    if 3 * g <= 2 * n_judges:
        return "lose"
    return "tie"


def vote_injection_flags(candidate: str) -> list[str]:
    """``["injection_suspected"]`` when the generated idea carries a vote :func:`vote_match` would read, or other
    judge-format pieces (D.14)."""
    text = candidate or ""
    return [INJECTION_FLAG] if (any(vote_match(text, d) for d in DIMENSIONS) or injection_flags(text)) else []


async def judge_call(
    judge: NamedModel, prompt: str, *, swapped: bool, max_attempts: int = MAX_JUDGE_ATTEMPTS, candidate: str = ""
) -> dict[str, Any]:
    """One (judge, order) call with up to ``max_attempts`` attempts (:func:`sgieval.models.structured.ask_structured`,
    replies read by :func:`parse_votes`). Returns its evidence dict: raw replies, attempts, votes
    (generated-vs-reference orientation; None when no attempt parsed), error, call_failed, flags (D.14) and the
    prompts."""

    def votes_of(text: str) -> dict[str, dict[str, str]]:
        votes = parse_votes(text)
        if votes is None:
            raise ValueError(
                "every one of the five lines must read '<Dimension>: [Win A] because ...' "
                "or '<Dimension>: [Win B] because ...'"
            )
        return votes

    r = await ask_structured(
        judge,
        [SystemMessage(content=JUDGE_SYSTEM), HumanMessage(content=prompt)],
        parse=votes_of,
        max_attempts=max_attempts,
        label="judge",
        retry_hint="Reply again in that format.",
    )
    votes = r.parsed
    error = r.error
    if votes is None and not r.call_failed and not r.refused:
        error = f"unparsable judge reply after {r.attempts} attempt(s)"
    return {
        "tool": "judge",
        "judge": judge.name,
        "order": "A=generated,B=reference" if swapped else "A=reference,B=generated",
        "raw": r.raw,
        "attempts": r.attempts,
        "structured": r.mode,
        "votes": (flip_votes(votes) if swapped else votes) if votes is not None else None,
        "error": error,
        "call_failed": r.call_failed,
        "flags": vote_injection_flags(candidate),
        "prompt_hash": (r.prompt or {}).get("hash", ""),
        "prompt": r.prompt,
        "prompt_hashes": [str(p.get("hash", "")) for p in r.prompts],
        "prompts": r.prompts,
    }


async def judged(
    ref: dict[str, Any], gen: dict[str, Any], judges: list[NamedModel], attempts: int = MAX_JUDGE_ATTEMPTS
) -> tuple[dict[str, dict] | None, list[dict], str | None]:
    """(per-dimension results, evidence, None); (None, [], None) without judges; (None, evidence, reason) when a judge
    could not be reached."""
    if not judges:
        return None, [], None
    ref_text, gen_text = _fields_text(ref, IDEA_FIELDS), _fields_text(gen, IDEA_FIELDS)
    context = _fields_text(ref, CONTEXT_FIELDS)
    normal = judge_prompt(ref_text, gen_text, context)
    swapped = judge_prompt(gen_text, ref_text, context)

    async def both_orders(j: NamedModel) -> list[dict[str, Any]]:
        # the two orders of one judge run one after the other (as the code does); judges run concurrently
        first = await judge_call(j, normal, swapped=False, max_attempts=attempts, candidate=gen_text)
        second = await judge_call(j, swapped, swapped=True, max_attempts=attempts, candidate=gen_text)
        return [first, second]

    evidence = [e for pair in await asyncio.gather(*(both_orders(j) for j in judges)) for e in pair]
    failed = [e for e in evidence if e["call_failed"]]
    if failed:
        return None, evidence, "; ".join(f"{e['judge']} ({e['order']}): {e['error']}" for e in failed)
    n = len(judges)
    results: dict[str, dict] = {}
    for d in DIMENSIONS:
        g = sum(1 for e in evidence if e["votes"] and e["votes"][d]["judgment"] == "win_B")
        o = sum(1 for e in evidence if e["votes"] and e["votes"][d]["judgment"] == "win_A")
        results[d] = {
            "result": decide(g, n, d),
            "generated_votes": g,
            "reference_votes": o,
            "total_votes": 2 * n,
            "n_judges": n,
            "failed_calls": sum(1 for e in evidence if e["votes"] is None),
            "dimension": d,
            "judge_values": _judge_win_shares(evidence, d),
        }
    return results, evidence, None


def _judge_win_shares(evidence: list[dict[str, Any]], dim: str) -> dict[str, float]:
    """{judge: 100 x its votes for the generated idea on ``dim`` / its calls that voted}, for the judge-reliability
    statistics; judges whose calls all failed are left out."""
    out: dict[str, list[int]] = {}
    for e in evidence:
        if e["votes"]:
            out.setdefault(e["judge"], []).append(int(e["votes"][dim]["judgment"] == "win_B"))
    return {j: 100.0 * sum(v) / len(v) for j, v in out.items()}
