"""``sgieval metric``: define (the chat of :mod:`sgieval.graphs.metric_chat`), list, show and test rubric metrics (one
response: per-criterion 0-10 and total 0-100; ``--run``: :func:`rubric_loop`). Exit codes: 2 bad input, 1 a judge
failure, 3 cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..core import InputError, Item, Response, Rubric, SgievalError
from .output import err, exit_on_error, fail, out, safe

metric_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Rubric metrics: define in a chat, list, show, test on a response.",
)


def rubric_table(r: Rubric, scores: dict[str, float] | None = None, rationales: dict[str, str] | None = None) -> Table:
    """Criteria of ``r`` with weights (and scores 0-10 / rationales when given)."""
    t = Table(title=f"{safe(r.name)} (0-100 = weighted mean of 0-10 criteria x 10)", show_lines=False)
    t.add_column("criterion")
    t.add_column("weight", justify="right")
    if scores is None:
        t.add_column("description")
    else:
        t.add_column("score (0-10)", justify="right")
        t.add_column("rationale")
    for c in r.criteria:
        w = f"{r.weights[c.name]:g}"
        if scores is None:
            t.add_row(safe(c.name), w, safe(c.description))
        else:
            t.add_row(safe(c.name), w, f"{scores[c.name]:.3g}", safe((rationales or {}).get(c.name, "")))
    return t


@metric_app.command("define")
def define(
    name: Optional[str] = typer.Option(None, "--name", help="Metric name (default: from the proposal)."),
    agent_model: Optional[str] = typer.Option(
        None,
        "--agent-model",
        help="LLM that proposes and revises (e.g. openai:gpt-4.1, local:smollm2). Default: offline.",
    ),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible server for --agent-model."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Folder for the YAML (default: user rubric folder)."),
    run: Optional[Path] = typer.Option(
        None,
        "--run",
        help="After saving, refine the rubric against this run's labels (the rubric loop of `metric test --run`); "
        "needs --judge.",
    ),
    judge: Optional[list[str]] = typer.Option(None, "--judge", help="With --run: the judge model(s) that re-score."),
    judge_base_url: Optional[str] = typer.Option(
        None, "--judge-base-url", help="With --run: OpenAI-compatible server for --judge (default: --base-url)."
    ),
) -> None:
    """Define a rubric metric in a chat: describe it, ask for changes, say 'done' to save."""
    from ..agents import PHRASINGS
    from ..graphs import run_metric_chat
    from ..models import resolve_model

    with exit_on_error():
        agent = resolve_model(agent_model, "agent", base_url=base_url) if agent_model else None
        if run is not None and not judge:
            raise InputError("--run needs a judge to re-score with", what="--run", fix="add --judge MODEL")
        judges = [resolve_model(j, "judge", base_url=judge_base_url or base_url) for j in judge or []]

    shown = {"phrasings": agent is not None}  # the offline forms are shown once, before the first change

    def answer(payload: dict[str, Any]) -> str:
        if payload.get("message"):
            err.print(f"[bold]agent:[/] {safe(payload['message'])}", highlight=False)
        question = "Describe the metric (what quality should it measure?)"
        if payload["kind"] == "review":
            err.print(rubric_table(Rubric.model_validate(payload["rubric"])))
            if not shown["phrasings"]:
                err.print(PHRASINGS, highlight=False, markup=False)
                shown["phrasings"] = True
            question = "changes (or 'done' / 'cancel')"
        try:
            return typer.prompt(question, err=True)
        except typer.Abort:
            return "cancel"

    with exit_on_error():
        state = asyncio.run(run_metric_chat(answer, agent=agent, name=name, save_dir=out_dir))
    if state.get("status") != "done":
        err.print("cancelled; nothing saved")
        raise typer.Exit(3)
    out.print(f"saved: {safe(state['saved'])}", highlight=False)
    if run is not None:
        with exit_on_error():
            rubric_loop(state["saved"], run, judges, out_dir=out_dir or Path(state["saved"]).parent)


@metric_app.command("list")
def list_cmd() -> None:
    """Every rubric metric: starter, project (metric_pool/custom) and user."""
    from ..metric_pool import list_rubrics, rubric_origin

    with exit_on_error():
        rubrics = list_rubrics()
    t = Table(title="rubric metrics (0-100)")
    for col in ("name", "origin", "criteria", "description"):
        t.add_column(col)
    for r in rubrics:
        origin = (rubric_origin(r.name) or ("?",))[0]
        t.add_row(safe(r.name), origin, str(len(r.criteria)), safe(r.description))
    out.print(t)


@metric_app.command("show")
def show(name: str = typer.Argument(..., help="Rubric name (see `sgieval metric list`) or a YAML path.")) -> None:
    """Print a rubric's YAML."""
    from ..metric_pool import load_rubric

    with exit_on_error():
        r = load_rubric(name)
    print(r.to_yaml(), end="")


