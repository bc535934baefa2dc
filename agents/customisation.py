"""Metric customisation agent (SGI-Bench paper, arXiv 2512.16969, section 3, agent 2).

request + selected items + metric pool -> a :class:`MetricPlan`: the
benchmark's predefined metrics (always kept), custom rubric metrics for
qualities the request names that the pool lacks (reported beside the
predefined ones, never instead), and the metric the ranking uses.

Offline path: qualities are found with the vocabulary; a quality with a
predefined metric picks it as the ranking metric: the one the selected
benchmark prefers for it (``Benchmark.prefer``: creativity -> accepted
answers on open creativity), else the first that declares it
(``MetricSpec.qualities``); a registered metric whose quality the request
names (:mod:`sgieval.metric_pool.registry`) joins the plan's pool; others are looked up in the rubric library
(``metric_pool/rubrics/``: starter, project and user rubrics) by semantic
match (:func:`sgieval.metric_pool.rubrics.find_rubric`).

With an agent model: the model picks the ranking metric and drafts rubrics
(criteria with 0-10 anchors, weights, aggregation to 0-100) for qualities
the pool lacks, grounded in any PDF the request names (read with
``read_pdf`` and cited in the rubric's ``source``) and, when a ToolPool is
given, in ``web_search``/``read_pdf`` calls it makes itself.

Also the rubric authoring used by ``sgieval metric define``
(:mod:`sgieval.graphs.metric_chat`): :func:`propose_rubric` and
:func:`revise_rubric`, each with a deterministic offline path (best library
rubric by semantic match, or a generic 4-criterion rubric from the
description's key phrases; revisions understood by small regexes:
"weigh X double", "X weight 2", "drop X", "add criterion X: description",
"rename to NAME") and an LLM path (structured output :class:`Rubric`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationError

from ..core import Criterion, InputError, Item, MetricSpec, ModelCallError, Rubric, SgievalError
from ..metric_pool.base import Metric
from ..metric_pool.registry import MetricEntry, applicable, key_of
from ..metric_pool.judge import JudgeReply, as_data, parse_json_object
from ..metric_pool.judge import ask_judge as ask_structured
from ..benchmarks import registry as benchmark_registry
from ..models.base import NamedModel
from ..models.calls import message_text
from .vocabulary import QUALITY_WORDS


def metric_for_quality(quality: str, specs: list[MetricSpec], items: list[Item] | None = None) -> str | None:
    """Name of the spec in ``specs`` that measures ``quality`` best for ``items``, None when none measures it.

    Each benchmark declares its preference (``Benchmark.prefer``: quality -> its metrics, best first); the
    benchmarks of ``items`` are asked in order of how many of the items they hold (most first; ties: the order
    of the items), and the first preferred name among ``specs`` wins.  Without a preference: the first spec
    that declares the quality (``MetricSpec.qualities``), in ``specs`` order."""
    names = [s.name for s in specs]
    counts: dict[str, int] = {}
    for i in items or []:
        counts[i.benchmark] = counts.get(i.benchmark, 0) + 1
    for b in sorted(counts, key=lambda b: -counts[b]):
        defn = benchmark_registry.find(b)
        for name in defn.prefer.get(quality, ()) if defn is not None else ():
            if name in names:
                return name
    return next((s.name for s in specs if s.measures(quality)), None)


def declared_primaries(items: list[Item]) -> set[str]:
    """Names of the primary metrics the items' benchmark definitions declare for
    the items' tasks (``Benchmark.primary``; ``"*"`` = any task)."""
    out: set[str] = set()
    for b, task in dict.fromkeys((i.benchmark, i.task) for i in items):
        defn = benchmark_registry.find(b)
        if defn is not None:
            name = defn.primary.get(task) or defn.primary.get("*")
            if name:
                out.add(name)
    return out


# (quality, metric) pairs where the metric is a stand-in, not a measure of the quality itself: the plan and the
# report's Answer say which metric was used instead, and why (issue 17 item 3)
STAND_INS: dict[tuple[str, str], str] = {
    ("creativity", "idea_novelty"): "idea generation has no creativity metric; the novelty dimension is its closest "
    "measure",
    ("creativity", "idea_final_score"): "idea generation has no creativity metric; the overall idea score includes "
    "novelty",
    ("novelty", "aidan_accepted_answers"): "the selected tasks have no novelty metric; accepted answers count only "
    "answers that passed the novelty threshold",
}


class MetricPlan(BaseModel):
    """The metrics of a run.

    ``predefined``: names of the benchmark metrics applied (all that apply to
    the selected tasks).  ``custom``: rubric metrics formalised from the
    request.  ``primary``: the metric the ranking uses.  ``qualities``: what
    the request asks about.  ``reason``: why.  ``notes``: qualities that
    could not be measured, and why.
    """

    predefined: list[str] = Field(default_factory=list)
    custom: list[Rubric] = Field(default_factory=list)
    primary: str = ""
    qualities: list[str] = Field(default_factory=list)
    reason: str = ""
    notes: list[str] = Field(default_factory=list)
    planner: str = "offline"
    pool: list[str] = Field(default_factory=list)
    """Metrics of the pool beyond the benchmark's predefined ones (e.g. ``retrieval_novelty`` for "novel compared
    with the literature"), reported beside them."""
    stand_in: str = ""
    """When ``primary`` stands in for the asked quality (:data:`STAND_INS`): which metric was used instead and why."""
    metrics: list[tuple[str, str]] = Field(default_factory=list)
    """Every predefined and registered metric the run scores, by key ``(scope, name)``: the scope is the item
    benchmark whose items it scores (``"jsonl:qa"``) or ``"*"`` (:mod:`sgieval.metric_pool.registry`).  Two
    benchmarks' metrics of the same name are two entries, never merged."""


def detect_qualities(request: str) -> list[str]:
    """Qualities named in ``request`` (vocabulary order)."""
    out = []
    for q, pats in QUALITY_WORDS.items():
        if any(re.search(rf"\b{p}\b", request or "", flags=re.I) for p in pats):
            out.append(q)
    return out


