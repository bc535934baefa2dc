"""What the offline questioning path understands of a request, word by word (:func:`understand_request`), and the
error for a request it cannot answer as asked (:func:`request_unclear`)."""

from __future__ import annotations

import re
from typing import Callable, Mapping

from pydantic import BaseModel, Field

from ..benchmarks import Catalog
from ..benchmarks import registry as benchmark_registry
from ..core import InputError, ModelRef


class RequestReading(BaseModel):
    """What the offline path understood of a request: ``understood`` (term -> what it names), ``near_misses``
    (word -> the known term within :func:`~sgieval.agents.vocabulary.max_edits` edits it is a typo of) and ``unknown``
    (the other content words)."""

    understood: dict[str, str] = Field(default_factory=dict)
    near_misses: dict[str, str] = Field(default_factory=dict)
    unknown: list[str] = Field(default_factory=list)

    def summary(self) -> str:
        """What was understood, as one clause ("'creative' -> quality creativity; ..." or a plain ranking)."""
        if not self.understood:
            return "a ranking of the models over every item (no facet, quality, metric or model named)"
        return "; ".join(f"'{t}' -> {m}" for t, m in self.understood.items())

    def corrected(self, request: str) -> str:
        """``request`` with every near miss replaced by its suggestion ("... in chemsitry?" -> "... in Chemistry?")."""
        for word, term in self.near_misses.items():
            request = re.sub(rf"(?<![\w-]){re.escape(word)}(?![\w-])", term, request, flags=re.I)
        return request


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*[A-Za-z0-9]|[A-Za-z]")


def _describes_items(word: str, prompts: list[str]) -> bool:
    """Whether ``word`` (or its singular) begins a word in at least half of ``prompts``: the catalog's subject."""
    stem = word[:-1] if len(word) > 4 and word.endswith("s") else word
    pattern = re.compile(rf"(?<![\w-]){re.escape(stem)}")
    return bool(prompts) and 2 * sum(1 for p in prompts if pattern.search(p)) >= len(prompts)


def _term_spans(
    text: str, catalog: Catalog, metrics: list[str] | None, models: list[str] | None
) -> tuple[list[tuple[int, int, str, str]], list[tuple[str, str]]]:
    """The spans ``(start, end, term, meaning)`` of the terms ``text`` names and the known terms a near miss may
    be corrected to (``(casefolded, shown)``)."""
    from ..metric_pool import entries as registered_metrics
    from .request_models import MODEL_MENTION
    from .vocabulary import QUALITY_TERMS, QUALITY_WORDS, REQUEST_WORDS

    spans: list[tuple[int, int, str, str]] = []  # start, end, term, meaning

    def cover(pattern: str, meaning: str, flags: int = re.I) -> None:
        spans.extend((m.start(), m.end(), m.group(0), meaning) for m in re.finditer(pattern, text, flags))

    values: dict[str, tuple[str, str]] = {}  # casefolded term -> (shown term, facet)
    for facet in ("discipline", "direction", "task", "type", "benchmark"):
        for v in catalog.values(facet):
            if not v:
                continue
            for form in {v, v.replace("_", " "), v.replace("-", " ")}:
                values.setdefault(form.casefold(), (v, facet))
                cover(rf"(?<![\w-]){re.escape(form)}(?![\w-])", f"{facet}={v}")
    vocab = benchmark_registry.vocabulary()
    worded = [
        *((ps, f"facet {concept}") for concept, (ps, _vals) in vocab.disciplines.items()),
        *((ps, f"task={task}") for task, ps in vocab.tasks),
        *((ps, f"benchmark={bench}") for bench, ps in vocab.benchmarks.items()),
        *((ps, f"quality {quality}") for quality, ps in QUALITY_WORDS.items()),
    ]
    for patterns, meaning in worded:
        for p in patterns:
            cover(rf"\b(?:{p})\b", meaning)
    metric_terms: dict[str, str] = {}
    name_words: dict[str, list[str]] = {}
    for name in metrics or []:
        metric_terms[name.casefold()] = name
        cover(rf"(?<![\w-]){re.escape(name).replace('_', '[_ ]')}(?![\w-])", f"metric {name}")
        for w in name.casefold().split("_"):
            if len(w) >= 4 and w not in REQUEST_WORDS:
                name_words.setdefault(w, []).append(name)
    for w, names in name_words.items():  # "smallest error" -> sfbench_abs_error
        cover(rf"\b{re.escape(w)}s?\b", f"a word of the metric{'s' if len(names) > 1 else ''} {', '.join(names)}")
    model_terms: dict[str, str] = {}
    for name in models or []:
        bare = ModelRef.identity_of(name)
        if bare:
            model_terms[bare.casefold()] = bare
            cover(rf"(?<![\w./:-]){re.escape(bare)}(?![\w:/-])", f"model {bare}")
    spans.extend((m.start(1), m.end(1), m.group(1), f"model {m.group(1)}") for m in MODEL_MENTION.finditer(text))
    cover(r"\b(?:k\s*=\s*\d+|\d+\s+(?:questions|items|samples|problems|tasks))\b", "number of items")

    for entry in registered_metrics():  # the words of each registered metric's quality the request names
        for quality in entry.asked(text):
            for p in entry.qualities[quality]:
                cover(rf"\b(?:{p})\b", f"metric {entry.name} ({quality})")

    candidates: list[tuple[str, str]] = [(k, shown) for k, (shown, _f) in values.items()]
    candidates += [(w, w) for w in QUALITY_TERMS]
    candidates += list(metric_terms.items()) + list(model_terms.items())

    return spans, candidates


