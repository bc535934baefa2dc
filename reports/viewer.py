"""The HTML viewer of a run: ``runs/<id>/viewer/``, one folder that opens with no network: ``index.html`` (CSS and
JavaScript inlined), ``data.js`` (the index, ``window.SGV_DATA``), ``text.js`` (the long texts, ``window.SGV_TEXT``,
loaded after the first paint) and ``figures/`` (the report's PNG charts).  Model-written text is inserted as text,
never as HTML."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable

from ..core import Item, Response, Score
from ..core import read_bytes_in, replace_dir_in, write_bytes_in, write_text_in
from .ranking import not_applicable
from .render import TEMPLATES, js_assign, jsonable, render_html

PAGE_SIZE = 50  # rows per page of the item table


def record_flags(rec: Response | Score) -> list[str]:
    """Flags of a response or score beyond its status.

    Args:
        rec: a response or score.

    Returns:
        ``truncated`` (finish reason ``length``), ``empty``, ``censored`` / ``missing`` (a stored record stopped by an
        error or empty), ``injection_suspected``, and the names under ``metadata``/``details`` ``"flags"``; no
        duplicates.
    """
    if isinstance(rec, Response):
        extra, finish, evidence_flags = rec.metadata or {}, rec.finish_reason, []
    else:
        extra, finish, evidence_flags = rec.details or {}, None, rec.flags
    out: list[str] = []
    if (finish or extra.get("finish_reason")) == "length" or rec.status == "truncated":
        out.append("truncated")
    if rec.status == "empty":
        out.append("empty")
    # a stored record the report's Failures section lists (reports.answer)
    out += [stored for stored in ("censored", "missing") if extra.get(stored) is True]
    if extra.get("injection_suspected") or "injection_suspected" in evidence_flags:
        out.append("injection_suspected")
    out += [str(f) for f in extra.get("flags") or []]
    return list(dict.fromkeys(out))


def judge_panel(s: Score) -> dict[str, float]:
    """Each judge's own value of a judge-panel score (``details["per_judge"]``, a rubric's as its weighted mean x10 as
    ``core.Rubric.aggregate``, or ``details["levels"]``); {} without per-judge values."""
    d = s.details or {}
    out: dict[str, float] = {}
    pj = d.get("per_judge")
    if isinstance(pj, dict):
        weights = d.get("weights") or {}
        for j, v in pj.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[str(j)] = float(v)
            elif isinstance(v, dict):
                nums = {c: float(x) for c, x in v.items() if isinstance(x, (int, float)) and not isinstance(x, bool)}
                tw = sum(float(weights.get(c, 1.0)) for c in nums)
                if nums and tw > 0:
                    out[str(j)] = 10.0 * sum(float(weights.get(c, 1.0)) * x for c, x in nums.items()) / tw
    lv = d.get("levels")
    if not out and isinstance(lv, dict):
        out = {str(j): float(v) for j, v in lv.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return out


def _reasoning(r: Response) -> str:
    md = r.metadata or {}
    for v in (r.reasoning or md.get("reasoning"), md.get("reasoning_text"), md.get("thoughts")):
        if isinstance(v, str) and v.strip():
            return v
    recs = md.get("records")
    return "\n\n".join(  # SciAidanBench stored answers of thinking models
        f"[{x.get('answer_num', k + 1)}] {x['thoughts']}"
        for k, x in enumerate(recs if isinstance(recs, list) else [])
        if isinstance(x, dict) and isinstance(x.get("thoughts"), str) and x["thoughts"].strip()
    )


def build_viewer_data(
    items: Iterable[Item],
    responses: Iterable[Response],
    scores: Iterable[Score],
    *,
    report: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    specs: list[dict[str, Any]] | None = None,
    labelling: dict[str, Any] | None = None,
    prompts: dict[str, dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(index, texts) for ``data.js`` and ``text.js``.

    Args:
        items: the run's items.
        responses: its responses (a later record of one (item, model) replaces an earlier one).
        scores: its scores.
        report: the report's data (``report.json``; None when the run has no report).
        config: the run's config.
        specs: ``[{name, scale, hib, kind}]`` per metric.
        labelling: what the item pages' labelling form needs, ``{"metrics": [{name, kind, range: [low, high],
            description, criteria: [{name, description, anchors: {value: text}}], weights: {criterion: weight}}],
            "default": metric name, "sample": {metric: [[item_id, model], ...]}}`` (None: no labelling form).
        prompts: the run's judge prompts by hash (``RunStore.prompts()``: {hash: {hash, messages,
            response_format}}; None or {}: the judge replies show no prompt).

    Returns:
        index: ``run`` (config), ``report``, ``models`` (the ranking's order first), ``metrics``, ``items`` ([id,
        benchmark, task, discipline, direction, type, question] per item; question: :func:`question_text`),
        ``answer_links`` (:func:`answer_links`), ``rows`` ([item index, model index, response status, flags, [score
        indices]] per (item, target model); item index -1 for corpus-level scores), ``scores`` ([row index, metric
        index, value or None, status, flags, judge, {judge: value}] per score) and ``labelling``.  texts: ``items``
        ([prompt, reference, metadata]), ``rows`` ([text, answer, reasoning, error, {latency_s, tokens, cost,
        answers, metadata}]; ``answers``: one text per stored record of ``metadata["records"]``), ``scores``
        ([rationale, evidence, error, details]), aligned with the index, and ``prompts`` ({hash: {messages,
        response_format}} of the hashes the judge replies and ``metadata["judge_raw"]`` entries name).
    """
    items = list(items)
    model_idx: dict[str, int] = {}
    for row in ((report or {}).get("ranking") or {}).get("rows") or []:  # the ranking's order first
        model_idx.setdefault(row["model"], len(model_idx))
    rows, row_text, sc, sc_text, metrics = _records(items, responses, scores, specs, model_idx)
    models = list(model_idx)
    index = {
        "run": config or {},
        "report": report,
        "models": models,
        "metrics": metrics,
        "page_size": PAGE_SIZE,
        "items": [
            [it.id, it.benchmark, it.task, it.discipline, it.direction, it.type, question_text(it.prompt)]
            for it in items
        ],
        "rows": rows,
        "scores": sc,
        "labelling": labelling,
        "answer_links": answer_links(report, items, scores_by_item(sc, rows, models, metrics, items)),
    }
    named = {
        h
        for t in sc_text
        for e in t[1]
        if isinstance(e, dict) and e.get("kind") == "judge_reply"
        for h in [e.get("prompt_hash"), *(e.get("prompt_hashes") or [])]  # every attempt's prompt
        if h
    }
    for t in row_text:  # a generation protocol's judge replies (metadata["judge_raw"]), one per answer and attempt
        raw = ((t[4] or {}).get("metadata") or {}).get("judge_raw")
        named.update(e["prompt_hash"] for e in raw or [] if isinstance(e, dict) and e.get("prompt_hash"))
    kept = {
        h: {k: v for k, v in p.items() if k in ("messages", "response_format", "tools", "tool_choice")}
        for h, p in (prompts or {}).items()
        if h in named
    }
    texts = {"items": [[it.prompt, it.reference, it.metadata] for it in items], "rows": row_text}
    return jsonable(index), jsonable({**texts, "scores": sc_text, "prompts": kept})