@metric_app.command("test")
def test(
    name: str = typer.Argument(..., help="Rubric name or YAML path."),
    response: Optional[str] = typer.Option(
        None, "--response", help="The response to score: a file path or the text itself."
    ),
    run: Optional[Path] = typer.Option(
        None,
        "--run",
        help="A run folder with labels of this rubric: show where the judge and your labels disagree most, revise "
        "a criterion, re-score the labelled units and compare the agreement (instead of --response).",
    ),
    judge: list[str] = typer.Option(..., "--judge", help="Judge model(s), e.g. openai:gpt-4.1; repeat for several."),
    question: str = typer.Option("", "--question", help="The task the response answers."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible server for the judge."),
    tools: Optional[str] = typer.Option(None, "--tools", help="Tools the judge may use: search,python (default none)."),
    tool_budget: int = typer.Option(3, "--tool-budget", help="Tool calls per judge for this score."),
    top: int = typer.Option(10, "--top", min=1, help="With --run: disagreements shown (largest first)."),
    out_dir: Optional[Path] = typer.Option(
        None, "--out", help="With --run: folder for the revised YAML (default: user rubric folder)."
    ),
) -> None:
    """Score one response with a rubric (--response), or refine the rubric against a run's labels (--run)."""
    from ..metric_pool import RubricMetric, ScoringContext, load_rubric
    from ..models import resolve_model
    from ..tools import ToolPool

    if (response is None) == (run is None):
        fail(
            InputError(
                "give either --response (score one response) or --run (refine against the run's labels)",
                what="sgieval metric test",
                fix="e.g. --response answer.txt, or --run runs/<id>",
            )
        )
    try:
        r = load_rubric(name) if response is not None else None
        judges = [resolve_model(j, "judge", base_url=base_url) for j in judge]
        text = _response_text(response) if response is not None else ""
        tool_pool = ToolPool.from_names(tools) if tools else None
        if run is not None:
            rubric_loop(name, run, judges, tools=tool_pool, tool_budget=tool_budget, top=top, out_dir=out_dir)
            return
    except SgievalError as e:
        fail(e)
    except OSError as e:
        if run is not None:
            raise
        err.print(f"[bold red]error:[/] --response: {safe(e)}", highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    assert r is not None
    item = Item(id="metric-test/1", benchmark="metric-test", task="generic", prompt=question)
    resp = Response(item_id=item.id, model="response-under-test", text=text)
    ctx = ScoringContext(judges=judges, tools=tool_pool, options={"tool_budget": tool_budget})
    [score] = asyncio.run(RubricMetric(r).score(item, resp, ctx))
    if not score.ok:
        err.print(f"[bold red]{score.status}:[/] {safe(score.error)}", highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    rats = score.details.get("rationales", {})
    why = {
        c: (" | ".join(f"{j}: {t}" for j, t in by.items()) if len(by) > 1 else next(iter(by.values()), ""))
        for c, by in rats.items()
    }
    out.print(rubric_table(r, score.details["criteria"], why))
    used = score.details.get("tools_used") or {}
    out.print(
        safe(
            f"{r.name}: {score.value:.1f} / 100 (judge: {score.judge}; tools used: "
            f"{', '.join(f'{k} x{v}' for k, v in used.items()) or 'none'})"
        ),
        highlight=False,
    )


def _response_text(response: str) -> str:
    """``--response``: the text of a file it names, else the text itself; InputError for a file that cannot be
    read as UTF-8, or what looks like a missing file's name."""
    p = Path(response)
    one_line = len(response) < 4096 and "\n" not in response
    if one_line and p.is_file():
        try:
            return p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise InputError(
                f"cannot read file: {e}", what=f"--response {response}", fix="save the response as UTF-8 text"
            ) from None
    if one_line and " " not in response and (p.suffix in (".txt", ".md", ".json", ".jsonl") or "/" in response):
        raise InputError(
            "no such file", what=f"--response {response}", fix="give an existing file, or the response text itself"
        )
    return response


# ------------------------------------------------------------------ rubric loop
def _stat_text(st: Any) -> str:
    if st is None or st.value is None:
        return "-"
    ci = f" ({st.low:.2f} to {st.high:.2f})" if st.low is not None and st.high is not None else ""
    return f"{st.value:.2f}{ci}"


def _agreement_table(changes: list[Any], judge: str, before_what: str, after_what: str) -> Table:
    t = Table(title=f"agreement of {safe(judge)} with your labels (95% bootstrap CI)")
    for col in ("criterion", "statistic", "n", f"before ({before_what})", f"after ({after_what})", "change"):
        t.add_column(col, justify="right" if col in ("n", "change") else "left")
    for ch in changes:
        b, a = ch.before, ch.after
        bv, av = getattr(b, "value", None), getattr(a, "value", None)
        delta = f"{av - bv:+.2f}" if av is not None and bv is not None else "-"
        n = getattr(a or b, "n", 0)
        t.add_row(
            safe(ch.criterion or "(whole metric, 0-100)"), ch.statistic, str(n), _stat_text(b), _stat_text(a), delta
        )
    return t


def _disagreement_table(rows: list[Any], top: int) -> Table:
    t = Table(title=f"largest disagreements with your labels (top {min(top, len(rows))} of {len(rows)})")
    for col in ("item", "target model", "criterion", "judge", "you", "judge's rationale"):
        t.add_column(col, justify="right" if col in ("judge", "you") else "left")
    for d in rows[:top]:
        why = d.rationale.strip()
        t.add_row(
            safe(d.item_id),
            safe(d.model),
            safe(d.criterion or "(whole metric, 0-100)"),
            f"{d.judge_value:.3g}",
            f"{d.label:.3g}",
            safe(why if len(why) <= 300 else why[:297] + "..."),
        )
    return t


def _parse_anchors(text: str) -> dict[int, str]:
    """``"0=no controls; 10=every confound controlled"`` -> {0: ..., 10: ...} ("" removes a level); else InputError."""
    out: dict[int, str] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        level, sep, words = part.partition("=")
        try:
            n = int(level.strip())
        except ValueError:
            n = -1
        if not sep or not 0 <= n <= 10:
            raise InputError(
                f"cannot read anchor {part.strip()!r}",
                what="anchors",
                fix="write LEVEL=TEXT pairs with LEVEL 0-10, separated by ';' (e.g. 0=no controls; 10=all controls)",
            )
        out[n] = words.strip()
    return out


def _ask(text: str, default: str = "") -> str | None:
    """One typer prompt on stderr; None at end of input (Ctrl-D / closed stdin)."""
    try:
        return str(typer.prompt(text, default=default, show_default=False, err=True))
    except typer.Abort:
        return None


def _save_version(r: Rubric, previous: Rubric, out_dir: Path | None, scores: list[Any]) -> Path:
    """Save ``r`` as ``<slug>.yaml``, both versions in ``versions/`` and ``scores`` as their labelled-scores.jsonl."""
    from ..core import atomic_write_text
    from ..metric_pool import save_rubric, slug, user_rubric_dir

    folder = Path(out_dir) if out_dir is not None else user_rubric_dir()
    history = folder / "versions"
    old = history / f"{slug(previous.name)}.v{previous.version}.yaml"
    if not old.exists():
        previous.to_yaml(old)
    r.to_yaml(history / f"{slug(r.name)}.v{r.version}.yaml")
    atomic_write_text(
        history / f"{slug(r.name)}.v{r.version}.labelled-scores.jsonl",
        "".join(s.model_dump_json() + "\n" for s in scores),
    )
    return save_rubric(r, folder=folder)


def rubric_loop(
    name: str,
    run: Path,
    judges: list[Any],
    *,
    tools: Any = None,
    tool_budget: int = 3,
    top: int = 10,
    out_dir: Path | None = None,
) -> None:
    """The rubric loop on a run's labels (:mod:`sgieval.metric_pool.rubric_loop`), driven by typer prompts: show the
    largest judge-label disagreements, revise a criterion, re-score the labelled units through ``judges``, compare the
    agreement before and after, save the version on confirmation; an empty answer (or end of input) stops.

    Args:
        name: the rubric's metric name in the run (or a rubric YAML path of the same name: its text is the start).
        run: the run folder.
        judges: the resolved judge panel.
        tools: a ToolPool for the judges, or None.
        tool_budget: tool calls per judge per score.
        top: disagreements shown.
        out_dir: where revisions are saved (None: the user rubric folder).

    Raises:
        InputError: no such run, no rubric of that name in the run, or no label of it.
    """
    from ..metric_pool import compare_agreement, disagreements, rescore_units

    records, rubrics, current, units = _rubric_of_run(name, run)
    labels = records.labels
    panel = [j.name for j in judges]
    judge = panel[0] if len(panel) == 1 else None
    who = judge or "the panel"

    def rescore(r: Rubric) -> list[Any]:
        options = {"tool_budget": tool_budget}
        return asyncio.run(
            rescore_units(r, records.items, records.responses, units, judges, tools=tools, options=options)
        )

    before, before_what = _before_scores(records, rubrics, current, units, panel, rescore)
    err.print(f"{len(labels)} label(s) of {len(units)} unit(s); judge: {', '.join(panel)}", highlight=False)
    while True:
        _show_disagreements(
            [d for d in disagreements(before, labels, current, judge=judge) if d.gap != 0], current, who, top
        )
        revised = _ask_revision(current)
        if revised is None:
            break
        if revised is current:
            continue
        err.print(
            f"re-scoring the {len(units)} labelled unit(s) with version {revised.version} through {', '.join(panel)}",
            highlight=False,
            markup=False,
        )
        after = rescore(revised)
        failed = [s for s in after if not s.ok]
        if failed:
            err.print(
                f"{len(failed)} of {len(after)} re-score(s) failed (left out of the agreement): "
                + "; ".join(f"{s.item_id} {s.model}: {s.status} {s.error}" for s in failed[:3]),
                highlight=False,
                markup=False,
            )
        changes = compare_agreement(before, after, labels, revised, judge=judge)
        out.print(_agreement_table(changes, who, before_what, f"v{revised.version}"))
        try:
            keep = typer.confirm(f"save as version {revised.version}?", default=False, err=True)
        except typer.Abort:
            keep = False
        if not keep:
            err.print(f"version {revised.version} discarded; still at version {current.version}", highlight=False)
            continue
        path = _save_version(revised, current, out_dir, after)
        out.print(safe(f"saved {revised.name} version {revised.version}: {path}"), highlight=False)
        current, before, before_what = revised, after, f"v{revised.version}"


def _show_disagreements(apart: list[Any], current: Rubric, who: str, top: int) -> None:
    """Print the ``top`` largest judge-label disagreements (or that there is none), then the rubric's criteria."""
    if apart:
        out.print(_disagreement_table(apart, top))
    else:
        out.print(safe(f"{who} agrees exactly with every label of {current.name} (version {current.version})"))
    for i, c in enumerate(current.criteria, 1):
        levels = "; ".join(f"{k}={v}" for k, v in sorted(c.anchors.items()))
        out.print(
            safe(f"{i}. {c.name}: {c.description}" + (f" [anchors: {levels}]" if levels else "")), highlight=False
        )


def _rubric_of_run(name: str, run: Path) -> tuple[Any, dict[str, Rubric], Rubric, list[Any]]:
    """(records, rubrics by name, the rubric to revise, its labelled units); InputError: no such rubric or labels."""
    from ..api import load_run, run_metric_specs
    from ..metric_pool import labelled_units, load_rubric

    records = load_run(run)
    rubrics = {k: v for k, v in run_metric_specs(records).items() if isinstance(v, Rubric)}
    p = Path(name)
    current = load_rubric(name) if p.suffix in (".yaml", ".yml") and p.is_file() else rubrics.get(name)
    if current is None or current.name not in rubrics:
        raise InputError(
            f"the run has no rubric metric {name!r}",
            what=str(run),
            fix=f"use one of {', '.join(sorted(rubrics)) or '(none: the run applied no rubric metric)'}",
        )
    units = labelled_units(records.labels, current.name)
    if not units:
        raise InputError(
            f"the run has no labels of {current.name}",
            what=str(run),
            fix=f"label some responses first: `sgieval label {run} --metric {current.name}`",
        )
    return records, rubrics, current, units


def _before_scores(
    records: Any,
    rubrics: dict[str, Rubric],
    current: Rubric,
    units: list[Any],
    panel: list[str],
    rescore: Callable[[Rubric], list[Any]],
) -> tuple[list[Any], str]:
    """The scores the revisions are compared with: the run's own when the judges ``panel`` scored it with this text,
    else the labelled units scored with it by ``rescore`` (so before and after differ only in the rubric)."""
    from ..metric_pool import scored_by

    want = set(units)
    stored = [s for s in records.scores if s.metric == current.name and (s.item_id, s.model) in want]
    same_text = current.criteria == rubrics[current.name].criteria and current.weights == rubrics[current.name].weights
    judged = scored_by(stored, current, units)
    if same_text and judged == set(panel):
        return stored, f"the run's scores, v{current.version}"
    err.print(
        (
            f"the run was judged by {', '.join(sorted(judged)) or 'no valid judge'}"
            if same_text
            else f"the run was judged with another text of {current.name}"
        )
        + "; "
        f"scoring the {len(units)} labelled unit(s) with version {current.version} through {', '.join(panel)} "
        "first, so before and after differ only in the rubric",
        highlight=False,
        markup=False,
    )
    return rescore(current), f"v{current.version}"


def _ask_revision(current: Rubric) -> Rubric | None:
    """The revision the user asks for: None to stop, ``current`` itself to ask again (a bad answer, no change)."""
    pick = (_ask("criterion to revise (number or name; empty to stop)") or "").strip()
    if not pick:
        return None
    by_key = {c.name.casefold(): c.name for c in current.criteria}
    if pick.isdigit() and 1 <= int(pick) <= len(current.criteria):
        crit = current.criteria[int(pick) - 1].name
    elif pick.casefold() in by_key:
        crit = by_key[pick.casefold()]
    else:
        err.print(f"no criterion {safe(pick)!s}; give a number from 1 to {len(current.criteria)}", highlight=False)
        return current
    description = _ask("new description (empty: keep it)")
    anchor_text = _ask("anchors to change, LEVEL=TEXT separated by ';' (empty: keep them)")
    if description is None or anchor_text is None:
        return None
    try:
        anchors = _parse_anchors(anchor_text)
    except InputError as e:
        err.print(f"[bold red]error:[/] {safe(e.one_line())}", highlight=False, soft_wrap=True)
        return current
    if not description.strip() and not anchors:
        err.print("nothing changed", highlight=False)
        return current
    return current.revised(crit, description=description.strip() or None, anchors=anchors or None)
