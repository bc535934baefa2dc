"""The HTML viewer of a run: ``runs/<id>/viewer/``.

One folder that opens with no network (no CDN) and can be shared as is:

- ``index.html``: the page shell, its CSS and JavaScript inlined (Jinja2 template
  ``templates/viewer.html.j2`` with ``viewer.css`` / ``viewer.js``; plain JS, no
  framework);
- ``data.js``: the index (``window.SGV_DATA``): run header, the report's answer,
  ranking (with its 95% CIs) and tables, and per (item, target model) row the
  facets, statuses, flags and score values -- what the overview, the item table,
  its facets and pager need;
- ``text.js``: the long texts (``window.SGV_TEXT``): prompts, references, answers,
  reasoning, rationales, evidence, and the judge prompts by hash (``prompts.jsonl``).  It loads after the first paint, so a
  10,000-item run paints its overview and first table page from the index alone;
  search over prompts and answers and the item view wait for it;
- ``figures/``: copies of the report's PNG charts (matplotlib).

Everything model-written is inserted as text (``textContent``), never as HTML.
The data files are JavaScript assignments (not JSON fetched at run time) so the
viewer works from ``file://`` where browsers refuse ``fetch``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Protocol

from jinja2 import Environment, FileSystemLoader, select_autoescape

from ..core import Item, Response, Score
from ..core import read_bytes_in, replace_dir_in, write_bytes_in, write_text_in
from .ranking import not_applicable
from .render import jsonable

TEMPLATES = Path(__file__).parent / "templates"
PAGE_SIZE = 50
"""Rows per page of the item table."""

NOT_APPLICABLE = "not_applicable"
"""Viewer status of a score that is not applicable rather than failed (the
report's rule, :func:`.build.not_applicable`)."""


def score_status(s: Score) -> str:
    """The status the viewer shows for ``s``: its ``status``, or
    :data:`NOT_APPLICABLE` for a not-applicable ``not_run`` score."""
    if not_applicable(s):
        return NOT_APPLICABLE
    return s.status


def record_flags(rec: Response | Score) -> list[str]:
    """Flags of a response or score beyond its status: ``truncated`` (finish
    reason ``length``), ``empty``, ``censored`` / ``missing`` (a stored record
    stopped by an error or empty: ``details["censored"|"missing"]``, as in the
    report's Failures section), ``injection_suspected``, and any names listed
    under ``metadata``/``details`` ``"flags"``.  Order kept, no duplicates."""
    data = rec.model_dump()
    extra = data.get("metadata") or data.get("details") or {}
    out: list[str] = []
    finish = data.get("finish_reason") or extra.get("finish_reason")
    if finish == "length" or data.get("status") == "truncated":
        out.append("truncated")
    if data.get("status") == "empty":
        out.append("empty")
    for stored in ("censored", "missing"):  # a stored record the report's Failures section lists (reports.answer)
        if extra.get(stored) is True:
            out.append(stored)
    if (
        extra.get("injection_suspected")
        or data.get("injection_suspected")
        or any(
            isinstance(e, dict) and (e.get("injection_suspected") or "injection_suspected" in (e.get("flags") or []))
            for e in data.get("evidence") or []
        )
    ):
        out.append("injection_suspected")
    for f in [*(data.get("flags") or []), *(extra.get("flags") or [])]:
        out.append(str(f))
    return list(dict.fromkeys(out))


def judge_panel(s: Score) -> dict[str, float]:
    """Each judge's own value of a judge-panel score ({judge: value}; empty
    when the score has no per-judge values).

    Read from ``details["per_judge"]`` ({judge: number} or, for a rubric,
    {judge: {criterion: 0-10}} -> that judge's weighted mean x10 with
    ``details["weights"]``, the rubric aggregation of ``core.Rubric.aggregate``)
    or ``details["levels"]`` ({judge: level}, SFBench explanation judges)."""
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
    data = r.model_dump()
    md = data.get("metadata") or {}
    for key in ("reasoning", "reasoning_text", "thoughts"):
        v = data.get(key) or md.get(key)
        if isinstance(v, str) and v.strip():
            return v
    recs = md.get("records")
    if isinstance(recs, list):  # SciAidanBench stored answers of thinking models
        parts = [
            f"[{x.get('answer_num', k + 1)}] {x['thoughts']}"
            for k, x in enumerate(recs)
            if isinstance(x, dict) and isinstance(x.get("thoughts"), str) and x["thoughts"].strip()
        ]
        return "\n\n".join(parts)
    return ""


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

    ``report``: the report's data (``report.json``: narrative, ranking rows
    with CIs and numeric ``values``, tables, failures, limitations; None when
    the run has no report); ``specs``: [{name, scale, hib, kind}] per metric;
    ``labelling``: what the item pages' labelling form needs, ``{"metrics":
    [{name, kind, range: [low, high], description, criteria: [{name,
    description, anchors: {value: text}}], weights: {criterion: weight}}],
    "default": metric name, "sample": {metric: [[item_id, model], ...]}}``
    (the sample: the seeded random units to label, in order); ``prompts``:
    the run's judge prompts by hash (``RunStore.prompts()``: {hash: {hash,
    messages, response_format}}; None or {} for a run written before prompts
    were kept: its judge replies then show no prompt).

    index: ``run`` (config), ``report``, ``models`` (the ranking's order
    first), ``metrics`` ([{name, scale, hib, kind}]),
    ``items`` ([id, benchmark, task, discipline, direction, type, question]
    per item; question: the prompt cut to :data:`QUESTION_CHARS` characters,
    with "…" when cut), ``answer_links`` (:func:`answer_links`),
    ``rows`` ([item index, model index, response status, flags, [score indices]]
    per (item, target model); item index -1 for corpus-level scores) and
    ``scores`` ([row index, metric index, value or None, status, flags, judge,
    {judge: value}] per score), ``labelling`` (``labelling`` as given, or None: the item pages then have no
    labelling form).  texts: ``items`` ([prompt, reference,
    metadata]), ``rows`` ([text, answer, reasoning, error, {latency_s, tokens,
    cost, answers, ...}]; ``answers``: the texts of a stored answer list, one per
    record, when the response has ``metadata["records"]``), ``scores``
    ([rationale, evidence, error, details]), aligned with the index, and
    ``prompts`` ({hash: {messages, response_format}} of the hashes the scores'
    judge replies and the responses' ``metadata["judge_raw"]`` entries name).
    """
    items = list(items)
    item_idx = {it.id: n for n, it in enumerate(items)}
    models: list[str] = []
    model_idx: dict[str, int] = {}

    def mi(name: str) -> int:
        if name not in model_idx:
            model_idx[name] = len(models)
            models.append(name)
        return model_idx[name]

    for row in ((report or {}).get("ranking") or {}).get("rows") or []:  # the ranking's order first
        mi(row["model"])
    rows: list[list[Any]] = []
    row_text: list[list[Any]] = []
    row_of: dict[tuple[str, str], int] = {}
    for r in responses:
        key = (r.item_id, r.model)
        n = row_of.get(key)
        extra: dict[str, Any] = {
            k: v for k, v in (("latency_s", r.latency_s), ("tokens", r.tokens), ("cost", r.cost)) if v is not None
        }
        md = dict(r.metadata or {})
        if isinstance(md.get("records"), list):  # stored answers: their scores, not the texts again (in ``text``)
            extra["answers"] = [
                str(x.get("answer") or "") if isinstance(x, dict) else "" for x in md["records"]
            ]  # one text per record, for the item page's answer list
            md["records"] = [
                {k: v for k, v in x.items() if k not in ("answer", "thoughts")} if isinstance(x, dict) else x
                for x in md["records"]
            ]
        if md:
            extra["metadata"] = md
        row = [item_idx.get(r.item_id, -1), mi(r.model), r.status, record_flags(r), []]
        text = [r.text, r.answer, _reasoning(r), r.error, extra]
        if n is None:
            row_of[key] = len(rows)
            rows.append(row)
            row_text.append(text)
        else:  # a later record of the same (item, model) replaces the earlier one, as the run store reads it
            row[4] = rows[n][4]
            rows[n], row_text[n] = row, text
    metrics: list[dict[str, Any]] = []
    metric_idx: dict[str, int] = {}
    for sp in specs or []:
        metric_idx[sp["name"]] = len(metrics)
        metrics.append(
            {"name": sp["name"], "scale": sp.get("scale", ""), "hib": sp.get("hib", True), "kind": sp.get("kind", "")}
        )
    sc: list[list[Any]] = []
    sc_text: list[list[Any]] = []
    for s in scores:
        key = (s.item_id, s.model)
        if key not in row_of:
            row_of[key] = len(rows)
            rows.append([item_idx.get(s.item_id, -1), mi(s.model), "", [], []])
            row_text.append(["", None, "", None, {}])
        if s.metric not in metric_idx:
            metric_idx[s.metric] = len(metrics)
            metrics.append({"name": s.metric, "scale": "", "hib": True, "kind": ""})
        ri = row_of[key]
        rows[ri][4].append(len(sc))
        sc.append([ri, metric_idx[s.metric], s.value, score_status(s), record_flags(s), s.judge, judge_panel(s)])
        sc_text.append([s.rationale, [e.model_dump(mode="json") for e in s.evidence], s.error, s.details])
    # items without any record still get a row, so the table lists every selected item
    seen = {row[0] for row in rows}
    for n, _it in enumerate(items):
        if n not in seen:
            rows.append([n, -1, "", [], []])
            row_text.append(["", None, "", None, {}])
    order = sorted(range(len(rows)), key=lambda k: (rows[k][0] < 0, rows[k][0], rows[k][1]))
    remap = {old: new for new, old in enumerate(order)}
    rows = [rows[k] for k in order]
    row_text = [row_text[k] for k in order]
    for s_ in sc:
        s_[0] = remap[s_[0]]
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
    texts = {
        "items": [[it.prompt, it.reference, it.metadata] for it in items],
        "rows": row_text,
        "scores": sc_text,
        "prompts": kept,
    }
    return jsonable(index), jsonable(texts)


QUESTION_CHARS = 160
"""Characters of an item's question the item table shows (the full text on hover and on click)."""


def question_text(prompt: str) -> str:
    """``prompt`` on one line (whitespace collapsed), cut to :data:`QUESTION_CHARS` characters with a final
    "…" when longer."""
    one = " ".join(str(prompt or "").split())
    return one if len(one) <= QUESTION_CHARS else one[: QUESTION_CHARS - 1].rstrip() + "…"


def scores_by_item(
    sc: list[list[Any]], rows: list[list[Any]], models: list[str], metrics: list[dict[str, Any]], items: list[Item]
) -> dict[str, dict[str, dict[str, Any]]]:
    """{metric: {model: {item id: (value or None, flags)}}} of the per-item scores of the viewer index."""
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
"""Item facets a sentence of the Answer can name (in this order of preference)."""
ITEM_FLAGS = ("censored", "missing", "truncated", "empty", "injection_suspected")
"""Record flags a sentence of the Answer can name ("1 censored ... and 1 missing ... stored lists")."""


def _mentions(text: str, names: Iterable[str]) -> list[str]:
    """The ``names`` that occur in ``text`` as whole words, in the order they first occur; a name inside a
    longer matching name (``replay:phi4`` in ``replay:phi4:latest``) is not counted."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for name in sorted({n for n in names if n and n in text}, key=len, reverse=True):
        for m in re.finditer(r"(?<![\w:/.-])" + re.escape(name) + r"(?![\w:/-]|\.\w)", text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), name))
            break
    return [n for _, n in sorted(found)]


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
    out: dict[str, dict[str, Any]] = {}
    for text in sentences:
        if not text or text in out:
            continue
        named_ids = _mentions(text, ids)
        models = _mentions(text, all_models)
        metric = next(iter(_mentions(text, values)), primary)
        facet, value = None, None
        for f in FACET_FIELDS:
            vals = {str(getattr(it, f)) for it in items if getattr(it, f)}
            got = _mentions(text, vals)
            if got and len(vals) > 1:
                facet, value = f, got[0]
                break
        flags = [f for f in ITEM_FLAGS if re.search(rf"\b{f}\b", text)]
        per = values.get(metric or "", {})
        want = models or list(per)
        behind = []
        for it in items:
            if facet and str(getattr(it, facet)) != value:
                continue
            got_v = [per.get(m, {}).get(it.id) for m in want]
            if models and any(g is None for g in got_v):
                continue
            if not any(g is not None for g in got_v):
                continue
            if flags and not any(set(flags) & g[1] for g in got_v if g is not None):
                continue
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


def _js_assign(name: str, data: Any) -> str:
    # JSON is valid JavaScript (ES2019); "</" is escaped so the file could also be inlined in a <script>
    return (
        f"window.{name} = " + json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/") + ";\n"
    )


def write_viewer(
    run_dir: str | Path,
    items: Iterable[Item],
    responses: Iterable[Response],
    scores: Iterable[Score],
    *,
    report: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    specs: list[dict[str, Any]] | None = None,
    labelling: dict[str, Any] | None = None,
    prompts: dict[str, dict[str, Any]] | None = None,
    dest: str | Path | None = None,
) -> Path:
    """Write ``run_dir/viewer/`` (index.html, data.js, text.js, figures/), or the folder ``dest``, and
    return the path of ``index.html``.  Arguments as :func:`build_viewer_data`;
    the report's figures are copied from ``run_dir/figures`` (PNG images only,
    regular files read without following a link).  An existing viewer folder
    is replaced (links in it removed, never followed); every file is written
    without following a link below ``run_dir``.  Raises InputError for a link
    on the way.

    Args:
        run_dir: the run folder.
        items: the run's items.
        responses: its responses.
        scores: its scores.
        report: the report's data (``report.json``).
        config: the run's config.
        specs: the metric specs by name.
        labelling: the labelling settings of the page (None: no labelling).
        prompts: the judge prompts by hash.
        dest: the viewer folder to write instead of ``run_dir/viewer`` (replaced likewise); the run folder is then
            only read (a run folder received from someone else, or read-only).

    Returns:
        The path of ``index.html``.
    """
    run_dir = Path(run_dir)
    out = run_dir / "viewer" if dest is None else Path(dest)
    root = run_dir if dest is None else out.parent  # no link followed below it
    index, texts = build_viewer_data(
        items, responses, scores, report=report, config=config, specs=specs, labelling=labelling, prompts=prompts
    )
    replace_dir_in(root, out)  # links in the old viewer folder are removed, never followed
    figures = _report_figures(run_dir)
    for name, data in figures.items():
        write_bytes_in(root, out / "figures" / name, data)
    index["figures"] = sorted(figures)
    write_text_in(root, out / "data.js", _js_assign("SGV_DATA", index))
    write_text_in(root, out / "text.js", _js_assign("SGV_TEXT", texts))
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]))
    run = index["run"]
    html = env.get_template("viewer.html.j2").render(
        title=f"sgieval: {run.get('request') or run.get('run_id') or run_dir.name}",
        css=(TEMPLATES / "viewer.css").read_text(encoding="utf-8"),
        js=(TEMPLATES / "viewer.js").read_text(encoding="utf-8"),
    )
    write_text_in(root, out / "index.html", html)
    return out / "index.html"


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_FIGURE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,150}\.png")


def _report_figures(run_dir: Path) -> dict[str, bytes]:
    """The report's figures to copy into the viewer: ``run_dir/figures/*.png`` that are PNG images (their
    signature) and regular files, read without following a link (a link anywhere, or a file with other hard
    links, is refused with InputError); name -> bytes."""
    folder = run_dir / "figures"
    try:
        names = sorted(e.name for e in os.scandir(folder) if _FIGURE_NAME.fullmatch(e.name))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out = {}
    for name in names:
        data = read_bytes_in(run_dir, folder / name, single_link=True)
        if data.startswith(PNG_SIGNATURE):
            out[name] = data
    return out


# ---------------------------------------------------------------------- serving
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""Host names the served viewer answers to (with its port); any other ``Host`` header is refused, so a page
on another name that resolves to 127.0.0.1 (DNS rebinding) cannot read the run."""