def _response_extra(r: Response) -> dict[str, Any]:
    """The response's numbers and metadata for ``text.js``; a stored answer list's texts go to ``answers``."""
    extra: dict[str, Any] = {
        k: v for k, v in (("latency_s", r.latency_s), ("tokens", r.tokens), ("cost", r.cost)) if v is not None
    }
    md = dict(r.metadata or {})
    recs = md.get("records")
    if isinstance(recs, list):  # stored answers: one text per record for the item page, the rest without texts
        extra["answers"] = [str(x.get("answer") or "") if isinstance(x, dict) else "" for x in recs]
        md["records"] = [
            {k: v for k, v in x.items() if k not in ("answer", "thoughts")} if isinstance(x, dict) else x for x in recs
        ]
    if md:
        extra["metadata"] = md
    return extra


def _records(
    items: list[Item],
    responses: Iterable[Response],
    scores: Iterable[Score],
    specs: list[dict[str, Any]] | None,
    model_idx: dict[str, int],
) -> tuple[list[list[Any]], list[list[Any]], list[list[Any]], list[list[Any]], list[dict[str, Any]]]:
    """(rows, row texts, scores, score texts, metrics) of :func:`build_viewer_data`; ``model_idx`` gains every model."""
    item_idx = {it.id: n for n, it in enumerate(items)}
    recs: dict[tuple[str, ...], tuple[list[Any], list[Any]]] = {}  # (item id, model) or (item index,) -> (row, texts)
    for r in responses:  # a later record of the same (item, model) replaces the earlier one, as the run store reads it
        row = [item_idx.get(r.item_id, -1), model_idx.setdefault(r.model, len(model_idx)), r.status, record_flags(r)]
        recs[(r.item_id, r.model)] = ([*row, []], [r.text, r.answer, _reasoning(r), r.error, _response_extra(r)])
    metrics = [
        {"name": sp["name"], "scale": sp.get("scale", ""), "hib": sp.get("hib", True), "kind": sp.get("kind", "")}
        for sp in specs or []
    ]
    metric_idx = {m["name"]: n for n, m in enumerate(metrics)}
    sc: list[list[Any]] = []
    sc_text: list[list[Any]] = []
    for s in scores:
        key = (s.item_id, s.model)
        if key not in recs:
            new: list[Any] = [item_idx.get(s.item_id, -1), model_idx.setdefault(s.model, len(model_idx)), "", [], []]
            recs[key] = (new, ["", None, "", None, {}])
        if s.metric not in metric_idx:
            metric_idx[s.metric] = len(metrics)
            metrics.append({"name": s.metric, "scale": "", "hib": True, "kind": ""})
        recs[key][0][4].append(len(sc))
        status = "not_applicable" if not_applicable(s) else s.status
        sc.append([key, metric_idx[s.metric], s.value, status, record_flags(s), s.judge, judge_panel(s)])
        sc_text.append([s.rationale, [e.model_dump(mode="json") for e in s.evidence], s.error, s.details])
    seen = {row[0] for row, _ in recs.values()}  # items without any record still get a row: the table lists every item
    recs.update(
        {(str(n),): ([n, -1, "", [], []], ["", None, "", None, {}]) for n in range(len(items)) if n not in seen}
    )
    order = sorted(recs, key=lambda k: (recs[k][0][0] < 0, recs[k][0][0], recs[k][0][1]))
    position = {key: n for n, key in enumerate(order)}
    for s_ in sc:
        s_[0] = position[s_[0]]
    return [recs[k][0] for k in order], [recs[k][1] for k in order], sc, sc_text, metrics


