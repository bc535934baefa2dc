"""The Answer's summary: what an agent model's text may cite, and the checks it must pass before it is shown beside
the fixed verdict (every number and name it cites is in the report; it claims no order the tests do not establish)."""

from __future__ import annotations

import re
from typing import Any, Iterable

__all__ = [
    "CHECKED",
    "FIXED_NUMBERS_TEXT",
    "NARRATIVE_SYSTEM",
    "NUMBER",
    "header_facts",
    "names_supported",
    "numbers_supported",
    "order_claims_supported",
]


NUMBER = re.compile(r"(?<![\w.])(?<!\w-)-?\d+(?:\.\d+)?(?![\w.]*\w)")
"""A number in text: not part of a word or hyphenated name ("o1-mini", "gpt-4o", "llama3.3")."""

FIXED_NUMBERS_TEXT = "95% confidence intervals; the 5% significance level; rubric criteria 0-10; rubric scores 0-100"


def _as_float(x: str) -> float | None:
    try:
        return float(x)
    except ValueError:
        return None


def numbers_supported(narrative: str, tables_text: str, header_text: str = "") -> list[str]:
    """Numbers in ``narrative`` found neither in ``tables_text`` nor ``header_text``, written alike or of equal value
    ("0.5" matches "0.50"), in narrative order; empty: the narrative passes."""
    present = NUMBER.findall(tables_text) + NUMBER.findall(header_text)
    exact = set(present)
    values = {v for v in (_as_float(x) for x in present) if v is not None}
    return [n for n in NUMBER.findall(narrative) if n not in exact and _as_float(n) not in values]


NAME = re.compile(r"(?<![\w.:/-])[A-Za-z][\w.:/+-]*[\w+]|(?<![\w.:/-])[A-Za-z]\b")

PLAIN_CAPITALS = frozenset({"I", "CI", "CIs", "A", "The", "An"})


def _name_like(tok: str) -> bool:
    """A token naming something: a digit, ``_``, ``:``, ``/``, ``+``, ``.``, or a hyphen joining a one-letter part."""
    if any(c.isdigit() for c in tok) or any(c in tok for c in "_:/+") or "." in tok:
        return True
    return "-" in tok and any(len(p) == 1 for p in tok.split("-"))


def names_supported(narrative: str, allowed_text: str, known: Iterable[str] = ()) -> list[str]:
    """Names in ``narrative`` the report does not state: name-like tokens, ``**bold**`` names and capitalised words
    inside a sentence, checked case-insensitively against ``allowed_text`` and ``known`` (a model also without its
    provider prefix); in narrative order without repeats, empty: the narrative passes."""
    words = {w.casefold() for w in NAME.findall(allowed_text)}
    for k in map(str, known):  # also without its provider prefix: "phi4:latest" of "replay:phi4:latest"
        cuts = [k[cut.end() :] for cut in re.finditer(r"[:/]", k)]
        words.update(w.casefold() for w in [k, *re.split(r"[:/]", k), *cuts, *NAME.findall(k)])
    out: list[str] = []

    def check(tok: str) -> None:
        t = tok.strip().strip(".,;:()").casefold()
        if t and t not in words and tok not in out:
            out.append(tok)

    for bold in re.findall(r"\*\*([^*]+)\*\*", narrative):
        check(bold.strip())
    for sentence in re.split(r"(?<=[.!?;:])\s+|\n+", narrative):
        toks = list(re.finditer(NAME, sentence))
        for pos, m in enumerate(toks):
            tok = m.group(0).rstrip(".")
            if _name_like(tok) or (pos > 0 and tok[:1].isupper() and tok not in PLAIN_CAPITALS):
                check(tok)
    return out


def header_facts(header: dict[str, Any], n_items: int, models: list[str]) -> str:
    """The run header's facts as one text (what a narrative may cite besides the tables)."""
    return (
        f"items selected: {n_items}; K: {header.get('k', 'all matches')}; seed: {header.get('seed', 0)}; "
        f"target models ({len(models)}): {', '.join(models)}; judge: {header.get('judges', 'none')}; "
        f"filters: {header.get('filters', 'none')}; {FIXED_NUMBERS_TEXT}"
    )


ORDER_CLAIM = re.compile(
    r"\b(?:is|are|was|were|comes?|came|ranks?|ranked|places?|placed|emerges?|stands?\s+out\s+as)\s+(?:as\s+)?"
    r"(?:clearly\s+|the\s+|a\s+)*(?:best|first|top|strongest|winner|leader|most\s+\w+|highest[- ]ranked)\b"
    r"|\b(?:outperform\w*|outscore\w*|beats?|wins?|superior|better\s+than|worse\s+than|the\s+winner)\b",
    re.IGNORECASE,
)
"""Words that claim an order of models: "is the most rigorous", "ranks first", "outperforms", "better than"."""

NEGATION = re.compile(r"\b(?:not|no|cannot|can't|neither|nor|without|whether)\b", re.IGNORECASE)


def order_claims_supported(narrative: str, winner: str | None, models: Iterable[str]) -> list[str]:
    """Sentences of ``narrative`` claiming an order (:data:`ORDER_CLAIM`, not negated) whose first named model is not
    ``winner``.

    Args:
        narrative: the agent's summary.
        winner: the verdict's separated leader, or None (then no sentence may claim an order).
        models: the target models.

    Returns:
        The unsupported sentences in narrative order; empty = the narrative passes.
    """
    names: dict[str, str] = {}
    for m in models:
        names[m.casefold()] = m
        for cut in re.finditer(r"[:/]", m):
            names.setdefault(m[cut.end() :].casefold(), m)
    pattern = (
        re.compile(
            r"(?<![\w.:/-])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")(?![\w/-])",
            re.IGNORECASE,
        )
        if names
        else None
    )
    out = []
    for sentence in re.split(r"(?<=[.!?;])\s+|\n+", narrative):
        if not ORDER_CLAIM.search(sentence) or NEGATION.search(sentence):
            continue
        first = pattern.search(sentence) if pattern is not None else None
        named = names[first.group(1).casefold()] if first else None
        if winner is None or named != winner:
            out.append(sentence.strip())
    return out


NARRATIVE_SYSTEM = """You write a short summary for an evaluation report, read by a researcher after the report's
fixed verdict (given below; do not contradict or repeat it). In 2-4 full sentences, say what the tables show that
the verdict does not: where the models differ, how sure the result is. Use ONLY numbers, model names, metric names
and facet values that appear verbatim in the tables given; name the target models exactly as in the tables. Call a
difference significant or not significant only from the paired-test table (state its p); overlapping confidence
intervals alone are not a test. Call a model best, first or better than another only where the fixed verdict does."""

CHECKED = "every number, model name, metric name and facet value it cites was checked against the report's tables and run facts"