SERVED_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
"""Headers of every reply of the served viewer: no framing (``X-Frame-Options``, CSP ``frame-ancestors``), no
use from another origin (``Cross-Origin-Resource-Policy: same-origin``: a browser refuses a ``<script>`` or
``<img>`` include from another page), no content sniffing, and no ``Referer`` that would carry the session
path to another site."""

_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".png": "image/png"}


def viewer_files(folder: str | Path) -> dict[str, Path]:
    """The files of a viewer folder that :func:`serve_viewer` serves: ``index.html``, ``data.js``,
    ``text.js`` and ``figures/<name>.png`` -- regular files only, never a symbolic link ({path relative to
    the session root: file})."""
    folder = Path(folder)
    names = ["index.html", "data.js", "text.js"]
    figs = folder / "figures"
    if figs.is_dir() and not figs.is_symlink():
        names += [f"figures/{p.name}" for p in sorted(figs.iterdir()) if p.suffix == ".png"]
    out: dict[str, Path] = {}
    for n in names:
        p = folder / n
        if not p.is_symlink() and p.is_file():
            out[n] = p
    return out


TOKEN_HEADER = "X-Sgieval-Token"
"""Header carrying the session token on a POST of the served viewer (the page reads the token from its own
address).  A page of another origin cannot send it without a CORS preflight, which this server never grants."""