_ASKED_QUALITY = re.compile(r"\b(?:most|least)\s+([a-z][a-z-]{2,})(?:\s+([a-z][a-z-]*))?", re.I)
_NOT_QUALITIES = {
    "of",
    "the",
    "models",
    "model",
    "likely",
    "important",
    "often",
    "recent",
    "common",
    "cases",
    "questions",
    "items",
    "answers",
    "tasks",
    "used",
    "popular",
    "frequently",
    "widely",
}


def unrecognised_qualities(request: str) -> list[str]:
    """Words the request asks about as "most X" / "least X" that the quality
    vocabulary does not know ("most honest" -> ["honest"])."""
    out = []
    for m in _ASKED_QUALITY.finditer(request or ""):
        w = m.group(1).lower()
        if w in _NOT_QUALITIES or detect_qualities(f"{w} {m.group(2) or ''}") or w in out:
            continue
        out.append(w)
    return out


def starter_rubric(quality: str) -> Rubric | None:
    """The starter rubric for ``quality`` from ``metric_pool/rubrics`` (None when absent)."""
    try:
        from ..metric_pool.rubrics import find_rubric
    except ImportError:
        return None
    return find_rubric(quality)


def registered_offers(
    items: list[Item], predefined: list[Metric], options: dict | None = None
) -> list[tuple[MetricEntry, Metric]]:
    """The registered metrics (:func:`sgieval.metric_pool.registry.metric`) that apply to ``items`` and are not
    among their benchmarks' ``predefined`` metrics, with their Metric: what the plan may add to ``pool``."""
    taken = {key_of(m) for m in predefined}
    return [(e, m) for e, m in applicable(items, options) if e.key not in taken]


def _add_asked(
    plan: MetricPlan, request: str, offers: list[tuple[MetricEntry, Metric]], options: dict | None, tools: Any
) -> MetricPlan:
    """``plan`` with each registered metric whose quality ``request`` names (:meth:`MetricEntry.asked`) added to
    ``pool``; the first one becomes the ranking metric (it is more specific than the vocabulary's qualities),
    with a reason that says where it works in this run."""
    for e, _m in offers:
        asked = e.asked(request)
        if not asked or e.name in plan.pool:
            continue
        where = e.where(options, tools)
        detail = f" ({where})" if where else f" ({e.unavailable})" if where is None and e.unavailable else ""
        first = not plan.pool
        plan = plan.model_copy(
            update={
                "pool": [*plan.pool, e.name],
                "metrics": [*plan.metrics, e.key],
                "primary": e.name if first else plan.primary,
                "stand_in": "" if first else plan.stand_in,
                "qualities": list(dict.fromkeys([*plan.qualities, *asked])),
                "reason": "; ".join(
                    [f"'{asked[0]}' is measured by the registered metric {e.name}{detail}"]
                    + [
                        r
                        for r in plan.reason.split("; ")
                        if r and not r.startswith("ranking by the benchmark's primary metric")
                    ]
                ),
            }
        )
    return plan


def offline_metric_plan(
    request: str,
    items: list[Item],
    metrics: list[Metric],
    offers: list[tuple[MetricEntry, Metric]] = (),  # type: ignore[assignment]
) -> MetricPlan:
    """Deterministic plan: all applicable predefined metrics; ranking metric
    from the first quality that maps to one, else the first primary metric.  A word the request asks about
    ("most concise") that a registered metric of ``offers`` measures is left to :func:`_add_asked`."""
    specs = [s for m in metrics for s in m.all_specs]
    names = list(dict.fromkeys(s.name for s in specs))
    qualities = detect_qualities(request)
    primary = ""
    stand_in = ""
    unmeasured: list[str] = []
    notes: list[str] = []
    custom: list[Rubric] = []
    reason: list[str] = []
    for q in qualities:
        hit = metric_for_quality(q, specs, items)
        if hit:
            if not primary and (q, hit) in STAND_INS:
                stand_in = f"'{q}' is ranked by {hit} instead: {STAND_INS[(q, hit)]}"
                reason.append(stand_in)
            else:
                reason.append(f"'{q}' is measured by the predefined metric {hit}")
            primary = primary or hit
            continue
        rub = starter_rubric(q)
        if rub is not None:
            custom.append(rub)
            primary = primary or rub.name
            reason.append(f"'{q}' has no predefined metric: custom rubric {rub.name} ({len(rub.criteria)} criteria)")
        else:
            notes.append(f"'{q}' has no predefined metric for the selected tasks and no starter rubric")
            unmeasured.append(q)
    for w in unrecognised_qualities(request):
        if any(e.asked(w) for e, _m in offers):
            continue
        rub = starter_rubric(w)  # the rubric library, user rubrics included, by meaning
        if rub is not None and all(r.name != rub.name for r in custom):
            custom.append(rub)
            primary = primary or rub.name
            qualities.append(w)
            reason.append(f"'{w}' matches the rubric {rub.name} ({len(rub.criteria)} criteria)")
        elif rub is None:
            notes.append(
                f"'{w}' (asked in the request) is measured by no metric or rubric here, so the ranking "
                "does not measure it; define one with `sgieval metric define`"
            )
            unmeasured.append(w)
    if not primary:
        declared = declared_primaries(items)
        prim = [s.name for s in specs if s.name in declared] or [s.name for s in specs if s.primary]
        primary = prim[0] if prim else (names[0] if names else "")
        reason.append(f"ranking by the benchmark's primary metric {primary}")
        if unmeasured:
            stand_in = (
                f"{', '.join(repr(w) for w in unmeasured)} {'is' if len(unmeasured) == 1 else 'are'} measured "
                f"by no metric or rubric here, so the ranking uses the benchmark's primary metric {primary} "
                "instead (define a rubric with `sgieval metric define`)"
            )
    return MetricPlan(
        predefined=names,
        custom=custom,
        primary=primary,
        qualities=qualities,
        reason="; ".join(reason),
        notes=notes,
        stand_in=stand_in,
        metrics=list(dict.fromkeys(key_of(m) for m in metrics)),
    )


CUSTOM_SYSTEM = """You are the metric customisation agent of sgieval. The benchmark's predefined metrics are always applied.
Pick the metric that best answers the request as `primary` (a name from the list, or the name of a custom rubric you define).
Only when the request names a quality that no listed metric measures, define a custom rubric for it: 4-6 criteria,
each scored 0-10 with anchors for 0, 5 and 10, equal weights unless the request says otherwise (aggregation: weighted
mean of the criterion scores x 10, so 0-100). Put your citations in the rubric's `source`.
Pool metrics, when listed, are applied only if you name them in `pool`; when the request asks about a quality a pool
metric measures, choose it (in `pool` and as `primary`).
When the user names a document (given below as DOCUMENT data), take the rubric's criteria from it and cite it."""

