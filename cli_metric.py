"""``sgieval metric``: define, list, show and test rubric metrics (issue 5 item 2).

- ``sgieval metric define [--name N] [--agent-model M] [--out DIR]``: the chat of
  :mod:`sgieval.graphs.metric_chat`; user turns are read with ``typer.prompt``
  (so they can be piped on stdin); the rubric is saved as YAML in the user
  rubric folder ($SGIEVAL_RUBRIC_DIR or ``user_config_dir("sgieval")/rubrics``).
- ``sgieval metric list``: every rubric (starter, project, user).
- ``sgieval metric show NAME``: the rubric's YAML.
- ``sgieval metric test NAME --response FILE_OR_TEXT --judge MODEL [--question TEXT]``:
  score one response and print the per-criterion table (0-10 each) and the
  total (0-100).

Exit codes as ``sgieval``: 2 bad input, 1 a judge failure, 3 cancelled.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .core import InputError, Item, Response, Rubric, SgievalError, escape_control_chars

metric_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Rubric metrics: define in a chat, list, show, test on a response.",
)
err = Console(stderr=True)
out = Console()


def _safe(value: object) -> str:
    """``value`` as text safe to print with rich: control characters shown as
    ``\\xNN``, rich markup (``[/]``) shown literally (a user's rubric YAML,
    a model's rationale; issue 14 item 4)."""
    return escape(escape_control_chars(str(value)))


def _fail(e: SgievalError) -> None:
    err.print(f"[bold red]error:[/] {_safe(e.one_line())}", highlight=False, soft_wrap=True)
    raise typer.Exit(e.exit_code)


def rubric_table(r: Rubric, scores: dict[str, float] | None = None, rationales: dict[str, str] | None = None) -> Table:
    """Criteria of ``r`` with weights (and scores 0-10 / rationales when given)."""
    t = Table(title=f"{_safe(r.name)} (0-100 = weighted mean of 0-10 criteria x 10)", show_lines=False)
    t.add_column("criterion")
    t.add_column("weight", justify="right")
    if scores is None:
        t.add_column("description")
    else:
        t.add_column("score (0-10)", justify="right")
        t.add_column("rationale")
    for c in r.criteria:
        if scores is None:
            t.add_row(_safe(c.name), f"{r.weights[c.name]:g}", _safe(c.description))
        else:
            t.add_row(
                _safe(c.name),
                f"{r.weights[c.name]:g}",
                f"{scores[c.name]:.3g}",
                _safe((rationales or {}).get(c.name, "")),
            )
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
) -> None:
    """Define a rubric metric in a chat: describe it, ask for changes, say 'done' to save."""
    from .agents.customisation import PHRASINGS
    from .graphs.metric_chat import run_metric_chat
    from .models.registry import resolve_model

    try:
        agent = resolve_model(agent_model, "agent", base_url=base_url) if agent_model else None
    except SgievalError as e:
        _fail(e)

    shown = {"phrasings": agent is not None}  # the offline forms are shown once, before the first change

    def answer(payload: dict[str, Any]) -> str:
        if payload.get("message"):
            err.print(f"[bold]agent:[/] {_safe(payload['message'])}", highlight=False)
        if payload["kind"] == "review":
            err.print(rubric_table(Rubric.model_validate(payload["rubric"])))
            if not shown["phrasings"]:
                err.print(PHRASINGS, highlight=False, markup=False)
                shown["phrasings"] = True
            try:
                return typer.prompt("changes (or 'done' / 'cancel')", err=True)
            except typer.Abort:
                return "cancel"
        try:
            return typer.prompt("Describe the metric (what quality should it measure?)", err=True)
        except typer.Abort:
            return "cancel"

    try:
        state = asyncio.run(run_metric_chat(answer, agent=agent, name=name, save_dir=out_dir))
    except SgievalError as e:
        _fail(e)
    if state.get("status") != "done":
        err.print("cancelled; nothing saved")
        raise typer.Exit(3)
    out.print(f"saved: {_safe(state['saved'])}", highlight=False)