MAX_POST_BYTES = 256 * 1024
"""Largest POST body the served viewer reads (a page of labels is a few kilobytes)."""


class LabelReceiver(Protocol):
    """What :class:`ViewerServer` calls to label a run from its page (the CLI builds one; see ``sgieval.cli.labels``).

    ``session()`` returns what the page needs at start as JSON-able data (``labeller``: the default labeller,
    ``labels``: the run's saved labels as objects); ``save(body)`` takes the parsed JSON body of a POST and
    returns (HTTP status, JSON-able reply): 200 with ``{"saved": [labels]}``, or 400/409 with
    ``{"error": reason}`` having saved nothing.
    """

    def session(self) -> dict[str, Any]: ...

    def save(self, body: Any) -> tuple[int, dict[str, Any]]: ...


class ViewerServer:
    """The viewer folder ``folder`` served on ``http://127.0.0.1:<port>/<token>/`` (``port`` 0: any free
    port) for one session.

    Only this session's own page can read the run:

    - the files are served only under a random path ``/<token>/`` (``secrets.token_urlsafe(24)``, 192
      bits, new per server): another origin cannot name them;
    - the ``Host`` header must be one of :data:`LOOPBACK_NAMES` with this port (else HTTP 421), which
      stops DNS rebinding;
    - a request a browser marks as coming from another site or origin (``Sec-Fetch-Site`` other than
      ``same-origin``/``none``, or an ``Origin`` other than this one) is refused (HTTP 403);
    - every reply carries :data:`SERVED_HEADERS`.

    With ``labels`` (a :class:`LabelReceiver`) the page can label the run: ``GET /<token>/session.js``
    gives ``window.SGV_SESSION`` (``labels.session()``, plus ``post``: the address to POST to), and
    ``POST /<token>/labels`` hands the JSON body to ``labels.save``.  A POST is refused, before the body is
    read, unless it passes the checks above and carries the token again in the :data:`TOKEN_HEADER` header
    (403; a form or ``no-cors`` request of another page cannot set it, and a CORS preflight (``OPTIONS``) is
    always refused) with ``Content-Type: application/json`` (415) and at most :data:`MAX_POST_BYTES` (413).
    Without ``labels`` there is no ``session.js`` (404) and every POST is 405.

    Files: :func:`viewer_files`, listed once at start and opened without following links.  ``url`` is the
    page's address.  Use :meth:`serve_forever` (blocks) or :meth:`start` (a daemon thread) and
    :meth:`close`.  Raises OSError when the port cannot be bound.
    """

    def __init__(
        self, folder: str | Path, port: int = 0, *, token: str | None = None, labels: LabelReceiver | None = None
    ):
        import http.server
        import secrets as _secrets

        self.folder = Path(folder)
        self.token = token or _secrets.token_urlsafe(24)
        self.files = viewer_files(self.folder)
        self.labels = labels
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            server_version = "sgieval-viewer"
            sys_version = ""

            def log_message(self, *args: object) -> None:  # no access log on the terminal
                pass

            def do_GET(self) -> None:
                self._send(*server.respond(self.path, self.headers), body=True)

            def do_HEAD(self) -> None:
                self._send(*server.respond(self.path, self.headers), body=False)

            def do_POST(self) -> None:
                status, ctype, data = server.check_post(self.path, self.headers)
                if status == 0:  # checks passed: read the body and hand it to the receiver
                    n = int(self.headers.get("Content-Length") or 0)
                    status, ctype, data = server.receive(self.rfile.read(n))
                self._send(status, ctype, data, body=True)

            def do_OPTIONS(self) -> None:  # a CORS preflight: never granted
                self._send(403, "text/plain; charset=utf-8", b"refused: no cross-origin requests\n", body=True)

            def do_PUT(self) -> None:
                self._send(405, "text/plain; charset=utf-8", b"method not allowed\n", body=True)

            do_DELETE = do_PATCH = do_PUT

            def _send(self, status: int, ctype: str, data: bytes, body: bool) -> None:
                self.send_response(status)
                for k, v in SERVED_HEADERS.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._thread: Any = None

    @property
    def url(self) -> str:
        """The page's address, ``http://127.0.0.1:<port>/<token>/index.html``."""
        return f"http://127.0.0.1:{self.port}/{self.token}/index.html"

    def allowed_hosts(self) -> set[str]:
        """The ``Host`` header values answered: each of :data:`LOOPBACK_NAMES` with ``:<port>``.

        Returns:
            The Host values.
        """
        return {f"{h}:{self.port}" for h in LOOPBACK_NAMES}

    def _refused(self, headers: Any) -> tuple[int, str, bytes] | None:
        """The refusal of a request whose Host is foreign (421) or that comes from another site or origin (403)."""
        text = "text/plain; charset=utf-8"
        host = (headers.get("Host") or "").strip().lower()
        if host not in self.allowed_hosts():
            return 421, text, b"this server answers only to 127.0.0.1, localhost and [::1] with its port\n"
        site = (headers.get("Sec-Fetch-Site") or "").strip().lower()
        origin = (headers.get("Origin") or "").strip().lower()
        if (site and site not in ("same-origin", "none")) or (origin and origin != f"http://{host}"):
            return 403, text, b"refused: a request from another site or origin\n"
        return None

    def _session_path(self, path: str) -> str | None:
        """The part of ``path`` below ``/<token>/`` (None when it is not under the session's path)."""
        from urllib.parse import unquote, urlsplit

        rel = unquote(urlsplit(path).path)
        prefix = f"/{self.token}/"
        return rel[len(prefix) :] if rel.startswith(prefix) else None

    def respond(self, path: str, headers: Any) -> tuple[int, str, bytes]:
        """(HTTP status, content type, body) for a GET of ``path`` with request ``headers`` (a mapping with
        case-insensitive ``get``), by the rules of the class docstring.

        Args:
            path: the request path.
            headers: the request headers.

        Returns:
            The response.
        """
        text = "text/plain; charset=utf-8"
        refused = self._refused(headers)
        if refused:
            return refused
        rel = self._session_path(path)
        if rel is None:
            return 404, text, b"not found\n"
        rel = rel or "index.html"
        if rel == "session.js" and self.labels is not None:
            session = {**self.labels.session(), "post": "labels", "header": TOKEN_HEADER}
            return 200, _TYPES[".js"], _js_assign("SGV_SESSION", jsonable(session)).encode("utf-8")
        p = self.files.get(rel)
        if p is None:
            return 404, text, b"not found\n"
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
            with os.fdopen(fd, "rb") as f:
                data = f.read()
        except OSError:
            return 404, text, b"not found\n"
        return 200, _TYPES.get(p.suffix, "application/octet-stream"), data

    def check_post(self, path: str, headers: Any) -> tuple[int, str, bytes]:
        """The refusal of a POST of ``path`` with ``headers`` by the rules of the class docstring, or
        ``(0, "", b"")`` when its body may be read and handed to :meth:`receive`.

        Args:
            path: the request path.
            headers: the request headers.

        Returns:
            The refusal, or ``(0, "", b"")``.
        """
        import secrets as _secrets

        text = "text/plain; charset=utf-8"
        refused = self._refused(headers)
        if refused:
            return refused
        rel = self._session_path(path)
        if rel is None:
            return 404, text, b"not found\n"
        if self.labels is None or rel != "labels":
            return 405, text, b"method not allowed\n"
        given = (headers.get(TOKEN_HEADER) or "").strip()
        if not _secrets.compare_digest(given.encode("utf-8", "replace"), self.token.encode("ascii")):
            return 403, text, f"refused: a POST must carry the session token in the {TOKEN_HEADER} header\n".encode()
        ctype = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            return 415, text, b"refused: the body must be application/json\n"
        try:
            n = int(headers.get("Content-Length") or "")
        except ValueError:
            return 411, text, b"refused: a POST needs a Content-Length\n"
        if not 0 < n <= MAX_POST_BYTES:
            return 413, text, f"refused: a body of 1 to {MAX_POST_BYTES} bytes\n".encode()
        return 0, "", b""

    def receive(self, data: bytes) -> tuple[int, str, bytes]:
        """(HTTP status, content type, body) for a POST body that passed :meth:`check_post`: the JSON reply
        of ``labels.save`` (400 when the body is not JSON).

        Args:
            data: the request body.

        Returns:
            The response.
        """
        ctype = "application/json; charset=utf-8"
        try:
            body = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            status, reply = 400, {"error": f"the body is not JSON ({e})"}
        else:
            assert self.labels is not None
            status, reply = self.labels.save(body)
        return status, ctype, json.dumps(jsonable(reply), ensure_ascii=False).encode("utf-8")

    def serve_forever(self) -> None:
        """Serve until :meth:`close` (or KeyboardInterrupt)."""
        self.httpd.serve_forever()

    def start(self) -> "ViewerServer":
        """Serve from a daemon thread; returns self.

        Returns:
            This server.
        """
        import threading

        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name="sgieval-viewer")
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
        self.httpd.server_close()