QUESTION_CHARS = 160


def question_text(prompt: str) -> str:
    """``prompt`` on one line, cut to :data:`QUESTION_CHARS` characters with a final "…" when longer."""
    one = " ".join(str(prompt or "").split())
    return one if len(one) <= QUESTION_CHARS else one[: QUESTION_CHARS - 1].rstrip() + "…"


def scores_by_item(
    sc: list[list[Any]], rows: list[list[Any]], models: list[str], metrics: list[dict[str, Any]], items: list[Item]
) -> dict[str, dict[str, dict[str, Any]]]:
    """{metric: {model: {item id: (value or None, flags)}}} of the viewer index's per-item scores."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for s in sc:
        r = rows[s[0]]
        if r[0] < 0 or r[1] < 0:
            continue
        out.setdefault(metrics[s[1]]["name"], {}).setdefault(models[r[1]], {})[items[r[0]].id] = (
            s[2] if s[3] == "ok" else None,
            set(s[4]) | set(r[3]),
        )
    return out


FACET_FIELDS = ("discipline", "direction", "task", "type", "benchmark")
ITEM_FLAGS = ("censored", "missing", "truncated", "empty", "injection_suspected")


def _mentions(text: str, names: Iterable[str]) -> list[str]:
    """The ``names`` that occur in ``text`` as whole words (not inside a longer name), in order of first occurrence."""
    found: list[tuple[int, int, str]] = []  # (start, end, name): the first occurrence not inside a longer name's
    for name in sorted({n for n in names if n and n in text}, key=len, reverse=True):
        spans = re.finditer(r"(?<![\w:/.-])" + re.escape(name) + r"(?![\w:/-]|\.\w)", text)
        m = next((m for m in spans if not any(a < m.end() and m.start() < b for a, b, _ in found)), None)
        if m:
            found.append((m.start(), m.end(), name))
    return [n for _, _, n in sorted(found)]


def answer_links(
    report: dict[str, Any] | None, items: list[Item], values: dict[str, dict[str, dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """The items behind each sentence of the report's Answer (verdict, how sure, where it differs, caveats).

    A sentence names target models, a metric, a facet value (a discipline, direction, task, type or
    benchmark of the run's items), record flags (:data:`ITEM_FLAGS`) and item ids; its items are the run's
    items with that facet value (every item when it names none) that the metric scored for every model it
    names (any model when it names none), restricted to the items carrying a named flag.  The metric is
    the first one it names, else the ranking's metric.

    Args:
        report: ``report.json`` data (None: no Answer, no links).
        items: the run's items.
        values: :func:`scores_by_item` of the index.

    Returns:
        ``{sentence: {"models": [names, in the sentence's order], "metric": name, "facet": field or None,
        "value": facet value or None, "flags": [flags], "ids": [item ids the sentence names], "items":
        [item ids behind it, in the run's order]}}`` for each sentence with at least one item behind it.
    """
    ans = (report or {}).get("answer") or {}
    sentences = [ans.get("verdict") or "", *(ans.get("how_sure") or []), *(ans.get("where") or [])]
    sentences += list(ans.get("caveats") or [])
    primary = ((report or {}).get("ranking") or {}).get("metric")
    all_models = sorted({m for per in values.values() for m in per})
    ids = [it.id for it in items]
    facets = {f: vals for f in FACET_FIELDS if len(vals := {str(getattr(it, f)) for it in items if getattr(it, f)}) > 1}
    out: dict[str, dict[str, Any]] = {}
    for text in sentences:
        if not text or text in out:
            continue
        named_ids = _mentions(text, ids)
        models = _mentions(text, all_models)
        metric = next(iter(_mentions(text, values)), primary)
        facet, value = next(((f, got[0]) for f, vals in facets.items() if (got := _mentions(text, vals))), (None, None))
        flags = [f for f in ITEM_FLAGS if re.search(rf"\b{f}\b", text)]
        per = values.get(metric or "", {})
        want = models or list(per)
        behind = []
        for it in items:
            have = [g for g in (per.get(m, {}).get(it.id) for m in want) if g is not None]
            if (facet and str(getattr(it, facet)) != value) or not have or (models and len(have) < len(want)):
                continue
            if not flags or any(set(flags) & g[1] for g in have):
                behind.append(it.id)
        if behind or named_ids:
            out[text] = {
                "models": models,
                "metric": metric,
                "facet": facet,
                "value": value,
                "flags": flags,
                "ids": named_ids,
                "items": behind,
            }
    return out


def write_viewer(
    run_dir: str | Path,
    items: Iterable[Item],
    responses: Iterable[Response],
    scores: Iterable[Score],
    *,
    dest: str | Path | None = None,
    **fields: Any,
) -> Path:
    """Write ``run_dir/viewer/`` (or ``dest``), replacing an existing one; nothing written through a link.

    Args:
        run_dir: the run folder.
        items: the run's items.
        responses: its responses.
        scores: its scores.
        dest: the viewer folder to write instead of ``run_dir/viewer`` (the run folder is then only read).
        fields: :func:`build_viewer_data`'s keyword arguments (``report``, ``config``, ``specs``, ``labelling``,
            ``prompts``).

    Returns:
        The path of ``index.html``.

    Raises:
        InputError: a link on the way.
    """
    run_dir = Path(run_dir)
    out = run_dir / "viewer" if dest is None else Path(dest)
    root = run_dir if dest is None else out.parent  # no link followed below it
    index, texts = build_viewer_data(items, responses, scores, **fields)
    replace_dir_in(root, out)  # links in the old viewer folder are removed, never followed
    figures = _report_figures(run_dir)
    for name, data in figures.items():
        write_bytes_in(root, out / "figures" / name, data)
    index["figures"] = sorted(figures)
    write_text_in(root, out / "data.js", js_assign("SGV_DATA", index))
    write_text_in(root, out / "text.js", js_assign("SGV_TEXT", texts))
    run = index["run"]
    html = render_html(
        "viewer.html.j2",
        trim=False,
        title=f"sgieval: {run.get('request') or run.get('run_id') or run_dir.name}",
        css=(TEMPLATES / "viewer.css").read_text(encoding="utf-8"),
        js=(TEMPLATES / "viewer.js").read_text(encoding="utf-8"),
    )
    write_text_in(root, out / "index.html", html)
    return out / "index.html"


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_FIGURE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,150}\.png")


def _report_figures(run_dir: Path) -> dict[str, bytes]:
    """The PNG files of ``run_dir/figures/`` by name, read without following a link (InputError for one)."""
    folder = run_dir / "figures"
    try:
        names = sorted(e.name for e in os.scandir(folder) if _FIGURE_NAME.fullmatch(e.name))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    files = {name: read_bytes_in(run_dir, folder / name, single_link=True) for name in names}
    return {name: data for name, data in files.items() if data.startswith(PNG_SIGNATURE)}
