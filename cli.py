"""The ``sgieval`` command (typer + rich).

Exit codes: 0 success, 1 internal failure, 2 bad input (missing data, bad
file, unknown model string, a request that selects nothing), 3 stopped at
the metric confirmation.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .cli_metric import metric_app
from .core import RunConfig, RunStore, SgievalError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="sgieval: agentic evaluation of scientific LLMs (SGI-Bench, SciAidanBench, SFBench, JSONL).")
data_app = typer.Typer(help="Benchmark data: where it is, and how to fetch it.")
app.add_typer(data_app, name="data")
app.add_typer(metric_app, name="metric")
err = Console(stderr=True)
out = Console()


def _fail(e: SgievalError) -> None:
    err.print(f"[bold red]error:[/] {e.one_line()}", highlight=False, soft_wrap=True)
    raise typer.Exit(e.exit_code)


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for x in values or [] for v in x.split(",") if v.strip()]


def _run(config: RunConfig, *, resume: bool) -> None:
    from .graphs.evaluate import execute, make_runtime

    try:
        rt = make_runtime(config)
    except SgievalError as e:
        _fail(e)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as progress:
        task = progress.add_task("evaluating", total=None)
        rt.on_progress = lambda done, total: progress.update(task, completed=done, total=total)

        def confirm(payload: dict) -> bool:
            progress.stop()
            err.print("[bold]Metrics for this run[/]")
            err.print(f"  predefined: {', '.join(payload['predefined'])}")
            if payload.get("custom"):
                err.print(f"  custom: {', '.join(payload['custom'])}")
            err.print(f"  ranking by: {payload['primary']}")
            for n in payload.get("notes") or []:
                err.print(f"  note: {n}")
            ok = typer.confirm("Run with these metrics?", default=True, err=True)
            progress.start()
            return ok

        try:
            state = asyncio.run(execute(rt, resume=resume, confirm=confirm))
        except SgievalError as e:
            _fail(e)
    if state.get("confirmed") is False:
        err.print("cancelled at the metric confirmation; nothing was evaluated")
        raise typer.Exit(3)
    if "__interrupt__" in state or not state.get("report"):
        err.print(f"stopped before the report; continue with `sgieval resume {config.run_id}`")
        raise typer.Exit(3)
    out.print(f"report: {state['report']}")


@app.command()
def ask(
    request: str = typer.Argument("", help="The question, in plain language. Empty: evaluate everything."),
    benchmark: Optional[list[str]] = typer.Option(None, "--benchmark", "-b", help="sciaidanbench, sgi-bench, sfbench or a .jsonl path (repeatable). Default: every benchmark with data."),
    k: Optional[int] = typer.Option(None, "--k", help="Number of items (stratified sample). Default: all matches."),
    models: Optional[list[str]] = typer.Option(None, "--models", "-m", help="Target models (comma-separated or repeated): replay:<name|path>, openai:<model>, local:smollm2, provider:model. Default for SciAidanBench: every stored model."),
    judge: Optional[list[str]] = typer.Option(None, "--judge", "-j", help="Judge model(s). Default: none (judge metrics are reported as not run)."),
    agent_model: Optional[str] = typer.Option(None, "--agent-model", help="Planning model for the agents. Default: offline agent paths."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="Base URL of an OpenAI-compatible server (default $OPENAI_BASE_URL)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Data folder (default: $SGIEVAL_DATA, ../shared/data, user cache)."),
    out_dir: Path = typer.Option(Path("runs"), "--out", help="Folder for run folders."),
    seed: int = typer.Option(0, "--seed"),
    tools: str = typer.Option("search,pdf,python", "--tools", help="Tool pool for agents and judges."),
    sandbox: str = typer.Option("auto", "--sandbox", help="auto | bwrap | e2b"),
    unsafe_local_exec: bool = typer.Option(False, "--unsafe-local-exec", help="Run model code without a sandbox (stated in the report)."),
    allow_self_judge: bool = typer.Option(False, "--allow-self-judge"),
    max_concurrency: int = typer.Option(16, "--max-concurrency"),
    no_cache: bool = typer.Option(False, "--no-cache"),
    budget: Optional[float] = typer.Option(None, "--budget", help="Stop cleanly when this many USD are spent."),
    executor: str = typer.Option("local", "--executor", help="local | ray"),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not pause to confirm the metrics."),
) -> None:
    """Answer a plain-language evaluation request and write runs/<run_id>/report.md."""
    from .graphs.evaluate import new_run_id

    try:
        config = RunConfig(
            run_id=new_run_id(request), request=request, benchmarks=_split(benchmark), k=k, seed=seed,
            models=_split(models), judges=_split(judge), agent_model=agent_model, base_url=base_url,
            data_dir=str(data_dir) if data_dir else None, out_dir=str(out_dir), tools=_split([tools]),
            sandbox=sandbox, unsafe_local_exec=unsafe_local_exec, allow_self_judge=allow_self_judge, yes=yes,
            max_concurrency=max_concurrency, use_cache=not no_cache, budget_usd=budget, executor=executor)
    except ValueError as e:
        err.print(f"[bold red]error:[/] {str(e).splitlines()[-1]}")
        raise typer.Exit(2)
    _run(config, resume=False)


def _run_dir(run_id: str, out_dir: Path) -> Path:
    d = out_dir / run_id
    if not (d / "config.json").is_file():
        _fail(SgievalError("no such run", what=str(d), fix="list runs with `sgieval runs`"))
    return d


@app.command()
def resume(run_id: str, out_dir: Path = typer.Option(Path("runs"), "--out"),
           yes: bool = typer.Option(False, "--yes", "-y")) -> None:
    """Continue a run that was killed or stopped at the confirmation."""
    d = _run_dir(run_id, out_dir)
    config = RunStore(d).read_config()
    config.out_dir = str(out_dir)
    config.yes = config.yes or yes
    _run(config, resume=True)


@app.command()
def report(run_id: str, out_dir: Path = typer.Option(Path("runs"), "--out")) -> None:
    """Re-render the report of a run from its records (no model calls)."""
    from .graphs.evaluate import make_runtime, write_report, build_graph
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    d = _run_dir(run_id, out_dir)
    config = RunStore(d).read_config()
    config.out_dir = str(out_dir)

    async def go() -> str:
        rt = make_runtime(config)
        async with AsyncSqliteSaver.from_conn_string(str(d / "state.sqlite")) as saver:
            snap = await build_graph(rt, saver).aget_state({"configurable": {"thread_id": run_id}})
        if not snap.values.get("metric_plan"):
            raise SgievalError("the run has not chosen its metrics yet", what=run_id, fix=f"`sgieval resume {run_id}`")
        return str(await write_report(rt, snap.values))

    try:
        out.print(f"report: {asyncio.run(go())}")
    except SgievalError as e:
        _fail(e)


@app.command()
def runs(out_dir: Path = typer.Option(Path("runs"), "--out")) -> None:
    """List the runs in the runs folder with their status."""
    found = False
    for d in sorted(out_dir.glob("*/config.json")):
        store = RunStore(d.parent)
        cfg = store.read_config()
        n_r, n_s = (len(store.path(n).read_text().splitlines()) if store.path(n).exists() else 0
                    for n in ("responses", "scores"))
        status = "complete" if (d.parent / "report.md").exists() else "incomplete (sgieval resume)"
        out.print(f"{cfg.run_id}\t{status}\tresponses={n_r}\tscores={n_s}\t{cfg.request!r}", soft_wrap=True,
                  highlight=False)
        found = True
    if not found:
        out.print(f"no runs in {out_dir}")


@app.command()
def catalog(benchmark: Optional[list[str]] = typer.Option(None, "--benchmark", "-b"),
            data_dir: Optional[Path] = typer.Option(None, "--data-dir"),
            as_json: bool = typer.Option(False, "--json")) -> None:
    """Print item counts per facet (benchmark, task, discipline, direction, type)."""
    from .benchmarks.catalog import FACETS, load_catalog

    try:
        cat = load_catalog(_split(benchmark) or None, str(data_dir) if data_dir else None)
    except SgievalError as e:
        _fail(e)
    counts = {f: dict(sorted(cat.counts(f).items())) for f in FACETS}
    if as_json:
        out.print_json(json.dumps({"items": len(cat.items), "facets": counts, "unavailable": cat.unavailable}))
        return
    out.print(f"[bold]{len(cat.items)} items[/]")
    for f in FACETS:
        t = Table(f, "items")
        for v, n in counts[f].items():
            t.add_row(v or "(none)", str(n))
        out.print(t)
    for b, why in cat.unavailable.items():
        out.print(f"[yellow]not loaded[/] {b}: {why}", soft_wrap=True)


@data_app.command("pull")
def data_pull(benchmark: str = typer.Argument(..., help="sciaidanbench or sgi-bench")) -> None:
    """Download a benchmark's public data into the user cache (needs the network)."""
    from .benchmarks.data import pull

    try:
        dest = pull(benchmark)
    except SgievalError as e:
        _fail(e)
    out.print(f"{benchmark}: {dest}")


@data_app.command("where")
def data_where() -> None:
    """Show the data lookup order and what each location holds."""
    from .benchmarks.data import BENCHMARK_DIRS, data_roots

    for root in data_roots(os.environ.get("SGIEVAL_DATA")):
        held = [b for b, sub in BENCHMARK_DIRS.items() if (root / sub).is_dir()]
        out.print(f"{root}: {', '.join(held) or '-'}")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
