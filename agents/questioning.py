"""Questioning agent (SGI-Bench paper, arXiv 2512.16969, section 3, agent 1).

request + catalog + K -> a :class:`SelectionPlan` (facet filters, K, seed,
sampling, reason) -> selected item ids.  No request means everything.

Offline path (no agent model): the request is mapped onto catalog facets with
the vocabulary of the registered benchmarks (each definition's
``vocabulary``, joined by :func:`sgieval.benchmarks.registry.vocabulary`).

With an agent model that supports tool calling (``chat.bind_tools`` works:
OpenAI-compatible servers, the embedded ``local:smollm2``), the model explores
the catalog with three LangChain tools (:func:`catalog_tools`:
``facet_counts``, ``search_items``, ``sample_items``) and ends by calling
``submit_selection_plan`` (:class:`PlanArgs`); at most ``max_steps`` model
turns (default 8).  With an agent model without tool calling (``bind_tools``
raises NotImplementedError), the model proposes the plan as structured output
(JSON).  Either way values absent from the catalog are dropped with a note,
the run's seed and ``--k`` override the model's, and a plan that fails or
selects nothing falls back to the offline plan, which the reason says.

Determinism: the items are ``Catalog.sample(matches, k, seed)`` of the plan's
filters -- stratified by (discipline, task) when K is smaller than the
matches -- so the same plan and seed always select the same item ids.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Mapping

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from ..benchmarks import registry as benchmark_registry
from ..benchmarks import FACETS, Catalog
from ..core import InputError, Item, ModelCallError, ModelRef
from .asking import ask_agent
from ..metric_pool import parse_json_object
from ..models import NamedModel
from ..models import message_text
from ..models import prompt_scope
from ..models import bind_tools, run_tool_loop
from ..core import (
    DEEP_RESEARCH,
    DRY_EXPERIMENT,
    EXPERIMENTAL_REASONING,
    FEASIBILITY,
    IDEA_GENERATION,
    OPEN_CREATIVITY,
    WET_EXPERIMENT,
)


class SelectionPlan(BaseModel):
    """Which items to evaluate.

    ``filters``: facet -> accepted values (facets: benchmark, task,
    discipline, direction, type; empty = no constraint).  ``k``: number of
    items (None = all matches).  ``sampling``: "all" or "stratified" (by
    discipline and task, with ``seed``).  ``reason``: why these filters.
    """

    filters: dict[str, list[str]] = Field(default_factory=dict)
    k: int | None = None
    seed: int = 0
    sampling: str = "all"
    reason: str = ""
    matched_terms: dict[str, str] = Field(default_factory=dict)
    planner: str = "offline"


def _find(patterns: list[str], text: str) -> str | None:
    for p in patterns:
        m = re.search(rf"\b{p}\b", text, flags=re.I)
        if m:
            return m.group(0)
    return None


def offline_plan(request: str, catalog: Catalog, k: int | None = None, seed: int = 0) -> SelectionPlan:
    """Map ``request`` onto catalog facets with the vocabulary (deterministic).

    Disciplines are matched against the catalog's discipline values first,
    then its direction values (e.g. "astrophysics" is a SciAidanBench
    subdomain).  K comes from the ``k`` argument, else from the request
    ("10 questions", "k=10"), else all matches.
    """
    text = request or ""
    filters: dict[str, list[str]] = {}
    matched: dict[str, str] = {}
    reasons: list[str] = []
    cat_disc = {v.lower(): v for v in catalog.values("discipline")}
    cat_dir = {v.lower(): v for v in catalog.values("direction")}
    vocab = benchmark_registry.vocabulary()
    for concept, (patterns, values) in vocab.disciplines.items():
        hit = _find(patterns, text)
        if not hit:
            continue
        in_disc = [cat_disc[v] for v in values if v in cat_disc]
        in_dir = [cat_dir[v] for v in values if v in cat_dir and v not in cat_disc]
        if in_disc:
            filters.setdefault("discipline", []).extend(in_disc)
            matched[hit] = f"discipline={'/'.join(in_disc)}"
        elif in_dir:
            filters.setdefault("direction", []).extend(in_dir)
            matched[hit] = f"direction={'/'.join(in_dir)}"
        else:
            filters.setdefault("discipline", []).append(concept)
            matched[hit] = f"discipline={concept} (not in the loaded catalog)"
    for task, patterns in vocab.tasks:
        hit = _find(patterns, text)
        if hit:
            filters.setdefault("task", []).append(task)
            matched[hit] = f"task={task}"
    for bench, patterns in vocab.benchmarks.items():
        hit = _find(patterns, text)
        if hit:
            filters.setdefault("benchmark", []).append(bench)
            matched[hit] = f"benchmark={bench}"
    if k is None:
        m = re.search(r"\b(?:k\s*=\s*(\d+)|(\d+)\s+(?:questions|items|samples|problems|tasks))\b", text, flags=re.I)
        if m:
            k = int(m.group(1) or m.group(2))
            matched[m.group(0)] = f"k={k}"
    if matched:
        reasons.append("request terms mapped to facets: " + "; ".join(f"'{t}' -> {f}" for t, f in matched.items()))
    else:
        reasons.append(
            "no facet named in the request: every item of the loaded catalog"
            if text.strip()
            else "no request: every item of the loaded catalog"
        )
    plan = SelectionPlan(
        filters={f: list(dict.fromkeys(v)) for f, v in filters.items()},
        k=k,
        seed=seed,
        sampling="stratified" if k else "all",
        reason=". ".join(reasons),
        matched_terms=matched,
    )
    return plan


# ------------------------------------------------------------------ reading the request
class RequestReading(BaseModel):
    """What the offline path understood of a request.

    ``understood``: request term -> what it names ("'chemistry' -> discipline=Chemistry", "'creative' ->
    quality creativity", "'o1-mini' -> model", "'exact_match' -> metric").  ``near_misses``: word -> the known
    term it is a typo of (casefolded optimal-string-alignment distance within
    :func:`sgieval.agents.vocabulary.max_edits`; facet values first, then qualities, metrics, models).
    ``unknown``: the other content words, which name nothing the run can measure or select.
    """

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


def _spans(pattern: str, text: str, flags: int = re.I) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group(0)) for m in re.finditer(pattern, text, flags)]


def _describes_items(word: str, prompts: list[str]) -> bool:
    """Whether ``word`` (or its singular, "capitals" -> "capital") begins a word in at least half of ``prompts``:
    it describes what the whole catalog is about ("Which model knows capitals best?" on a capitals quiz), so no
    selection is missed by ranking every item."""
    stem = word[:-1] if len(word) > 4 and word.endswith("s") else word
    pattern = re.compile(rf"(?<![\w-]){re.escape(stem)}")
    return bool(prompts) and 2 * sum(1 for p in prompts if pattern.search(p)) >= len(prompts)


def understand_request(
    request: str, catalog: Catalog, *, metrics: list[str] | None = None, models: list[str] | None = None
) -> RequestReading:
    """Read ``request`` word by word (offline, deterministic).

    A word is understood when it is part of a term the run can use: a facet word of the vocabulary
    (:func:`sgieval.benchmarks.registry.vocabulary`) or a facet value of ``catalog`` (discipline, direction,
    task, type, benchmark), a quality word (:data:`~sgieval.agents.vocabulary.QUALITY_WORDS`, or any "most X"
    the customisation agent looks up), a metric or rubric name of ``metrics`` ("exact_match" or "exact match"),
    a model of ``models`` or any model name (:data:`~sgieval.agents.request_models.MODEL_MENTION`), a number of
    items ("10 questions"), or a word of the request grammar
    (:data:`~sgieval.agents.vocabulary.REQUEST_WORDS`: which, best, compare, model, where, ...).  Every other
    word is a near miss when a known term is within :func:`~sgieval.agents.vocabulary.max_edits` edits of it
    (optimal string alignment, casefolded: "chemsitry" -> "Chemistry"), else unknown.

    Args:
        request: the plain-language request.
        catalog: the loaded catalog (its facet values).
        metrics: metric and rubric names the run could rank by.
        models: model names or strings of the run (targets, stored models).

    Returns:
        A :class:`RequestReading`.
    """
    from rapidfuzz.distance import OSA

    from ..metric_pool import entries as registered_metrics
    from .customisation import _ASKED_QUALITY, _NOT_QUALITIES, detect_qualities
    from .request_models import MODEL_MENTION
    from .vocabulary import QUALITY_TERMS, QUALITY_WORDS, REQUEST_WORDS, max_edits

    text = request or ""
    spans: list[tuple[int, int, str, str]] = []  # start, end, term, meaning

    def cover(pattern: str, meaning: str, flags: int = re.I) -> None:
        spans.extend((a, b, t, meaning) for a, b, t in _spans(pattern, text, flags))

    values: dict[str, tuple[str, str]] = {}  # casefolded term -> (shown term, facet)
    for facet in ("discipline", "direction", "task", "type", "benchmark"):
        for v in catalog.values(facet):
            if not v:
                continue
            for form in {v, v.replace("_", " "), v.replace("-", " ")}:
                values.setdefault(form.casefold(), (v, facet))
                cover(rf"(?<![\w-]){re.escape(form)}(?![\w-])", f"{facet}={v}")
    vocab = benchmark_registry.vocabulary()
    for concept, (patterns, _vals) in vocab.disciplines.items():
        for p in patterns:
            cover(rf"\b(?:{p})\b", f"facet {concept}")
    for task, patterns in vocab.tasks:
        for p in patterns:
            cover(rf"\b(?:{p})\b", f"task={task}")
    for bench, patterns in vocab.benchmarks.items():
        for p in patterns:
            cover(rf"\b(?:{p})\b", f"benchmark={bench}")
    for quality, patterns in QUALITY_WORDS.items():
        for p in patterns:
            cover(rf"\b(?:{p})\b", f"quality {quality}")
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

    def near(word: str) -> str | None:
        limit = max_edits(word)
        best = min(
            ((OSA.distance(word, c), shown) for c, shown in candidates if limit and abs(len(c) - len(word)) <= limit),
            default=None,
            key=lambda x: x[0],
        )
        return best[1] if best is not None and 0 < best[0] <= limit else None

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
    """A request the offline path cannot answer as asked (exit code 2): ``reading`` is what was understood;
    ``corrected`` the request with its near misses corrected ("did you mean ...?"), None when no word is a
    near miss."""

    def __init__(self, message: str, *, reading: RequestReading, corrected: str | None, fix: str):
        super().__init__(message, what="request", fix=fix)
        self.reading = reading
        self.corrected = corrected


def request_unclear(
    reading: RequestReading, request: str, catalog: Catalog, names: Mapping[str, str] | None = None
) -> UnclearRequest | None:
    """The error (exit code 2) for a request the offline path cannot answer as asked, or None when it can.

    A near miss gives "did you mean ...?" with the corrected request; unknown content words give what was
    understood.  Either way the fix names the ``rank_all`` option (rank every item anyway) as the caller spells
    it (``names``: RunConfig field -> option name, :func:`sgieval.core.option_names`; default the command
    line's ``--all``) and the catalog's disciplines."""
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


TASK_BENCHMARK = {
    IDEA_GENERATION: "sgi-bench",
    DEEP_RESEARCH: "sgi-bench",
    DRY_EXPERIMENT: "sgi-bench",
    WET_EXPERIMENT: "sgi-bench",
    EXPERIMENTAL_REASONING: "sgi-bench",
    FEASIBILITY: "sfbench",
    OPEN_CREATIVITY: "sciaidanbench",
}
"""Which benchmark holds each task's items (for the error when that benchmark is not loaded)."""
BENCHMARK_TITLES = {"sgi-bench": "SGI-Bench", "sfbench": "SFBench", "sciaidanbench": "SciAidanBench"}


def _instead_request(request: str, plan: SelectionPlan) -> str:
    """``request`` without the words that chose the task ("... in chemistry idea generation?" -> "... in
    chemistry?"), for the SciAidanBench alternative the error suggests."""
    text = request or ""
    for term, facet in plan.matched_terms.items():
        if facet.startswith("task="):
            text = re.sub(rf"\s*\b{re.escape(term)}\b", "", text, flags=re.I)
    return re.sub(r"\s+([?.!,])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()


def missing_task_data(plan: SelectionPlan, catalog: Catalog, request: str = "") -> InputError | None:
    """The error for a plan whose task filter names tasks of a benchmark that
    is not loaded (no local data): which benchmark holds those items, how to
    get it (``sgieval data pull`` or ``--data-dir``), and -- when the request
    asks about a quality and stored SciAidanBench answers are loaded -- the
    exact command that judges those answers for that quality instead.  None
    when the plan's emptiness has another cause."""
    from ..benchmarks import how_to_get

    tasks = plan.filters.get("task") or []
    loaded = set(catalog.values("task"))
    absent = [t for t in tasks if t not in loaded and TASK_BENCHMARK.get(t) in catalog.unavailable]
    if not absent:
        return None
    bench = TASK_BENCHMARK[absent[0]]
    title = BENCHMARK_TITLES.get(bench, bench)
    what = " and ".join(t.replace("_", "-") for t in absent)
    fix = how_to_get(bench)
    if "sciaidanbench" in {i.benchmark for i in catalog.items}:
        from .customisation import detect_qualities, unrecognised_qualities

        qualities = detect_qualities(request) + unrecognised_qualities(request)
        if qualities:
            alt = _instead_request(request, plan)
            fix += (
                f"; or judge the stored SciAidanBench answers for {qualities[0]} instead: "
                f"`sgieval ask \"{alt}\" -b sciaidanbench --judge openai:gpt-4.1`"
            )
    return InputError(
        f"{what} items come from {title}, which is not loaded (no local {bench} data)", what="request", fix=fix
    )


def apply_plan(plan: SelectionPlan, catalog: Catalog, request: str = "") -> list[Item]:
    """Items selected by ``plan``.  Raises InputError (one line) when the
    filters select nothing: :func:`missing_task_data` when the asked task's
    benchmark is not loaded, else with the available values."""
    matches = catalog.filter(plan.filters)
    if not matches:
        missing = missing_task_data(plan, catalog, request)
        if missing is not None:
            raise missing
        avail = "; ".join(
            f"{f}: {', '.join(catalog.values(f))}"
            for f in ("benchmark", "task", "discipline")
            if f in plan.filters or f == "task"
        )
        desc = ", ".join(f"{f} in {v}" for f, v in plan.filters.items())
        unavailable = "; ".join(f"{b}: {why}" for b, why in catalog.unavailable.items())
        raise InputError(
            f"the request selects no items ({desc})",
            what="request",
            fix=f"ask about what the catalog holds ({avail})" + (f"; not loaded: {unavailable}" if unavailable else ""),
        )
    return catalog.sample(matches, plan.k, plan.seed)


PLAN_SYSTEM = """You are the questioning agent of sgieval, an evaluation orchestrator for scientific LLMs.
Choose the benchmark items that answer the researcher's request. Use only facet values listed in the catalog.
Leave a facet out when the request does not constrain it. Set k only if the request asks for a number of items."""


def _catalog_summary(catalog: Catalog) -> str:
    lines = []
    for f in FACETS:
        counts = catalog.counts(f)
        lines.append(f"{f}: " + ", ".join(f"{v} ({n})" for v, n in sorted(counts.items()) if v))
    return "\n".join(lines)


def _clean_plan(plan: SelectionPlan, catalog: Catalog, agent: NamedModel, k: int | None, seed: int) -> SelectionPlan:
    """Drop facets/values absent from the catalog (noted in the reason), apply
    the run's ``k`` (when given) and ``seed``, and name the planner."""
    notes: list[str] = []
    clean: dict[str, list[str]] = {}
    for facet, vals in plan.filters.items():
        if facet not in FACETS:
            notes.append(f"dropped unknown facet {facet!r}")
            continue
        known = {v.lower(): v for v in catalog.values(facet)}
        vals = [vals] if isinstance(vals, str) else list(vals or [])
        kept = list(dict.fromkeys(known[v.lower()] for v in vals if v.lower() in known))
        dropped = [v for v in vals if v.lower() not in known]
        if dropped:
            notes.append(f"dropped {facet} values not in the catalog: {dropped}")
        if kept:
            clean[facet] = kept
    plan.filters = clean
    plan.k = k if k is not None else plan.k
    plan.seed = seed
    plan.sampling = "stratified" if plan.k else "all"
    plan.planner = agent.name
    if notes:
        plan.reason = f"{plan.reason} ({'; '.join(notes)})"
    return plan


async def llm_plan(
    request: str, catalog: Catalog, agent: NamedModel, k: int | None, seed: int
) -> tuple[SelectionPlan, list[str]]:
    """Ask ``agent`` for a SelectionPlan as structured output (models without
    tool calling); returns (plan, raw replies).  Values not in the catalog are
    dropped (noted).  Raises ValueError when the model gives no usable plan
    (the caller falls back to the offline plan)."""
    msgs = [
        SystemMessage(content=PLAN_SYSTEM),
        HumanMessage(
            content=f"Catalog facets (value (count)):\n{_catalog_summary(catalog)}\n\n"
            f"Request: {request or '(none: evaluate everything)'}"
        ),
    ]
    reply = await ask_agent(agent, msgs, SelectionPlan)
    if reply.parsed is None:
        raise ValueError(reply.error or "no plan")
    return _clean_plan(reply.parsed, catalog, agent, k, seed), [r for r in reply.raw]


# ------------------------------------------------------------------ tool path
class PlanArgs(BaseModel):
    """Arguments of the ``submit_selection_plan`` tool: the agent's final plan.

    ``filters``: facet -> accepted values (facets benchmark, task, discipline,
    direction, type; leave a facet out when the request does not constrain
    it).  ``k``: number of items, only when the request asks for a number
    (None = all matches).  ``reason``: one sentence on why.
    """

    filters: dict[str, list[str]] = Field(
        default_factory=dict, description="facet -> accepted values, e.g. {\"task\": [\"idea_generation\"]}"
    )
    k: int | None = Field(default=None, description="number of items; null = all matches")
    reason: str = Field(default="", description="why these filters answer the request")


SUBMIT_TOOL = "submit_selection_plan"


def _filters_arg(filters: Any) -> dict[str, list[str]]:
    if not filters:
        return {}
    if isinstance(filters, str):
        filters = json.loads(filters)
    if not isinstance(filters, dict):
        raise InputError(
            f"filters must be an object facet -> list of values, got {type(filters).__name__}",
            what="filters",
            fix='pass e.g. {"task": ["idea_generation"]}',
        )
    return {str(f): [v] if isinstance(v, str) else [str(x) for x in v] for f, v in filters.items() if v}


def catalog_tools(catalog: Catalog, seed: int = 0) -> list[BaseTool]:
    """The questioning agent's LangChain tools over ``catalog``.

    - ``facet_counts(facet, filters=None)`` -> JSON ``{value: item count}``
      of one facet among the items matching ``filters``;
    - ``search_items(text, filters=None, limit=10)`` -> JSON list of
      ``{id, benchmark, task, discipline, snippet}`` whose prompt contains
      every word of ``text`` (:meth:`Catalog.search`, best first, limit <= 50);
    - ``sample_items(filters=None, k=None)`` -> JSON ``{"matches", "k",
      "sampling", "item_ids"}``: the items a plan with these filters and K
      would select (stratified by discipline and task with the run's ``seed``).

    Bad arguments (unknown facet, malformed filters) come back as an
    ``"error: ..."`` string for the model to read, never an exception.
    """

    def _safe(fn):
        @functools.wraps(fn)
        def run(*a: Any, **kw: Any) -> str:
            try:
                return fn(*a, **kw)
            except (InputError, ValueError, TypeError) as e:
                return f"error: {e}"

        return run

    def facet_counts(facet: str, filters: dict[str, list[str]] | None = None) -> str:
        """Count catalog items per value of one facet (benchmark, task, discipline, direction, type), among the items matching the optional filters (facet -> accepted values)."""
        items = catalog.filter(_filters_arg(filters))
        counts = catalog.counts(facet, items)
        return json.dumps({v: n for v, n in sorted(counts.items()) if v}, ensure_ascii=False)

    def search_items(text: str, filters: dict[str, list[str]] | None = None, limit: int = 10) -> str:
        """Find catalog items whose prompt contains every word of `text` (optionally within filters: facet -> accepted values); returns id, benchmark, task, discipline and a snippet, best match first."""
        hits = catalog.search(text, catalog.filter(_filters_arg(filters)), limit=max(1, min(int(limit), 50)))
        return json.dumps(
            [
                {
                    "id": i.id,
                    "benchmark": i.benchmark,
                    "task": i.task,
                    "discipline": i.discipline,
                    "snippet": i.prompt[:160],
                }
                for i in hits
            ],
            ensure_ascii=False,
        )

    def sample_items(filters: dict[str, list[str]] | None = None, k: int | None = None) -> str:
        """Preview the item ids a plan would select: items matching the filters (facet -> accepted values), k of them stratified by discipline and task with the run's seed (k null = all matches)."""
        matches = catalog.filter(_filters_arg(filters))
        chosen = catalog.sample(matches, k, seed)
        return json.dumps(
            {
                "matches": len(matches),
                "k": k,
                "sampling": "stratified" if k is not None and k < len(matches) else "all",
                "item_ids": [i.id for i in chosen],
            },
            ensure_ascii=False,
        )

    return [
        StructuredTool.from_function(_safe(f), name=f.__name__, description=f.__doc__)
        for f in (facet_counts, search_items, sample_items)
    ]


def submit_tool() -> BaseTool:
    """The ``submit_selection_plan`` tool (schema :class:`PlanArgs`); calling it ends the agent's turn."""

    def submit_selection_plan(
        filters: dict[str, list[str]] | None = None, k: int | None = None, reason: str = ""
    ) -> str:
        return "plan received"

    return StructuredTool.from_function(
        submit_selection_plan,
        name=SUBMIT_TOOL,
        args_schema=PlanArgs,
        description="Submit the final selection plan (filters, k, reason). Call exactly once, at the end.",
    )


TOOL_SYSTEM = """You are the questioning agent of sgieval, an evaluation orchestrator for scientific LLMs.
Choose the benchmark items that answer the researcher's request.
Use the tools facet_counts, search_items and sample_items to inspect the catalog, then call submit_selection_plan once
with the filters (facet -> values, only values that exist in the catalog), k (only if the request asks for a number of
items) and a one-sentence reason. Leave a facet out when the request does not constrain it."""


def bind_catalog_tools(agent: NamedModel, tools: list[BaseTool]) -> Any | None:
    """``agent.chat.bind_tools(tools)``, or None when the chat model has no
    tool calling (:func:`sgieval.models.tool_loop.bind_tools`)."""
    return bind_tools(agent, tools)


async def tool_plan(
    request: str, catalog: Catalog, agent: NamedModel, bound: Any, k: int | None, seed: int, *, max_steps: int = 8
) -> tuple[SelectionPlan, list[dict[str, Any]]]:
    """The tool-calling loop (the one tool loop,
    :func:`sgieval.models.tool_loop.run_tool_loop`): the model calls catalog
    tools (their results go back as ToolMessages) until it calls
    ``submit_selection_plan`` (or answers with a JSON plan in plain text).
    Returns (cleaned plan, trace of ``{"tool", "args", "result"}`` per call;
    a plain-text reply is ``{"tool": None, ...}``).  Raises ValueError after
    ``max_steps`` turns without a plan, ModelCallError when a call fails."""
    tools = {t.name: t for t in catalog_tools(catalog, seed)}
    msgs: list[Any] = [
        SystemMessage(content=TOOL_SYSTEM),
        HumanMessage(
            content=f"Catalog facets (value (count)):\n{_catalog_summary(catalog)}\n\n"
            f"Request: {request or '(none: evaluate everything)'}"
        ),
    ]
    trace: list[dict[str, Any]] = []
    plan: list[PlanArgs] = []

    async def execute(name: str, args: dict[str, Any]) -> str:
        if name == SUBMIT_TOOL:
            try:
                plan.append(PlanArgs.model_validate({**args, "filters": _filters_arg(args.get("filters"))}))
                result = "plan received"
            except (ValueError, TypeError, InputError) as e:
                result = f"error: invalid plan ({str(e)[:300]}); call {SUBMIT_TOOL} again"
        else:
            result = str(tools[name].invoke(args))
        trace.append({"tool": name, "args": args, "result": result[:2000]})
        return result

    def unknown(name: str, args: dict[str, Any]) -> str:
        result = f"error: unknown tool {name!r}; use one of {sorted(tools) + [SUBMIT_TOOL]}"
        trace.append({"tool": name, "args": args, "result": result})
        return result

    def on_text(msg: AIMessage) -> str | None:
        text = message_text(msg)
        trace.append({"tool": None, "args": {}, "result": text[:500]})
        try:
            plan.append(PlanArgs.model_validate(parse_json_object(text)))
            return None
        except (ValueError, TypeError) as e:
            return f"No plan received ({str(e)[:200]}). Call {SUBMIT_TOOL} with the filters, k and reason."

    with prompt_scope("sgieval:agent/questioning"):
        loop = await run_tool_loop(
            agent,
            msgs,
            bound,
            execute,
            offered=[*tools, SUBMIT_TOOL],
            max_turns=max_steps,
            on_text=on_text,
            done=lambda: bool(plan),
            unknown_tool=unknown,
        )
    if loop.stopped in ("answered", "finished") and plan:
        return _clean_plan(SelectionPlan(**plan[-1].model_dump()), catalog, agent, k, seed), trace
    raise ValueError(f"no {SUBMIT_TOOL} call within {max_steps} model turns")


async def run_questioning(
    request: str,
    catalog: Catalog,
    *,
    k: int | None = None,
    seed: int = 0,
    agent: NamedModel | None = None,
    metrics: list[str] | None = None,
    models: list[str] | None = None,
    rank_all: bool = False,
    names: Mapping[str, str] | None = None,
) -> tuple[SelectionPlan, list[Item], dict[str, Any]]:
    """The questioning step: (plan, selected items, trace).

    ``trace`` keeps ``"path"`` ("tools", "structured" or "offline"), the
    agent's tool calls (``"tool_calls"``) or raw replies (``"agent_raw"``),
    any fallback reason (``"fallback"``) and, on the offline path, what was
    understood of the request (``"reading"``, :func:`understand_request` with
    ``metrics`` and ``models``).  ``plan.sampling`` is "stratified" when K is
    smaller than the matches, else "all".

    Raises:
        UnclearRequest: on the offline path, when a word of the request is a
            near miss of a known term or names nothing the run can select or
            measure (:func:`request_unclear`); ``rank_all`` (``--all``) ranks
            every item the understood words select instead, and the plan's
            reason names the words left out.  ``names`` spells the options
            in these texts as the caller does (:func:`request_unclear`).
    """
    trace: dict[str, Any] = {}
    if agent is not None:
        try:
            bound = bind_catalog_tools(agent, [*catalog_tools(catalog, seed), submit_tool()])
            if bound is not None:
                trace["path"] = "tools"
                plan, calls = await tool_plan(request, catalog, agent, bound, k, seed)
                trace["tool_calls"] = calls
            else:
                trace["path"] = "structured"
                plan, raw = await llm_plan(request, catalog, agent, k, seed)
                trace["agent_raw"] = raw
            items = apply_plan(plan, catalog)
            plan.sampling = _sampling(plan, catalog)
            return plan, items, trace
        except (ValueError, InputError, ModelCallError) as e:
            trace["fallback"] = f"agent {agent.name} gave no usable plan ({e}); offline plan used"
    trace["path"] = "offline"
    reading = understand_request(request, catalog, metrics=metrics, models=models)
    trace["reading"] = reading.model_dump()
    unclear = request_unclear(reading, request, catalog, names)
    if unclear is not None and not rank_all:
        raise unclear
    plan = offline_plan(request, catalog, k, seed)
    if unclear is not None:
        left = ", ".join(f"'{w}'" for w in [*reading.near_misses, *reading.unknown])
        plan.reason += f". {(names or {}).get('rank_all', '--all')}: {left} matched nothing and {'was' if len(left.split(', ')) == 1 else 'were'} left out"
    if "fallback" in trace:
        plan.reason = f"{trace['fallback']}. {plan.reason}"
    items = apply_plan(plan, catalog, request)
    plan.sampling = _sampling(plan, catalog)
    return plan, items, trace


def _sampling(plan: SelectionPlan, catalog: Catalog) -> str:
    return "stratified" if plan.k is not None and plan.k < len(catalog.filter(plan.filters)) else "all"
