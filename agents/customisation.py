"""Metric customisation agent (SGI-Bench paper, arXiv 2512.16969, section 3, agent 2): request + items + metric pool
-> a :class:`MetricPlan` (predefined metrics always kept, custom rubrics, asked-for registered metrics, the ranking
metric); offline :func:`offline_metric_plan`, with an agent model :func:`run_customisation`."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import AliasChoices, BaseModel, Field, ValidationError

from ..core import Item, MetricSpec, ModelCallError, Rubric, SgievalError
from ..metric_pool import Metric, MetricEntry, RubricMetric, applicable, as_data, find_rubric, key_of, parse_json_object
from ..metric_pool import tool_loop
from ..benchmarks import registry as benchmark_registry
from ..models import NamedModel, StructuredReply, message_text
from .asking import ask_agent
from .rubric_authoring import draft_rubric, tidy_rubric
from .vocabulary import QUALITY_WORDS


def metric_for_quality(quality: str, specs: list[MetricSpec], items: list[Item] | None = None) -> str | None:
    """The spec measuring ``quality`` best for ``items`` (``Benchmark.prefer`` first), or None."""
    names = [s.name for s in specs]
    for b, _n in Counter(i.benchmark for i in items or []).most_common():
        defn = benchmark_registry.find(b)
        for name in defn.prefer.get(quality, ()) if defn is not None else ():
            if name in names:
                return name
    return next((s.name for s in specs if s.measures(quality)), None)


# (quality, metric) pairs where the metric is a stand-in, not a measure of the quality itself: the plan and the
# report's Answer say which metric was used instead, and why
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
    added: list[str] = Field(default_factory=list, validation_alias=AliasChoices("added", "pool"))
    """Registered metrics added to the predefined ones, by name (a stored plan's ``pool`` key reads as this)."""
    stand_in: str = ""
    """Why ``primary`` stands in for the asked quality (:data:`STAND_INS`), if it does."""
    metrics: list[tuple[str, str]] = Field(default_factory=list)
    """Every predefined and registered metric scored, by key ``(scope, name)``: scope an item benchmark or ``"*"``."""


def detect_qualities(request: str) -> list[str]:
    """Qualities named in ``request`` (vocabulary order)."""
    return [
        q for q, pats in QUALITY_WORDS.items() if any(re.search(rf"\b{p}\b", request or "", flags=re.I) for p in pats)
    ]


_ASKED_QUALITY = re.compile(r"\b(?:most|least)\s+([a-z][a-z-]{2,})(?:\s+([a-z][a-z-]*))?", re.I)
_NOT_QUALITIES = set(
    "of the models model likely important often recent common cases questions items answers tasks used popular "
    "frequently widely".split()
)


def unrecognised_qualities(request: str) -> list[str]:
    """Words asked as "most X"/"least X" that the quality vocabulary does not know ("most honest" -> ["honest"])."""
    asked = [(m.group(1).lower(), m.group(2) or "") for m in _ASKED_QUALITY.finditer(request or "")]
    return list(dict.fromkeys(w for w, nxt in asked if w not in _NOT_QUALITIES and not detect_qualities(f"{w} {nxt}")))


def registered_offers(
    items: list[Item], predefined: list[Metric], options: dict | None = None
) -> list[tuple[MetricEntry, Metric]]:
    """The registered metrics applying to ``items`` that are not ``predefined``: what the plan may add."""
    taken = {key_of(m) for m in predefined}
    return [(e, m) for e, m in applicable(items, options) if e.key not in taken]


def _add_asked(
    plan: MetricPlan, request: str, offers: list[tuple[MetricEntry, Metric]], options: dict | None, tools: Any
) -> MetricPlan:
    """``plan`` with each registered metric whose quality ``request`` names added; the first one ranks."""
    for e, _m in offers:
        asked = e.asked(request)
        if not asked or e.name in plan.added:
            continue
        where = e.where(options, tools)
        detail = f" ({where})" if where else f" ({e.unavailable})" if where is None and e.unavailable else ""
        first = not plan.added
        kept = [
            r for r in plan.reason.split("; ") if r and not r.startswith("ranking by the benchmark's primary metric")
        ]
        update = {
            "added": [*plan.added, e.name], "metrics": [*plan.metrics, e.key],
            "primary": e.name if first else plan.primary, "stand_in": "" if first else plan.stand_in,
            "qualities": list(dict.fromkeys([*plan.qualities, *asked])),
            "reason": "; ".join([f"'{asked[0]}' is measured by the registered metric {e.name}{detail}", *kept]),
        }  # fmt: skip
        plan = plan.model_copy(update=update)
    return plan


def offline_metric_plan(
    request: str, items: list[Item], metrics: list[Metric], offers: Sequence[tuple[MetricEntry, Metric]] = ()
) -> MetricPlan:
    """Deterministic plan: every predefined metric, ranking by the first asked quality's metric, else the primary."""
    specs = [s for m in metrics for s in m.all_specs]
    names = list(dict.fromkeys(s.name for s in specs))
    qualities = detect_qualities(request)
    primary = stand_in = ""
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
        rub = find_rubric(q)
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
        rub = find_rubric(w)
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
        # the primary metrics the items' benchmarks declare for their tasks
        found = [(benchmark_registry.find(b), task) for b, task in dict.fromkeys((i.benchmark, i.task) for i in items)]
        declared = {n for d, task in found if d is not None and (n := d.primary.get(task) or d.primary.get("*"))}
        prim = [s.name for s in specs if s.name in declared] or [s.name for s in specs if s.primary]
        primary = prim[0] if prim else (names[0] if names else "")
        reason.append(f"ranking by the benchmark's primary metric {primary}")
        if unmeasured:
            stand_in = (
                f"{', '.join(repr(w) for w in unmeasured)} {'is' if len(unmeasured) == 1 else 'are'} measured "
                f"by no metric or rubric here, so the ranking uses the benchmark's primary metric {primary} "
                "instead (define a rubric with `sgieval metric define`)"
            )
    keys = list(dict.fromkeys(key_of(m) for m in metrics))
    return MetricPlan(
        predefined=names, custom=custom, primary=primary, qualities=qualities, reason="; ".join(reason), notes=notes,
        stand_in=stand_in, metrics=keys,
    )  # fmt: skip


CUSTOM_SYSTEM = """You are the metric customisation agent of sgieval. The benchmark's predefined metrics are always applied.
Pick the metric that best answers the request as `primary` (a name from the list, or the name of a custom rubric you define).
Only when the request names a quality that no listed metric measures, define a custom rubric for it: 4-6 criteria,
each scored 0-10 with anchors for 0, 5 and 10, equal weights unless the request says otherwise (aggregation: weighted
mean of the criterion scores x 10, so 0-100). Put your citations in the rubric's `source`.
A criterion that can only be scored by checking a cited fact or reference lists `needs: ["web_search"]`, one that
needs a computation or code re-run lists `needs: ["run_python"]`; leave `needs` empty otherwise (the judge then scores
from the response alone, in one call).
Further registered metrics, when listed, are applied only if you name them in `added`; when the request asks about a
quality one of them measures, choose it (in `added` and as `primary`).
When the user names a document (given below as DOCUMENT data), take the rubric's criteria from it and cite it."""

PDF_RE = re.compile(r"""(?:(?<=\s)|^|(?<=["'(]))((?:~|\.{1,2}|/)?[^\s"'()]*\.pdf)\b""", re.I)
PDF_CHARS = 12_000  # characters of a named PDF shown to the agent

QUOTED_PDF_RE = re.compile(r"""["']([^"']+?\.pdf)["']""", re.I)


def named_pdfs(request: str) -> list[str]:
    """``.pdf`` paths named in ``request``, in order, once each (a path with spaces is quoted)."""
    text = request or ""
    quoted = [m.group(1) for m in QUOTED_PDF_RE.finditer(text)]
    rest = QUOTED_PDF_RE.sub(" ", text)
    return list(dict.fromkeys(quoted + [m.group(1).rstrip(".,;:") for m in PDF_RE.finditer(rest)]))


def read_named_pdfs(request: str, tools: Any = None) -> tuple[list[dict[str, Any]], list[str]]:
    """(documents read from the PDFs ``request`` names (20 pages, ``PDF_CHARS`` of text), notes on failures)."""
    docs: list[dict[str, Any]] = []
    notes: list[str] = []
    for raw in named_pdfs(request):
        path = str(Path(raw).expanduser())
        try:
            if tools is not None and "read_pdf" in getattr(tools, "names", []):
                doc, _ = tools.call("read_pdf", source=path, max_pages=20)
            else:
                from ..tools import read_pdf

                doc = read_pdf(path, max_pages=20)
        except SgievalError as e:
            notes.append(f"the PDF {raw} named in the request could not be read: {e.one_line()}")
            continue
        text = doc.text
        partial = doc.partial or len(text) > PDF_CHARS
        title = doc.title or Path(path).name
        docs.append(
            {"path": raw, "title": title, "pages": len(doc.pages), "partial": partial, "text": text[:PDF_CHARS]}
        )
    return docs, notes


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
    """(plan, Metric objects, trace): ``agent`` proposes the ranking metric and custom rubrics (grounded in
    named PDFs and up to ``agent_tool_budget`` tool calls) but never drops a predefined metric."""
    benchmarks = list(dict.fromkeys(i.benchmark for i in items))
    metrics = benchmark_registry.predefined_metrics(benchmarks, items, options)
    offers = registered_offers(items, metrics, options)
    base = _add_asked(offline_metric_plan(request, items, metrics, offers), request, offers, options, tools)
    metrics = [*metrics, *(m for e, m in offers if e.name in base.added)]
    trace: dict[str, Any] = {}
    docs, pdf_notes = read_named_pdfs(request, tools)
    base.notes.extend(pdf_notes)
    if docs:
        trace["documents"] = [{k: v for k, v in d.items() if k != "text"} for d in docs]
    if agent is None:
        if docs:
            read = ", ".join(d["path"] for d in docs)
            base.notes.append(
                f"read {read}, but drafting a rubric from a document "
                "needs an agent model (--agent-model); the rubric library was used instead"
            )
        return base, metrics, trace
    offered = [(e, m) for e, m in offers if e.name in base.added or e.where(options, tools) is not None]
    offered_keys = {e.key for e, _m in offered}
    kept = [m for m in metrics if key_of(m) not in offered_keys]  # an offered metric is listed as offered
    content = _agent_prompt(request, items, kept, offered, docs, options, tools)
    msgs: list[Any] = [SystemMessage(content=CUSTOM_SYSTEM), HumanMessage(content=content)]
    evidence: list[Any] = []
    reply = None
    if tools is not None:
        msgs, evidence, reply = await _with_tools(agent, msgs, tools, options, base)
        trace["tool_evidence"] = [e.model_dump(mode="json") for e in evidence]
    if reply is None:
        reply = await ask_agent(agent, msgs, MetricPlan)
    trace["agent_raw"] = reply.raw
    if reply.parsed is None:
        base.notes.append(f"agent {agent.name} gave no usable metric plan ({reply.error}); offline plan used")
        return base, metrics, trace
    p = reply.parsed
    cite = [f"{d['path']} ({d['title']})" for d in docs] + [f"consulted {u}" for u in _urls(evidence)]
    default_source = f"drafted by agent {agent.name} from the request: {request}"
    custom = [tidy_rubric(r, taken=set(base.predefined), default_source=default_source, cite=cite) for r in p.custom]
    custom = custom or list(base.custom)
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
    plan, added_metrics = _agent_plan(p, base, custom, notes, offers, offered, agent.name)
    return plan, [*kept, *(m for _e, m in added_metrics)], trace


def _agent_prompt(
    request: str, items: list[Item], metrics: list[Metric], offered: list[tuple[MetricEntry, Metric]],
    docs: list[dict[str, Any]], options: dict | None, tools: Any,
) -> str:  # fmt: skip
    """The customisation agent's message: tasks, metrics, offered metrics, documents, then the request (cacheable)."""

    def listed(m: Metric) -> str:
        return "\n".join(f"- {s.name} ({s.kind}, {s.scale_label}): {s.description}" for s in m.specs)

    content = f"Tasks: {sorted({i.task for i in items})}\nMetrics:\n" + "\n".join(listed(m) for m in metrics if m.specs)
    if offered:
        content += (
            "\nFurther registered metrics (applied only when you name them in `added`; one may be `primary`):"
            + "".join(
                f"\n{listed(m)}\n  {e.name}{' ' + w if (w := e.where(options, tools)) else ''}; choose it (added and "
                f"primary) for a request about {' or '.join(e.qualities) or 'what it measures'}."
                for e, m in offered
            )
        )
    for d in docs:
        content += (
            f"\n\nDocument {d['path']} ({d['title']}, {d['pages']} pages"
            f"{', excerpt' if d['partial'] else ''}):\n{as_data(d['text'], 'DOCUMENT')}"
        )
    return content + f"\n\nRequest: {request}"


async def _with_tools(
    agent: NamedModel, msgs: list[Any], tools: Any, options: dict | None, base: MetricPlan
) -> tuple[list[Any], list[Any], StructuredReply | None]:
    """Let the agent call ``web_search``/``read_pdf`` first: (messages to ask the plan with, evidence, direct plan)."""
    budget = int((options or {}).get("agent_tool_budget", 3))
    system = SystemMessage(
        content=CUSTOM_SYSTEM + f"\nYou may first call web_search or read_pdf (at most {budget} calls) to ground "
        "rubric criteria."
    )
    try:
        loop = await tool_loop(agent, [system, msgs[1]], tools, allowed=("web_search", "read_pdf"), budget=budget)
    except ModelCallError as e:
        base.notes.append(f"agent {agent.name} tool use failed ({e.message}); planning without tools")
        return msgs, [], None
    if loop.last is None:
        return msgs, loop.evidence, None
    if not loop.last.tool_calls:
        try:  # the agent answered with the plan right away: no second call
            direct = MetricPlan.model_validate(parse_json_object(message_text(loop.last)))
            reply = StructuredReply(model=agent.name, parsed=direct, raw=[message_text(loop.last)], attempts=1)
            return msgs, loop.evidence, reply
        except (ValueError, ValidationError):
            pass
    over = HumanMessage(content="Tool use is over. Reply now with the metric plan JSON object.")
    return [msgs[0], *loop.messages[1:], over], loop.evidence, None


def _agent_plan(
    p: MetricPlan, base: MetricPlan, custom: list[Rubric], notes: list[str],
    offers: list[tuple[MetricEntry, Metric]], offered: list[tuple[MetricEntry, Metric]], agent: str,
) -> tuple[MetricPlan, list[tuple[MetricEntry, Metric]]]:  # fmt: skip
    """The plan from the agent's reply ``p`` and offline ``base``, and the registered metrics it adds."""
    chosen = [(e, m) for e, m in offered if e.name in p.added or p.primary in {s.name for s in m.specs}]
    added = list(dict.fromkeys([*base.added, *(e.name for e, _m in chosen)]))
    for n in p.added:
        if n not in added:
            known = next((e for e, _m in offers if e.name == n), None)
            notes.append(
                f"agent {agent} chose the metric {n!r}, which is not offered here"
                + (f" ({known.unavailable})" if known is not None and known.unavailable else "")
            )
    added_metrics = [(e, m) for e, m in offers if e.name in added]
    names = {r.name for r in custom} | set(base.predefined) | {s.name for _e, m in added_metrics for s in m.specs}
    fallback = base.primary if base.primary in names else (custom[0].name if custom else base.primary)
    primary = p.primary if p.primary in names else fallback
    qualities = p.qualities or base.qualities
    if new := [e for e, _m in chosen if e.name not in base.added]:  # the qualities the metrics it adds measure
        qualities = list(dict.fromkeys([*qualities, *(q for e in new for q in e.qualities)]))
    offered_keys = {e.key for e, _m in offered}
    keys = [*(k for k in base.metrics if k not in offered_keys), *(e.key for e, _m in added_metrics)]
    plan = MetricPlan(
        predefined=base.predefined, custom=custom, primary=primary, qualities=qualities, reason=p.reason or base.reason,
        notes=notes, planner=agent, added=added, stand_in=base.stand_in if primary == base.primary else "",
        metrics=list(dict.fromkeys(keys)),
    )  # fmt: skip
    return plan, added_metrics


def _mentions(r: Rubric, quality: str) -> bool:
    q = quality.lower()
    return q in r.name.lower().replace("_", " ") or q in (r.description or "").lower()


def planned_metrics(plan: MetricPlan, items: list[Item], options: dict | None = None) -> list[Metric]:
    """The Metric objects of ``plan`` for ``items``: those its keys (else names) name, then its rubrics."""
    keys = {tuple(k) for k in plan.metrics}
    predefined = benchmark_registry.predefined_metrics(list(dict.fromkeys(i.benchmark for i in items)), items, options)
    out = [m for m in predefined if (key_of(m) in keys if keys else any(s.name in plan.predefined for s in m.specs))]
    offers = registered_offers(items, predefined, options)
    out += [m for e, m in offers if (e.key in keys if keys else e.name in plan.added)]
    return out + [RubricMetric(r) for r in plan.custom]


def plan_specs(plan: MetricPlan, metrics: list[Metric]) -> list[MetricSpec]:
    """Every MetricSpec of the plan, predefined first, then custom."""
    specs = {s.name: s for m in reversed(metrics) for s in reversed(m.all_specs)}
    return [specs[n] for n in dict.fromkeys(s.name for m in metrics for s in m.all_specs)] + list(plan.custom)
