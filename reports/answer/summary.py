"""The Answer's summary: what an agent model's text may cite, and the checks it must pass before it is shown
beside the fixed verdict (every number, model name, metric name and facet value it cites is in the report, and it
claims no order of models the paired tests do not establish)."""

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
"""Numbers the report's own fixed wording uses (allowed in a narrative)."""


def _as_float(x: str) -> float | None:
    try:
        return float(x)
    except ValueError:
        return None


def numbers_supported(narrative: str, tables_text: str, header_text: str = "") -> list[str]:
    """Numbers in ``narrative`` that appear neither in ``tables_text`` nor in
    ``header_text`` (the run header: item counts, K, seed, ...); empty list =
    the narrative passes the check.

    A number matches when it is written the same way or has the same value
    ("0.5" matches "0.50", "296" matches "296.0").  Digits inside words or
    hyphenated names (the "1" of "o1-mini", the "4" of "gpt-4o") are not numbers.  Order of the returned list = order in
    the narrative (every number of the narrative must be in the report).
    """
    present = NUMBER.findall(tables_text) + NUMBER.findall(header_text)
    exact = set(present)
    values = {v for v in (_as_float(x) for x in present) if v is not None}
    out = []
    for n in NUMBER.findall(narrative):
        if n in exact or _as_float(n) in values:
            continue
        out.append(n)
    return out


NAME = re.compile(r"(?<![\w.:/-])[A-Za-z][\w.:/+-]*[\w+]|(?<![\w.:/-])[A-Za-z]\b")
"""A word or a name-like token (letters, digits, ``_ . : / - +`` inside)."""

PLAIN_CAPITALS = frozenset({"I", "CI", "CIs", "A", "The", "An"})
"""Capitalised words a narrative may use mid-sentence without the report stating them."""


def _name_like(tok: str) -> bool:
    """A token that names something (a model, a metric, a benchmark id): it carries a digit, ``_``, ``:``, ``/``,
    ``+``, an inner ``.``, or a hyphen joining a one-letter part (``gpt-4o``, ``o1-mini``, ``m-a``, ``exact_match``,
    ``replay:phi4:latest``); hyphenated English words ("idea-generation", "self-preference") are not names."""
    if any(c.isdigit() for c in tok) or any(c in tok for c in "_:/+") or "." in tok:
        return True
    return "-" in tok and any(len(p) == 1 for p in tok.split("-"))


def names_supported(narrative: str, allowed_text: str, known: Iterable[str] = ()) -> list[str]:
    """Names in ``narrative`` the report does not state: model-like or metric-like tokens (:func:`_name_like`),
    ``**bold**`` names, and capitalised words inside a sentence (a facet value such as "Biology", a model such as
    "Claude"), each checked case-insensitively against the words of ``allowed_text`` (the report's tables, run
    facts and request) and the ``known`` names (target models, metrics, facet values; a model may also be named
    without its provider prefix, "o1-mini" for "replay:o1-mini").  Returns them in narrative order, without
    repeats; empty = the narrative passes."""
    words = {w.casefold() for w in NAME.findall(allowed_text)}
    for k in known:
        k = str(k)
        words.add(k.casefold())
        for part in re.split(r"[:/]", k):
            if part:
                words.add(part.casefold())
        for cut in re.finditer(r"[:/]", k):  # without its provider prefix: "phi4:latest" of "replay:phi4:latest"
            words.add(k[cut.end() :].casefold())
        words.update(w.casefold() for w in NAME.findall(k))
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
    """The run header's facts as one text (what a narrative may cite besides
    the tables): items selected, K, seed, target models and their count,
    judges, filters, plus :data:`FIXED_NUMBERS_TEXT`."""
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
    """Sentences of ``narrative`` that claim an order of the target models (:data:`ORDER_CLAIM`, not negated)
    which the paired tests do not establish: the first model a claiming sentence names must be ``winner``, the
    leader the verdict's paired test separates from the runner-up (None when no model is established as first, so
    no sentence may claim one).  A model is named by its full name or without its provider prefix.

    Args:
        narrative: the agent's summary.
        winner: the verdict's separated leader, or None.
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
"""What the fact check of an agent's narrative covers (the Answer's stamp)."""