@metric_app.command("list")
def list_cmd() -> None:
    """Every rubric metric: starter, project (metric_pool/custom) and user."""
    from .metric_pool.rubrics import list_rubrics, rubric_origin

    try:
        rubrics = list_rubrics()
    except SgievalError as e:
        _fail(e)
    t = Table(title="rubric metrics (0-100)")
    for col in ("name", "origin", "criteria", "description"):
        t.add_column(col)
    for r in rubrics:
        origin, path = rubric_origin(r.name) or ("?", None)
        t.add_row(_safe(r.name), origin, str(len(r.criteria)), _safe(r.description))
    out.print(t)


@metric_app.command("show")
def show(name: str = typer.Argument(..., help="Rubric name (see `sgieval metric list`) or a YAML path.")) -> None:
    """Print a rubric's YAML."""
    from .metric_pool.rubrics import load_rubric

    try:
        r = load_rubric(name)
    except SgievalError as e:
        _fail(e)
    print(r.to_yaml(), end="")


@metric_app.command("test")
def test(
    name: str = typer.Argument(..., help="Rubric name or YAML path."),
    response: str = typer.Option(..., "--response", help="The response to score: a file path or the text itself."),
    judge: list[str] = typer.Option(..., "--judge", help="Judge model(s), e.g. openai:gpt-4.1; repeat for several."),
    question: str = typer.Option("", "--question", help="The task the response answers."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible server for the judge."),
    tools: Optional[str] = typer.Option(None, "--tools", help="Tools the judge may use: search,python (default none)."),
    tool_budget: int = typer.Option(3, "--tool-budget", help="Tool calls per judge for this score."),
) -> None:
    """Score one response with a rubric and print the per-criterion scores."""
    from .metric_pool.base import ScoringContext
    from .metric_pool.rubric import RubricMetric
    from .metric_pool.rubrics import load_rubric
    from .models.registry import resolve_model

    try:
        r = load_rubric(name)
        judges = [resolve_model(j, "judge", base_url=base_url) for j in judge]
        p = Path(response)
        one_line = len(response) < 4096 and "\n" not in response
        if one_line and p.is_file():
            try:
                text = p.read_text(encoding="utf-8")
            except UnicodeDecodeError as e:
                raise InputError(
                    f"cannot read file: {e}", what=f"--response {response}", fix="save the response as UTF-8 text"
                ) from None
        elif one_line and " " not in response and (p.suffix in (".txt", ".md", ".json", ".jsonl") or "/" in response):
            raise InputError(
                "no such file", what=f"--response {response}", fix="give an existing file, or the response text itself"
            )
        else:
            text = response
        pool = None
        if tools:
            from .tools.pool import ToolPool

            pool = ToolPool.from_names(tools)
    except SgievalError as e:
        _fail(e)
    except OSError as e:
        err.print(f"[bold red]error:[/] --response: {_safe(e)}", highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    item = Item(id="metric-test/1", benchmark="metric-test", task="generic", prompt=question)
    resp = Response(item_id=item.id, model="response-under-test", text=text)
    ctx = ScoringContext(judges=judges, tools=pool, options={"tool_budget": tool_budget})
    [score] = asyncio.run(RubricMetric(r).score(item, resp, ctx))
    if not score.ok:
        err.print(f"[bold red]{score.status}:[/] {_safe(score.error)}", highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    rats = score.details.get("rationales", {})
    why = {
        c: (" | ".join(f"{j}: {t}" for j, t in by.items()) if len(by) > 1 else next(iter(by.values()), ""))
        for c, by in rats.items()
    }
    out.print(rubric_table(r, score.details["criteria"], why))
    used = score.details.get("tools_used") or {}
    out.print(
        _safe(
            f"{r.name}: {score.value:.1f} / 100 (judge: {score.judge}; tools used: "
            f"{', '.join(f'{k} x{v}' for k, v in used.items()) or 'none'})"
        ),
        highlight=False,
    )