PDF_RE = re.compile(r"""(?:(?<=\s)|^|(?<=["'(]))((?:~|\.{1,2}|/)?[^\s"'()]*\.pdf)\b""", re.I)
PDF_CHARS = 12_000
"""Characters of a named PDF shown to the agent."""


QUOTED_PDF_RE = re.compile(r"""["']([^"']+?\.pdf)["']""", re.I)


def named_pdfs(request: str) -> list[str]:
    """``.pdf`` paths named in ``request`` (in order, duplicates dropped), e.g.
    "score rigor with the rubric in ~/papers/rubric.pdf" -> ["~/papers/rubric.pdf"].
    Quote a path that contains spaces ("'/my papers/r.pdf'")."""
    text = request or ""
    quoted = [m.group(1) for m in QUOTED_PDF_RE.finditer(text)]
    rest = QUOTED_PDF_RE.sub(" ", text)
    return list(dict.fromkeys(quoted + [m.group(1).rstrip(".,;:") for m in PDF_RE.finditer(rest)]))


def read_named_pdfs(request: str, tools: Any = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Read every PDF named in ``request`` (through ``tools.call("read_pdf")``
    when the pool has it, so the call is recorded, else with
    :func:`sgieval.tools.pdf.read_pdf`; at most 20 pages each).  Returns
    (documents {"path", "title", "text" (<= PDF_CHARS), "pages", "partial"},
    notes for the plan about PDFs that could not be read)."""
    docs: list[dict[str, Any]] = []
    notes: list[str] = []
    for raw in named_pdfs(request):
        path = str(Path(raw).expanduser())
        try:
            if tools is not None and "read_pdf" in getattr(tools, "names", []):
                doc, _ = tools.call("read_pdf", source=path, max_pages=20)
            else:
                from ..tools.pdf import read_pdf

                doc = read_pdf(path, max_pages=20)
        except SgievalError as e:
            notes.append(f"the PDF {raw} named in the request could not be read: {e.one_line()}")
            continue
        text = doc.text
        docs.append(
            {
                "path": raw,
                "title": doc.title or Path(path).name,
                "pages": len(doc.pages),
                "partial": doc.partial or len(text) > PDF_CHARS,
                "text": text[:PDF_CHARS],
            }
        )
    return docs, notes


def _tidy_rubric(r: Rubric, *, taken: set[str], default_source: str, cite: list[str]) -> Rubric:
    """Rubric from an agent made safe to run: slug name distinct from ``taken``,
    tasks ["*"] when none, a source (``default_source`` when empty) that cites
    every entry of ``cite`` not already mentioned."""
    from ..metric_pool.rubrics import slug

    name = slug(r.name)
    if name in taken:
        name = f"{name}_custom"
    source = (r.source or "").strip() or default_source
    missing = [c for c in cite if c not in source]
    if missing:
        source = f"{source}; " + "; ".join(missing)
    return r.model_copy(
        update={"name": name, "tasks": r.tasks or ["*"], "source": source, "kind": "rubric", "range": (0.0, 100.0)}
    )


DRAFT_SYSTEM = """You formalise a quality of scientific answers as a rubric for sgieval.
Give 4-6 criteria; each has a short name, a one-sentence description and anchors for scores 0, 5 and 10.
Weights default to 1 (say otherwise only when asked). Aggregation is the weighted mean of the 0-10 criterion
scores x 10 (0-100). `tasks` is ["*"]. Put your citations (documents, URLs, papers) in `source`."""


async def draft_rubric(
    quality: str,
    agent: NamedModel,
    *,
    request: str = "",
    documents: list[dict[str, Any]] | None = None,
    name: str | None = None,
) -> tuple[Rubric | None, list[str], str | None]:
    """Ask ``agent`` for a :class:`Rubric` measuring ``quality`` (structured
    output, parse retries).  ``documents`` (from :func:`read_named_pdfs`) are
    shown as delimited data and cited in ``source``.  Returns (rubric or None,
    raw replies, error)."""
    from ..metric_pool.rubrics import slug

    docs = documents or []
    parts = [f"Quality to measure: {quality}", f"Metric name: {slug(name or quality)}"]
    if request:
        parts.append(f"User request: {request}")
    for d in docs:
        parts.append(f"Document {d['path']} ({d['title']}):\n{as_data(d['text'], 'DOCUMENT')}")
    reply = await ask_structured(
        agent, [SystemMessage(content=DRAFT_SYSTEM), HumanMessage(content="\n\n".join(parts))], Rubric
    )
    if reply.parsed is None:
        return None, reply.raw, reply.error
    r = _tidy_rubric(
        reply.parsed,
        taken=set(),
        default_source=f"drafted by {agent.name} for '{quality}'",
        cite=[f"{d['path']} ({d['title']})" for d in docs],
    )
    if name:
        r = r.model_copy(update={"name": slug(name)})
    return r, reply.raw, None


def _urls(evidence: list[Any]) -> list[str]:
    out: list[str] = []
    for e in evidence:
        if e.tool == "web_search" and not e.refused:
            out += re.findall(r"<([^<>\s]+)>", str(e.output or ""))
        if e.tool == "read_pdf" and not e.refused:
            out.append(str((e.input or {}).get("source", "")))
    return [u for u in dict.fromkeys(out) if u][:5]


async def run_customisation(
    request: str, items: list[Item], *, agent: NamedModel | None = None, options: dict | None = None, tools: Any = None
) -> tuple[MetricPlan, list[Metric], dict[str, Any]]:
    """(plan, predefined Metric objects, trace).  With ``agent``, the model
    proposes the ranking metric and any custom rubrics; the predefined list
    is enforced in code, so the agent can add metrics but never drop one.

    PDFs named in the request are read (``read_pdf``) and given to the agent
    as data; its rubrics cite them in ``source``.  ``tools`` (a ToolPool):
    the agent may first call ``web_search``/``read_pdf`` (at most
    ``options["agent_tool_budget"]``, default 3 calls; needs ``bind_tools``),
    and the URLs it consulted are cited.  A quality with no predefined
    metric, no library rubric and no agent rubric gets one drafted with
    :func:`draft_rubric`.  Offline (no agent) the plan is
    :func:`offline_metric_plan`; named PDFs are noted, not used.
    Trace keys: ``agent_raw``, ``documents``, ``tool_evidence``.
    """
    benchmarks = list(dict.fromkeys(i.benchmark for i in items))
    metrics = benchmark_registry.predefined_metrics(benchmarks, items, options)
    offers = registered_offers(items, metrics, options)
    base = _add_asked(offline_metric_plan(request, items, metrics, offers), request, offers, options, tools)
    metrics = [*metrics, *(m for e, m in offers if e.name in base.pool)]
    trace: dict[str, Any] = {}
    docs, pdf_notes = read_named_pdfs(request, tools) if named_pdfs(request) else ([], [])
    base.notes.extend(pdf_notes)
    if docs:
        trace["documents"] = [{k: v for k, v in d.items() if k != "text"} for d in docs]
    if agent is None:
        if docs:
            base.notes.append(
                f"read {', '.join(d['path'] for d in docs)}, but drafting a rubric from a document "
                "needs an agent model (--agent-model); the rubric library was used instead"
            )
        return base, metrics, trace
    # the registered metrics the agent may choose: those that can work in this run (MetricEntry.offer)
    offered = [(e, m) for e, m in offers if e.name in base.pool or e.where(options, tools) is not None]
    offered_keys = {e.key for e, _m in offered}
    listing = "\n".join(
        f"- {s.name} ({s.kind}, {s.scale_label}): {s.description}"
        for m in metrics
        if key_of(m) not in offered_keys
        for s in m.specs
    )
    content = f"Request: {request}\nTasks: {sorted({i.task for i in items})}\nMetrics:\n{listing}"
    if offered:
        content += "\nPool metrics (applied only when you name them in `pool`; one may be `primary`):" + "".join(
            "\n"
            + "\n".join(f"- {s.name} ({s.kind}, {s.scale_label}): {s.description}" for s in m.specs)
            + f"\n  {e.name}{' ' + w if (w := e.where(options, tools)) else ''}; choose it (pool and primary) for "
            f"a request about {' or '.join(e.qualities) or 'what it measures'}."
            for e, m in offered
        )
    for d in docs:
        content += (
            f"\n\nDocument {d['path']} ({d['title']}, {d['pages']} pages"
            f"{', excerpt' if d['partial'] else ''}):\n{as_data(d['text'], 'DOCUMENT')}"
        )
    msgs: list[Any] = [SystemMessage(content=CUSTOM_SYSTEM), HumanMessage(content=content)]
    evidence: list[Any] = []
    direct: MetricPlan | None = None
    if tools is not None:
        from ..metric_pool.rubric import tool_loop

        budget = int((options or {}).get("agent_tool_budget", 3))
        try:
            loop = await tool_loop(
                agent,
                [
                    SystemMessage(
                        content=CUSTOM_SYSTEM + "\nYou may first call web_search or "
                        f"read_pdf (at most {budget} calls) to ground rubric criteria."
                    ),
                    msgs[1],
                ],
                tools,
                allowed=("web_search", "read_pdf"),
                budget=budget,
            )
            evidence = loop.evidence
            if loop.last is not None and not loop.last.tool_calls:
                try:  # the agent answered with the plan right away: no second call
                    direct = MetricPlan.model_validate(parse_json_object(message_text(loop.last)))
                except (ValueError, ValidationError):
                    direct = None
            if loop.last is not None and direct is None:
                msgs = [
                    msgs[0],
                    *loop.messages[1:],
                    HumanMessage(content="Tool use is over. Reply now with the metric plan JSON object."),
                ]
        except ModelCallError as e:
            base.notes.append(f"agent {agent.name} tool use failed ({e.message}); planning without tools")
        trace["tool_evidence"] = [e.model_dump(mode="json") for e in evidence]
    if direct is not None:
        reply = JudgeReply(judge=agent.name, parsed=direct, raw=[message_text(loop.last)], attempts=1)
    else:
        reply = await ask_structured(agent, msgs, MetricPlan)
    trace["agent_raw"] = reply.raw
    if reply.parsed is None:
        base.notes.append(f"agent {agent.name} gave no usable metric plan ({reply.error}); offline plan used")
        return base, metrics, trace
    p = reply.parsed
    cite = [f"{d['path']} ({d['title']})" for d in docs] + [f"consulted {u}" for u in _urls(evidence)]
    taken = set(base.predefined)
    custom = [
        _tidy_rubric(
            r, taken=taken, default_source=f"drafted by agent {agent.name} from the request: {request}", cite=cite
        )
        for r in p.custom
    ]
    if not custom:
        custom = list(base.custom)
    notes = base.notes + p.notes
    covered = {q for q in base.qualities if metric_for_quality(q, [s for m in metrics for s in m.all_specs], items)}
    for q in base.qualities:
        if q in covered or any(_mentions(r, q) for r in custom):
            continue
        r, raw, error = await draft_rubric(q, agent, request=request, documents=docs)
        trace.setdefault("draft_raw", {})[q] = raw
        if r is None:
            notes.append(f"agent {agent.name} could not draft a rubric for '{q}' ({error})")
            continue
        custom.append(r)
        notes = [n for n in notes if not n.startswith(f"'{q}' has no predefined metric")]
    # pool metrics: the offline plan's (a literal "compared with my papers" request) plus those the agent chose
    # among the offered ones, by name in `pool` or as its primary metric
    chosen = [(e, m) for e, m in offered if e.name in p.pool or p.primary in {s.name for s in m.specs}]
    pool = list(dict.fromkeys([*base.pool, *(e.name for e, _m in chosen)]))
    for n in p.pool:
        if n not in pool:
            known = next((e for e, _m in offers if e.name == n), None)
            notes.append(
                f"agent {agent.name} chose the pool metric {n!r}, which is not offered here"
                + (f" ({known.unavailable})" if known is not None and known.unavailable else "")
            )
    pool_metrics = [(e, m) for e, m in offers if e.name in pool]
    names = {r.name for r in custom} | set(base.predefined) | {s.name for _e, m in pool_metrics for s in m.specs}
    primary = (
        p.primary
        if p.primary in names
        else (base.primary if base.primary in names else (custom[0].name if custom else base.primary))
    )
    qualities = p.qualities or base.qualities
    for entry, _m in chosen:
        if entry.name not in base.pool:
            qualities = list(dict.fromkeys([*qualities, *entry.qualities]))
    plan = MetricPlan(
        predefined=base.predefined,
        custom=custom,
        primary=primary,
        qualities=qualities,
        reason=p.reason or base.reason,
        notes=notes,
        planner=agent.name,
        pool=pool,
        stand_in=base.stand_in if primary == base.primary else "",
        metrics=list(
            dict.fromkeys([*(k for k in base.metrics if k not in offered_keys), *(e.key for e, _m in pool_metrics)])
        ),
    )
    metrics = [m for m in metrics if key_of(m) not in offered_keys]
    return plan, [*metrics, *(m for _e, m in pool_metrics)], trace


def _mentions(r: Rubric, quality: str) -> bool:
    q = quality.lower()
    return q in r.name.lower().replace("_", " ") or q in (r.description or "").lower()


def planned_metrics(plan: MetricPlan, items: list[Item], options: dict | None = None) -> list[Metric]:
    """The Metric objects of ``plan`` for ``items``: the predefined and registered metrics named by the plan's keys
    (``MetricPlan.metrics``, each restricted to its scope's items), then its custom rubrics.  A plan without
    keys (written before plans had them) is read by metric names (``predefined``, ``pool``)."""
    keys = {tuple(k) for k in plan.metrics}
    predefined = benchmark_registry.predefined_metrics(list(dict.fromkeys(i.benchmark for i in items)), items, options)
    out = [m for m in predefined if (key_of(m) in keys if keys else any(s.name in plan.predefined for s in m.specs))]
    out += [
        m for e, m in registered_offers(items, predefined, options) if (e.key in keys if keys else e.name in plan.pool)
    ]
    if plan.custom:
        from ..metric_pool.rubric import RubricMetric

        out += [RubricMetric(r) for r in plan.custom]
    return out


def plan_specs(plan: MetricPlan, metrics: list[Metric]) -> list[MetricSpec]:
    """Every MetricSpec of the plan, predefined first, then custom."""
    specs = {s.name: s for m in reversed(metrics) for s in reversed(m.all_specs)}  # the first of a name shows it
    return [specs[n] for n in dict.fromkeys(s.name for m in metrics for s in m.all_specs)] + list(plan.custom)


# ------------------------------------------------------------ rubric authoring
# Used by `sgieval metric define` (graphs/metric_chat.py).

_FILLER = re.compile(
    r"^(?:(?:i|we)\s+(?:want|need|would like)\s+|(?:a|an|the|my|our|some|new)\s+|(?:custom\s+)?(?:metric|rubric|score|"
    r"measure|criterion|criteria)s?\s+|(?:that|which|to)\s+|(?:for|of|on|about|in|by)\s+|(?:measures?|measuring|"
    r"scores?|scoring|rates?|rating|evaluates?|evaluating|checks?|checking|judges?|judging|assess(?:es|ing)?)\s+|"
    r"(?:how|whether|if)\s+(?:well\s+|much\s+)?|(?:the\s+)?(?:model'?s?|responses?|answers?|ideas?|proposals?)\s+"
    r"(?:is|are|shows?|has|have|gives?|uses?|includes?)?\s*|(?:is|are|be)\s+|"
    r"(?:(?:research|scientific|proposed|generated)\s+)?(?:ideas?|responses?|answers?|proposals?|plans?|outputs?)\s+"
    r"(?:states?|gives?|proposes?|includes?|provides?|presents?|makes?|offers?|contains?)\s+)+",
    re.I,
)
_GENERIC = [
    (
        "correctness",
        "Statements, numbers and conclusions are correct.",
        "Mostly wrong.",
        "Partly correct, with notable errors.",
        "Fully correct.",
    ),
    (
        "completeness",
        "Every part of the task is addressed.",
        "Most of the task is ignored.",
        "Main parts addressed, some missing.",
        "Every part addressed in depth.",
    ),
    (
        "justification",
        "Claims are supported with reasoning, evidence or references.",
        "Unsupported assertions.",
        "Some support, with gaps.",
        "Every claim is well supported.",
    ),
    (
        "clarity",
        "The response is clear and well organised.",
        "Confusing.",
        "Understandable with effort.",
        "Clear and well organised.",
    ),
]


def key_phrases(description: str, limit: int = 4) -> list[str]:
    """Up to ``limit`` short phrases (1-5 words) naming what ``description``
    asks to measure: the text is split at punctuation and at "and"/"or"/
    "with"/"plus", and leading filler ("a metric for how well the answer ...")
    is stripped.  "A metric for cost awareness and use of cheap reagents" ->
    ["cost awareness", "use of cheap reagents"]."""
    out: list[str] = []
    for part in re.split(r"[,;:.!?()]|\b(?:and|or|with|plus|as well as|including)\b", description or "", flags=re.I):
        p = _FILLER.sub("", part.strip()).strip(" -'\"").lower()
        p = re.sub(r"\s+", " ", p)
        if p and 1 <= len(p.split()) <= 5 and re.search(r"[a-z]", p) and p not in out:
            out.append(p)
    return out[:limit]


_VERBS = (
    "states",
    "gives",
    "estimates",
    "includes",
    "provides",
    "proposes",
    "describes",
    "explains",
    "considers",
    "uses",
    "has",
    "contains",
    "discusses",
    "identifies",
    "addresses",
    "mentions",
    "offers",
    "presents",
    "defines",
    "reports",
    "cites",
    "quantifies",
    "justifies",
    "compares",
    "lists",
    "avoids",
    "follows",
)


def drafted_criterion(phrase: str, weight_note: str = "") -> Criterion:
    """An offline criterion for ``phrase`` whose description says what it
    checks (never just its name again), with anchors at 0, 5 and 10.

    A phrase that starts with a verb ("estimates its cost") is checked as an
    action ("Checks whether the response estimates its cost ..."); any other
    phrase ("testable hypothesis") as something the response must contain,
    stated explicitly and specifically and supported."""
    p = phrase.strip()
    first = p.split()[0].lower() if p.split() else ""
    if first in _VERBS:
        desc = (
            f"Checks whether the response {p}, explicitly and specifically, and whether that part is correct "
            "and supported by reasoning or evidence."
        )
        anchors = {
            0: f"The response does not {first.removesuffix('es') if first.endswith('ies') else first[:-1]}"
            f"{' ' + ' '.join(p.split()[1:]) if len(p.split()) > 1 else ''}.".replace("  ", " "),
            5: "It does so only vaguely, partly or without support.",
            10: "It does so explicitly, specifically and with sound support.",
        }
    else:
        art = "an" if p[:1].lower() in "aeiou" else "a"
        desc = (
            f"Checks whether the response contains {art} {p} that is stated explicitly, is specific enough to "
            "act on or test, and is supported by reasoning or evidence."
        )
        anchors = {
            0: f"No {p} in the response.",
            5: f"{art.capitalize()} {p} is present but vague, partial or unsupported.",
            10: f"{art.capitalize()} {p} is explicit, specific and well supported.",
        }
    return Criterion(name=p, description=desc + weight_note, anchors=anchors)


def generic_rubric(description: str, name: str | None = None) -> Rubric:
    """A 4-criterion rubric from ``description``: one criterion per key phrase
    (:func:`key_phrases`), filled up with correctness, completeness,
    justification and clarity; anchors at 0/5/10; equal weights."""
    from ..metric_pool.rubrics import slug

    phrases = key_phrases(description)
    crits: list[Criterion] = [drafted_criterion(p) for p in phrases]
    for n, d, a0, a5, a10 in _GENERIC:
        if len(crits) >= 4:
            break
        if n not in {c.name for c in crits}:
            crits.append(Criterion(name=n, description=d, anchors={0: a0, 5: a5, 10: a10}))
    metric = slug(name or (phrases[0] if phrases else "custom_metric"))
    return Rubric(
        name=metric,
        tasks=["*"],
        description=(description or metric).strip(),
        criteria=crits,
        source="user (sgieval metric define, generic rubric from the description)",
    )


def best_library_match(description: str) -> tuple[Rubric | None, float]:
    """(library rubric, cosine) best matching ``description`` or one of its
    key phrases (MiniLM, :func:`sgieval.metric_pool.rubrics.match_texts`);
    (None, best cosine) when below :data:`~sgieval.metric_pool.rubrics.MATCH_THRESHOLD`."""
    from ..metric_pool.rubrics import MATCH_THRESHOLD, find_rubric, list_rubrics, match_texts, semantic_scores

    pool = list_rubrics()
    exact = find_rubric(description, threshold=2.0, rubrics=pool)  # exact-name path only
    if exact is not None:
        return exact, 1.0
    queries = [description] + key_phrases(description)
    best: tuple[Rubric | None, float] = (None, -1.0)
    for r in pool:
        texts = match_texts(r)
        sim = max(max(semantic_scores(q, texts)) for q in queries)
        if sim > best[1]:
            best = (r, sim)
    return (best[0], best[1]) if best[1] >= MATCH_THRESHOLD else (None, best[1])


PROPOSE_SYSTEM = """You help a researcher define an evaluation metric as a rubric for sgieval.
Draft a rubric from their description: a snake_case name, a one-sentence description, 4-6 criteria (short name,
one-sentence description, anchors for scores 0, 5 and 10), weights (1 unless the user asks otherwise),
tasks ["*"], and a `source` ("user" plus any document or paper the description names).
Aggregation is fixed: weighted mean of the 0-10 criterion scores x 10 (0-100)."""

REVISE_SYSTEM = """You revise an sgieval rubric as the researcher asks. Change only what they ask for; keep every other
criterion, anchor and weight as it is. Reply with the whole revised rubric."""


async def propose_rubric(
    description: str, *, agent: NamedModel | None = None, name: str | None = None
) -> tuple[Rubric, str]:
    """First rubric for a metric described in plain language -> (rubric, message to the user).

    Offline (``agent`` None): the library rubric best matching the
    description by meaning (:func:`best_library_match`), renamed to ``name``
    when given; else :func:`generic_rubric`.  With ``agent``: structured
    output :class:`Rubric`; a failed reply falls back to the offline path
    and the message says so.  Raises InputError on an empty description."""
    from ..metric_pool.rubrics import slug

    if not (description or "").strip():
        raise InputError(
            "the metric description is empty",
            what="metric description",
            fix="describe what the metric should measure, e.g. 'how rigorous a research idea is'",
        )
    fallback = ""
    if agent is not None:
        msg = f"Description: {description}" + (f"\nMetric name: {slug(name)}" if name else "")
        reply = await ask_structured(agent, [SystemMessage(content=PROPOSE_SYSTEM), HumanMessage(content=msg)], Rubric)
        if reply.parsed is not None:
            r = _tidy_rubric(reply.parsed, taken=set(), default_source="user (sgieval metric define)", cite=[])
            if name:
                r = r.model_copy(update={"name": slug(name)})
            return r, f"{agent.name} drafted the rubric {r.name} with {len(r.criteria)} criteria."
        fallback = f"{agent.name} gave no usable rubric ({reply.error}); "
    hit, sim = best_library_match(description)
    if hit is not None:
        r = hit.model_copy(update={"name": slug(name) if name else hit.name}, deep=True)
        return r, (
            f"{fallback}Starting from the library rubric {hit.name} (match {sim:.2f}) with {len(r.criteria)} criteria."
        )
    r = generic_rubric(description, name)
    return r, (
        f"{fallback}No library rubric matches (best {sim:.2f}); a generic rubric with "
        f"{len(r.criteria)} criteria was built from your description."
    )


DONE_RE = re.compile(
    r"^\s*(?:done|save(?: it)?|finish(?:ed)?|that'?s (?:it|all)|looks good|ok(?:ay)?|lgtm|yes|y)\s*[.!]*\s*$", re.I
)
CANCEL_RE = re.compile(r"^\s*(?:cancel|quit|exit|abort|q)\s*[.!]*\s*$", re.I)

_FACTORS = {"double": 2.0, "twice": 2.0, "triple": 3.0, "thrice": 3.0, "half": 0.5, "halve": 0.5}
_NUM = r"(\d+(?:\.\d+)?)"
_REVISIONS: list[tuple[str, re.Pattern[str]]] = [
    (
        "add",
        re.compile(
            r"^add\s+(?:an?\s+)?(?:new\s+)?(?:criterion|criteria)\s+"
            r"(?:(?:about|for|on|covering|named|called)\s+)?"
            r"(?:[\"'\u201c\u2018](?P<q>[^\"'\u201d\u2019]+)[\"'\u201d\u2019]|(?P<c>[^:\"'(]+?))"
            rf"(?:\s*,?\s*\(?\s*(?:with\s+)?(?:an?\s+)?weight(?:ed)?\s*(?:of|=|:|at)?\s*(?P<w>{_NUM})\s*\)?)?"
            r"(?:\s*[:\-=]\s*(?P<d>.+))?$",
            re.I,
        ),
    ),
    (
        "factor",
        re.compile(
            rf"^(?:weigh|weight|count|make)\s+(?:the\s+)?(?P<c>.+?)\s+(?:count\s+)?(?:as\s+)?"
            rf"(?P<f>double|twice|triple|thrice|half|x\s*{_NUM}|{_NUM}\s*x|{_NUM}\s+times)(?:\s+as much)?$",
            re.I,
        ),
    ),
    (
        "factor",
        re.compile(
            r"^(?P<f>double|triple|halve)\s+(?:the\s+)?(?:weight\s+(?:of|for)\s+)?(?:the\s+)?(?P<c>.+?)"
            r"(?:'s)?(?:\s+weight)?$",
            re.I,
        ),
    ),
    (
        "factor",
        re.compile(r"^(?P<c>.+?)\s+(?:counts?|weighs?|weighted)\s+(?P<f>double|twice|triple|thrice|half)$", re.I),
    ),
    (
        "set",
        re.compile(
            rf"^(?:set\s+|give\s+)?(?:the\s+)?weight\s+(?:of|for)\s+(?:the\s+)?(?P<c>.+?)\s*(?:to|=|:|at)\s*(?P<w>{_NUM})$",
            re.I,
        ),
    ),
    (
        "set",
        re.compile(
            rf"^(?:set\s+|give\s+)?(?:the\s+)?(?P<c>.+?)(?:'s)?\s+(?:a\s+)?weight\s*(?:to|=|:|of|at)?\s*(?P<w>{_NUM})$",
            re.I,
        ),
    ),
    ("drop", re.compile(r"^(?:drop|remove|delete)\s+(?:the\s+)?(?:criterion\s+)?(?P<c>.+?)(?:\s+criterion)?$", re.I)),
    (
        "rename",
        re.compile(r"^(?:rename|call|name)\s+(?:it|the metric|the rubric|this)?\s*(?:to|as)?\s+(?P<n>[\w\- ]+)$", re.I),
    ),
]


def match_criterion(rubric: Rubric, phrase: str) -> str | None:
    """The criterion of ``rubric`` that ``phrase`` names: exact (case- and
    punctuation-insensitive), then containment either way, then every word
    of the phrase sharing a 6-letter stem with a word of the name, then the best
    MiniLM cosine >= MATCH_THRESHOLD (0.5).  None when nothing matches."""
    from ..metric_pool.rubrics import MATCH_THRESHOLD, semantic_scores

    def norm(x: str) -> str:
        return re.sub(r"[^a-z0-9]+", " ", x.lower()).strip()

    q = re.sub(r"^(?:the\s+)?(?:criterion\s+)?", "", norm(phrase))
    names = [c.name for c in rubric.criteria]
    for n in names:
        if norm(n) == q:
            return n
    for n in names:
        if q and (q in norm(n) or norm(n) in q):
            return n
    if not q:
        return None
    words = q.split()
    for n in names:  # shared stems: "methodology" -> "methodological soundness"
        nw = norm(n).split()
        if all(any(len(w) >= 5 and len(x) >= 5 and w[:6] == x[:6] for x in nw) for w in words):
            return n
    sims = semantic_scores(phrase, names)
    i = max(range(len(names)), key=lambda k: sims[k])
    return names[i] if sims[i] >= MATCH_THRESHOLD else None


REVISION_HELP = (
    "Try: 'weigh X double', 'X weight 2', 'drop X', 'add criterion X: description', "
    "'add a criterion \"X\" with weight 2', 'rename to NAME' (several at once: join them with 'and' "
    "or ';'), or 'done' to save."
)
PHRASINGS = (
    "Changes you can ask for (offline): 'weigh X double' | 'X weight 2' | 'set the weight of X to 0.5' | "
    "'drop X' | 'add criterion X: what it checks' | 'add a criterion \"X\" with weight 2' | 'rename to NAME'; "
    "join several with 'and' or ';'. 'done' saves, 'cancel' quits."
)
"""The offline revision forms, shown before the first change is asked for (``sgieval metric define``)."""

_SPLIT = re.compile(
    r"[;\n]+|\.\s+|,?\s+\band\s+(?=(?:then\s+|also\s+)?(?:add|remove|drop|delete|weigh|weight|set|"
    r"give|rename|call|name|double|triple|halve|make|count)\b)",
    re.I,
)
_NOT_A_NAME = re.compile(r"\b(?:and|weight|weigh|remove|drop|delete|rename|add|set|double|with)\b", re.I)


def split_revisions(request: str) -> list[str]:
    """The single changes in ``request``: split at ";", new lines, sentence
    ends and at "and" before another change verb (outside quotes), so
    'add a criterion "testable hypothesis" with weight 2 and remove
    completeness' -> ['add a criterion "testable hypothesis" with weight 2',
    'remove completeness']."""
    text = request or ""
    quoted: list[str] = []

    def hide(m: re.Match[str]) -> str:
        quoted.append(m.group(0))
        return f"\x00{len(quoted) - 1}\x00"

    masked = re.sub(r"[\"\u201c][^\"\u201d]*[\"\u201d]", hide, text)
    parts = [re.sub(r"\x00(\d+)\x00", lambda m: quoted[int(m.group(1))], p) for p in _SPLIT.split(masked)]
    return [p.strip(" .!") for p in parts if p and p.strip(" .!")]


def revise_offline(rubric: Rubric, request: str) -> tuple[Rubric, str]:
    """Apply the change(s) asked in ``request`` (several separated by ";" or
    new lines) -> (revised rubric, message).  Understood: "weigh X double"
    (x2; also triple/half, "x 1.5", "3 times"), "double X", "X counts
    double", "X weight 2" / "set the weight of X to 2", "drop X", "add
    criterion X: description", "rename to NAME".  The criterion is matched
    with :func:`match_criterion`.  An instruction that is not understood
    leaves the rubric unchanged and the message says so and lists the forms."""
    from ..metric_pool.rubrics import slug

    r = rubric.model_copy(deep=True)
    done: list[str] = []
    last: str | None = None  # the criterion "it" refers to: the last one added or changed
    for part in split_revisions(request):
        part = re.sub(r"^(?:please|and|also|then)\s+", "", part, flags=re.I).strip()
        kind, m = next(((k, pat.match(part)) for k, pat in _REVISIONS if pat.match(part)), (None, None))
        if m is None:
            done.append(f"I did not understand '{part}'. {REVISION_HELP}")
            continue
        if kind == "rename":
            new = slug(m.group("n"))
            done.append(f"renamed {r.name} -> {new}")
            r = r.model_copy(update={"name": new})
            continue
        if kind == "add":
            cname = re.sub(r"\s+", " ", (m.group("q") or m.group("c") or "").strip().strip("'\"").lower())
            if not m.group("q") and (len(cname.split()) > 6 or _NOT_A_NAME.search(cname)):
                # never turn a whole instruction into a criterion name
                done.append(
                    f"I did not understand '{part}' (which words name the criterion?); put the name in "
                    f"quotes: add a criterion \"name\" with weight 2. {REVISION_HELP}"
                )
                continue
            if match_criterion(r, cname) and re.sub(r"\W+", " ", cname) == re.sub(
                r"\W+", " ", match_criterion(r, cname) or ""
            ):
                done.append(f"criterion '{cname}' already exists")
                continue
            crit = drafted_criterion(cname)
            if m.group("d"):
                crit = crit.model_copy(update={"description": m.group("d").strip()})
            w = float(m.group("w")) if m.group("w") else 1.0
            try:
                r = Rubric.model_validate(
                    {
                        **r.model_dump(),
                        "criteria": [*r.model_dump()["criteria"], crit.model_dump()],
                        "weights": {**r.weights, cname: w},
                    }
                )
            except ValueError as e:
                done.append(f"criterion '{cname}' not added: {str(e).splitlines()[0]}")
                continue
            done.append(f"added criterion '{cname}' (weight {w:g})")
            last = cname
            continue
        said = m.group("c").strip().lower()
        found = (
            last
            if said in ("it", "this", "that", "this criterion", "that criterion", "the new one")
            else match_criterion(r, m.group("c"))
        )
        if found is None:
            done.append(f"no criterion matches '{m.group('c')}' (criteria: {', '.join(c.name for c in r.criteria)})")
            continue
        cname = found
        if kind == "drop":
            if len(r.criteria) == 1:
                done.append(f"cannot drop '{cname}': it is the only criterion")
                continue
            r = Rubric.model_validate(
                {
                    **r.model_dump(),
                    "criteria": [c.model_dump() for c in r.criteria if c.name != cname],
                    "weights": {k: v for k, v in r.weights.items() if k != cname},
                }
            )
            done.append(f"dropped '{cname}'")
            continue
        old = r.weights[cname]
        if kind == "factor":
            f = m.group("f").lower()
            num = re.search(_NUM, f)
            factor = _FACTORS.get(f, float(num.group(1)) if num else 1.0)
            new_w = old * factor
        else:
            new_w = float(m.group("w"))
        try:
            r = Rubric.model_validate({**r.model_dump(), "weights": {**r.weights, cname: new_w}})
        except ValueError as e:
            done.append(f"weight of '{cname}' not changed: {str(e).splitlines()[0]}")
            continue
        done.append(f"weight of '{cname}' {old:g} -> {new_w:g}")
        last = cname
    text = "; ".join(d.rstrip(".") if i < len(done) - 1 else d for i, d in enumerate(done))
    return r, text if text.endswith(".") else text + "."


async def revise_rubric(rubric: Rubric, request: str, *, agent: NamedModel | None = None) -> tuple[Rubric, str]:
    """Revise ``rubric`` as ``request`` asks -> (rubric, message).  Offline:
    :func:`revise_offline`.  With ``agent``: the current rubric (YAML) and the
    request go to the model, which returns the whole revised :class:`Rubric`
    (structured output); a failed reply falls back to the offline path."""
    if agent is None:
        return revise_offline(rubric, request)
    msg = f"Current rubric (YAML):\n{rubric.to_yaml()}\nRequested change: {request}"
    reply = await ask_structured(agent, [SystemMessage(content=REVISE_SYSTEM), HumanMessage(content=msg)], Rubric)
    if reply.parsed is None:
        r, m = revise_offline(rubric, request)
        return r, f"{agent.name} gave no usable revision ({reply.error}); offline: {m}"
    r = _tidy_rubric(reply.parsed, taken=set(), default_source=rubric.source or "user (sgieval metric define)", cite=[])
    return r, f"{agent.name} revised the rubric ({len(r.criteria)} criteria)."


def save_defined_rubric(
    rubric: Rubric, *, name: str | None = None, folder: str | Path | None = None
) -> tuple[Path, str]:
    """Save the rubric ``sgieval metric define`` agreed on -> (path of ``<name>.yaml``, note for the user).

    The YAML goes to ``folder`` (default: the user rubric folder, $SGIEVAL_RUBRIC_DIR).  A rubric that edits a
    starter rubric (same name, other content) is saved as ``<name>_custom`` when the user gave no ``name``
    (under the starter's name it would shadow the starter in every later run); with ``name`` it replaces the
    starter, and the note says so.  The note is "" otherwise."""
    from ..metric_pool.rubrics import STARTER_DIR, save_rubric, slug

    note = ""
    starter = STARTER_DIR / f"{slug(rubric.name)}.yaml"
    if starter.is_file() and Rubric.from_yaml(starter) != rubric:
        if name is None:
            new_name = f"{rubric.name}_custom"
            note = f" (as {new_name}: {rubric.name} is a starter rubric; --name chooses the name)"
            rubric = rubric.model_copy(update={"name": new_name})
        else:
            note = f" (it replaces the starter rubric {rubric.name} in every later run; delete the file to undo)"
    return save_rubric(rubric, user=True, folder=folder), note