def _nearest(candidates: list[tuple[str, str]]) -> Callable[[str], str | None]:
    """The known term within :func:`max_edits` OSA edits of a casefolded word (the closest), else None."""
    from rapidfuzz.distance import OSA

    from .vocabulary import max_edits

    def near(word: str) -> str | None:
        limit = max_edits(word)
        dists = (
            (OSA.distance(word, c), shown) for c, shown in candidates if limit and abs(len(c) - len(word)) <= limit
        )
        best = min(dists, default=None, key=lambda x: x[0])
        return best[1] if best is not None and 0 < best[0] <= limit else None

    return near


def understand_request(
    request: str, catalog: Catalog, *, metrics: list[str] | None = None, models: list[str] | None = None
) -> RequestReading:
    """Read ``request`` word by word (offline, deterministic): a word is understood when part of a term the run can use
    (facet word or value, quality, metric or rubric name, model, number of items, request grammar), else a near miss
    when a known term is within :func:`max_edits` OSA edits ("chemsitry" -> "Chemistry"), else unknown.

    Args:
        request: the plain-language request.
        catalog: the loaded catalog (its facet values).
        metrics: metric and rubric names the run could rank by.
        models: model names or strings of the run (targets, stored models).

    Returns:
        A :class:`RequestReading`.
    """
    from .customisation import _ASKED_QUALITY, _NOT_QUALITIES, detect_qualities
    from .vocabulary import REQUEST_WORDS

    text = request or ""
    spans, candidates = _term_spans(text, catalog, metrics, models)
    near = _nearest(candidates)
    for m in _ASKED_QUALITY.finditer(text):
        w = m.group(1)
        if w.lower() not in _NOT_QUALITIES and not detect_qualities(w) and near(w.casefold()) is None:
            about = re.match(r"\s+about\s+[A-Za-z][\w-]*", text[m.end(1) :])  # "most honest about limitations"
            end = m.end(1) + (about.end() if about else 0)
            spans.append((m.start(1), end, text[m.start(1) : end], "asked quality (looked up among the rubrics)"))

    prompts = [i.prompt.casefold() for i in catalog.items]
    reading = RequestReading()
    taken: list[tuple[int, int]] = []
    for a, b, term, meaning in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
        if not any(a2 <= a and b <= b2 for a2, b2 in taken):  # the longest term a word is part of
            taken.append((a, b))
            shown = reading.understood.get(term)
            reading.understood[term] = meaning if not shown or meaning in shown else f"{shown}, {meaning}"
        elif (
            (a, b) in taken
            and not meaning.startswith("facet ")
            and meaning not in reading.understood.get(term, meaning)
        ):
            reading.understood[term] += f", {meaning}"
    for m in _WORD.finditer(text):
        if any(a <= m.start() and m.end() <= b for a, b, *_ in spans):
            continue
        word = m.group(0).rstrip(".").removesuffix("'s").casefold()
        if len(word) < 3 or word in REQUEST_WORDS or (word.endswith("s") and word[:-1] in REQUEST_WORDS):
            continue
        if _describes_items(word, prompts):
            reading.understood.setdefault(m.group(0), "the items' subject (in most of their prompts)")
            continue
        guess = near(word)
        if guess is not None:
            reading.near_misses.setdefault(m.group(0), guess)
        elif word not in reading.unknown:
            reading.unknown.append(word)
    return reading


class UnclearRequest(InputError):
    """A request the offline path cannot answer as asked: ``reading``, and ``corrected`` (None without a near miss)."""

    def __init__(self, message: str, *, reading: RequestReading, corrected: str | None, fix: str):
        super().__init__(message, what="request", fix=fix)
        self.reading = reading
        self.corrected = corrected


def request_unclear(
    reading: RequestReading, request: str, catalog: Catalog, names: Mapping[str, str] | None = None
) -> UnclearRequest | None:
    """The error for a request the offline path cannot answer as asked ("did you mean ...?" for a near miss, else what
    was understood), or None; the fix names the ``rank_all`` option as ``names`` spells it (default ``--all``)."""
    rank_all = (names or {}).get("rank_all", "--all")
    fields = ", ".join(catalog.values("discipline"))
    if reading.near_misses:
        guesses = " and ".join(f"'{t}'" for t in dict.fromkeys(reading.near_misses.values()))
        words = ", ".join(f"'{w}'" for w in reading.near_misses)
        return UnclearRequest(
            f"{words} {'matches' if len(reading.near_misses) == 1 else 'match'} no discipline, subfield, task, "
            f"quality, metric or model: did you mean {guesses}?",
            reading=reading,
            corrected=reading.corrected(request),
            fix=f'ask "{reading.corrected(request)}", or pass {rank_all} to rank every item anyway',
        )
    if reading.unknown:
        words = ", ".join(f"'{w}'" for w in reading.unknown)
        return UnclearRequest(
            f"{words} {'names' if len(reading.unknown) == 1 else 'name'} no discipline, subfield, task, quality, "
            f"metric or model here, so no ranking answers the request as asked; understood: {reading.summary()}",
            reading=reading,
            corrected=None,
            fix=f"ask about what the catalog holds (disciplines: {fields}), or pass {rank_all} to rank every item anyway",
        )
    return None
