"""The commands of ``sgieval`` (typer + rich), with those of :mod:`.view`, :mod:`.metric` and :mod:`.labels`
registered here; the process around a command (start-up, last-resort handler, exit codes) is :mod:`.process`."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import click
import typer
from rich.console import Console
from rich.table import Table

from ..core import BUDGET_STOP_NOTE, InputError, RunConfig, RunStore, SgievalError, check_state_file
from ..core import escape_control_chars, is_own_run, is_trusted, option_names, read_bytes_in, read_text_in, remember
from ..core import remember_run, run_begins, run_options, sensitive_settings
from .labels import label, labels_app
from .metric import metric_app
from .output import err, exit_on_error, fail, out, safe
from .process import CommandLine
from .progress import RunProgress
from .runfolder import ask_yes, confirm_agent_settings, confirm_settings, given_settings, read_config, read_state
from .runfolder import rerender_report, resume_ref, run_dir, split, unexpected
from .view import view

app = CommandLine(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: no <bool> placeholders
    help="sgieval: agentic evaluation of scientific LLMs (SGI-Bench, SciAidanBench, SFBench, JSONL).",
)
data_app = typer.Typer(help="Benchmark data: where it is, and how to fetch it.", rich_markup_mode=None)
app.add_typer(data_app, name="data")
app.add_typer(metric_app, name="metric")
app.add_typer(labels_app, name="labels")
app.command("label")(label)
app.command()(view)

_OPTIONS = {o.field: o for o in run_options(RunConfig)}
RUN_ARG = "Run id, run folder, or its report.md."
OUT_HELP = "Folder holding run folders (for a run id)."


def _run_flag(field: str, help: str | None = None, default: Any = None) -> Any:
    """The typer option of RunConfig field ``field`` outside ``ask`` (``help``: instead of the field's)."""
    o = _OPTIONS[field]
    return typer.Option(default, o.flag, *[o.short] * bool(o.short), help=help or o.cli_help)


def _check_targets(config: RunConfig) -> None:
    """Without ``--models`` the targets are the stored SciAidanBench models: InputError when there are none."""
    if config.models:
        return
    from ..benchmarks import find_benchmark_dir, list_response_files, load_catalog

    try:
        folder = find_benchmark_dir("sciaidanbench", config.data_dir, required=False)
    except SgievalError:
        return  # the data folder itself is wrong: load_catalog reports it
    if folder is None or not list_response_files(folder):
        load_catalog(config.benchmarks or None, config.data_dir)  # no benchmark data at all: that is the first error
        where = f"{folder / 'responses'}" if folder is not None else "<data>/sciaidanbench/responses/"
        raise InputError(
            f"no target models were given and no stored responses were found in {where}",
            what="--models",
            fix="pass --models replay:<name|file> or openai:<model> (comma-separated), "
            "or put stored responses in <data>/sciaidanbench/responses/",
        )


def _drop_new_folder(rt: Any, resume: bool) -> bool:
    """Remove the run folder when this call made it and nothing was evaluated in it; whether it was removed."""
    if resume or not rt.store.created or rt.store.read("responses"):
        return False
    rt.store.close()
    shutil.rmtree(rt.store.root, ignore_errors=True)
    return True


def _confirmer(progress: Any) -> Callable[[dict], bool]:
    """The metric confirmation (and a misspelt request word's question) asked on stderr, the progress paused."""

    def confirm(payload: dict) -> bool:
        progress.pause()
        if payload.get("kind") == "did_you_mean":  # a misspelt request word (the questioning agent)
            err.print(safe(payload["question"]), highlight=False, soft_wrap=True)
            ok = ask_yes(f"Ask \"{safe(payload['request'])}\" instead?", default=True)  # no answer: the run stops
        else:
            _print_metrics(payload)
            _print_estimate(payload.get("estimate"))
            ok = ask_yes("Run with these metrics?", default=True)
        progress.resume()
        return ok

    return confirm


def _execute(rt: Any, config: RunConfig, resume: bool, ref: str) -> dict[str, Any]:
    """Run the graph under the progress display; an interruption or failure ends the command with one line."""
    from ..graphs import execute

    batches = lambda: rt.calls.batches if rt.calls is not None else None  # noqa: E731 - --batch: pending batches
    every = float(getattr(getattr(rt, "settings", None), "progress_every", 10.0))  # SGIEVAL_PROGRESS_EVERY
    with RunProgress(err, lambda: rt.ledger, every_s=every, batches_of=batches) as progress:
        rt.on_progress = progress.update
        run_begins()
        try:
            return asyncio.run(execute(rt, resume=resume, confirm=_confirmer(progress)))
        except SgievalError as e:
            fail(e)
        except KeyboardInterrupt:
            progress.stop()
            err.print(
                f"interrupted; every finished response and score is kept: continue with `sgieval resume {safe(ref)}`",
                soft_wrap=True,
            )
            raise typer.Exit(130) from None
        except (typer.Exit, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as e:  # noqa: BLE001 - one line on the terminal, the traceback in the run's log
            progress.stop()
            unexpected(e, rt.store.root if rt.store.root.is_dir() else None, config.run_id, ref)


def _run(config: RunConfig, *, resume: bool, run_dir: Path | None = None, kind: str = "") -> None:
    """Run or (``resume``) continue ``config``'s run in ``run_dir``; a folder it made is removed on failure if empty."""
    from ..graphs import check_request_models, make_runtime

    with exit_on_error():  # an --into under --dry-run reads the run folder only: nothing in it is made or changed
        rt = make_runtime(config, run_dir=run_dir, read_only=kind == "into" and config.dry_run)
    rt.argv, rt.invocation_kind = list(sys.argv[1:]), kind
    ref = resume_ref(rt.store.root, config.run_id)
    for m in [*rt.targets, *rt.judges, *([rt.agent] if rt.agent else [])]:
        for param, why in m.dropped.items():  # the run header says what is not sent
            err.print(safe(f"{m.name} ({m.role}): {param} not sent: {why}"), soft_wrap=True, highlight=False)
    if not resume:
        try:
            check_request_models(rt)  # before the progress bar: the error is the only line printed
        except SgievalError as e:
            _drop_new_folder(rt, resume)
            fail(e)
    state = _execute(rt, config, resume, ref)
    if config.dry_run and state.get("estimate") is not None:
        if state.get("dry_run_metrics"):
            _print_metrics(state["dry_run_metrics"], out)
        _print_estimate(state["estimate"], out)
        _drop_new_folder(rt, resume)
        err.print("dry run: no target or judge call was made", soft_wrap=True)
        return
    if state.get("confirmed") is False:
        if _drop_new_folder(rt, resume):  # no run folder left to resume (never one it was given)
            err.print(
                "cancelled at the metric confirmation; nothing was evaluated and no run folder was kept", soft_wrap=True
            )
        else:
            err.print("cancelled at the metric confirmation; nothing new was evaluated")
        raise typer.Exit(3)
    if "__interrupt__" in state or not state.get("report"):
        err.print(f"stopped before the report; continue with `sgieval resume {safe(ref)}`")
        raise typer.Exit(3)
    out.print(f"report: {safe(state['report'])}", soft_wrap=True, highlight=False)


def _print_metrics(payload: dict, console: Console = err) -> None:
    """Print the metric confirmation's payload (metrics, ranking metric, needs with fixes, notes) on ``console``."""
    from ..agents import MetricNeeds

    console.print("[bold]Metrics for this run[/]")
    console.print(f"  predefined: {safe(', '.join(payload['predefined']))}", highlight=False, soft_wrap=True)
    if payload.get("custom"):
        console.print(f"  custom: {safe(', '.join(payload['custom']))}", highlight=False, soft_wrap=True)
    console.print(f"  ranking by: {safe(payload['primary'])}", highlight=False)
    for need in payload.get("needs") or []:
        console.print(f"  - {safe(MetricNeeds.model_validate(need).line())}", highlight=False, soft_wrap=True)
    for n in payload.get("notes") or []:
        console.print(f"  note: {safe(n)}", highlight=False, soft_wrap=True)


def _print_estimate(estimate: dict | None, console: Console = err) -> None:
    """Print the run's estimate before any call on ``console`` (default stderr)."""
    if not estimate:
        return
    console.print("[bold]Estimate before any call[/]")
    for line in estimate.get("lines") or []:
        console.print(f"  {safe(line)}", highlight=False, soft_wrap=True)


def options_command(config_cls: type[RunConfig], run: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
    """A Typer command whose options are the run options of ``config_cls`` (:func:`sgieval.core.run_options`), with
    ``request`` the argument.

    Args:
        config_cls: RunConfig or a subclass (a new field is a new option).
        run: called with the fields the command line gives (a list option not given is left out; ``--no-cache``
            gives ``use_cache=False``).

    Returns:
        The command function, for ``app.command(...)``.
    """
    opts = [o for o in run_options(config_cls) if o.cli]
    params, hints = [], {}
    for o in opts:
        if o.positional:
            default: Any = typer.Argument(o.default, help=o.help)
        else:  # a list not given is None; a switch-off flag is False until given
            value = (list(o.default) or None) if o.is_list else (False if o.switches_off else o.default)
            default = typer.Option(value, o.flag, *[o.short] * bool(o.short), help=o.cli_help)
        params.append(inspect.Parameter(o.field, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default))
        hints[o.field] = Optional[o.scalar] if o.is_list or o.default is None else o.scalar

    def command(**given: Any) -> None:
        fields = {
            o.field: (not given[o.field]) if o.switches_off else given[o.field]
            for o in opts
            if not (o.is_list and given[o.field] is None)
        }
        run(fields)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {**hints, "return": None}
    return command


def _ask(fields: dict[str, Any]) -> None:
    """``sgieval ask``: validate the options (the same RunConfig validation as the Python API), then run."""
    from ..graphs import new_run_id

    with exit_on_error():
        config = RunConfig.checked(
            option_names(RunConfig, "cli"), run_id=new_run_id(fields.get("request", "")), **fields
        )
        if not config.into:
            _check_targets(config)
    if config.into:
        _ask_into(config, fields)
    else:
        _run(config, resume=False)


def _ask_into(config: RunConfig, fields: dict[str, Any]) -> None:
    """``ask ... --into RUN``: add models, judge or metric to RUN and rewrite its report (confirmed as resume)."""
    from ..graphs import into_run

    given = [f for f, v in fields.items() if f != "into" and v != _OPTIONS[f].default]
    with exit_on_error():
        merged, d = asyncio.run(into_run(config, given))
    again = {
        k: getattr(merged, k)
        for k in sensitive_settings(config)
        if k in given and k not in ("models", "judges", "added_judges")
    }
    base = read_config(d)
    # what this invocation adds is the user's choice; the folder's settings are confirmed first unless they are the
    # user's own (this machine started or confirmed the run)
    confirm_settings(merged, d, again, is_trusted(base), trust_flag=None)
    if not merged.dry_run:  # the grown run is the user's own too: resuming it here asks nothing
        remember(merged)
        if is_own_run(base):
            remember_run(merged)
    _run(merged, resume=True, run_dir=d, kind="into")


ask = app.command("ask", help="Answer a plain-language evaluation request and write runs/<run_id>/report.md.")(
    options_command(RunConfig, _ask)
)


def _stopped_at_budget(d: Path) -> bool:
    """Whether the report in run folder ``d`` says the run stopped at its budget."""
    try:
        text = read_bytes_in(d, d / "report.md").decode("utf-8", "replace")
    except (OSError, SgievalError):  # missing, or a link (never followed)
        return False
    return BUDGET_STOP_NOTE in text


async def _reopen_budget_stopped(config: RunConfig, d: Path) -> bool:
    """Step a budget-stopped run's checkpoint back to after the metric confirmation; whether it was reopened."""
    from ..graphs import build_graph, make_runtime, open_saver

    if not (d / "state.sqlite").exists():
        return False
    rt = make_runtime(config, run_dir=d)
    thread = {"configurable": {"thread_id": config.run_id}}
    async with open_saver(d / "state.sqlite") as saver:
        graph = build_graph(rt, saver)
        snap = await graph.aget_state(thread)
        if snap.next or not (snap.values.get("evaluated") or {}).get("budget_stopped"):
            return False
        await graph.aupdate_state(thread, {"confirmed": True}, as_node="confirm")
    return True


@app.command()
def resume(
    run: str = typer.Argument(..., metavar="RUN", help=RUN_ARG),
    out_dir: Path = typer.Option(Path("runs"), "--out", help=OUT_HELP),
    budget: Optional[float] = _run_flag(
        "budget_usd",
        "New budget in USD (total for the run, including what was already spent). A run stopped at its budget "
        "continues with the items it did not reach.",
    ),
    yes: bool = _run_flag("yes", default=False),
    base_url: Optional[str] = _run_flag(
        "base_url",
        "Base URL of the OpenAI-compatible server to use (instead of the one in the run's config.json, which is "
        "used only once confirmed; '' for none).",
    ),
    sandbox: Optional[str] = _run_flag("sandbox", "Sandbox backend (as for `ask`)."),
    tools: Optional[str] = _run_flag("tools", "Tool pool (as for `ask`; '' for none)."),
    unsafe_local_exec: Optional[bool] = typer.Option(
        None,
        "--unsafe-local-exec/--no-unsafe-local-exec",
        help="Allow (or refuse) running model code without a sandbox.",
    ),
    price: Optional[list[str]] = _run_flag(
        "prices",
        "Price of a model as MODEL=IN,OUT, USD per 1M input and output tokens (repeatable; as for `ask`), "
        "added to the run's.",
    ),
    trust_config: bool = typer.Option(
        False,
        "--trust-config",
        help="Use the base URL, sandbox, tools and unsafe-local-exec setting of the run's config.json without asking.",
    ),
) -> None:
    """Continue a run that was killed, stopped at the confirmation, or stopped at its budget.

    A run folder may come from someone else: the settings of its config.json that send data or run code
    elsewhere (base URL, unsafe local execution, a remote sandbox, tools) are shown and used only once
    confirmed, or when passed again (--base-url, --sandbox, --tools, --unsafe-local-exec, --trust-config)."""
    given = given_settings(base_url, sandbox, tools, unsafe_local_exec)
    with exit_on_error():
        RunConfig.checked(
            option_names(RunConfig, "cli"), run_id="resume", budget_usd=budget, prices=price or [], **given
        )
    d = run_dir(run, out_dir)
    config = read_config(d)
    # a received folder's "yes" never skips the metric confirmation: only --yes, or the user's own run's
    config.yes = yes or (config.yes and is_own_run(config))
    if price:
        config.prices = [*config.prices, *price]
        RunStore(d).write_config(config)  # the report and later resumes price with them too
    confirm_settings(config, d, given, trust_config)
    with exit_on_error():
        check_state_file(d / "state.sqlite")
        if budget is not None:
            config.budget_usd = budget
            RunStore(d).write_config(config)  # the report header and later resumes see the new budget
            if asyncio.run(_reopen_budget_stopped(config, d)):
                err.print(f"continuing the run stopped at its budget with a budget of {budget} USD")
    if budget is None and _stopped_at_budget(d):
        err.print(
            f"this run stopped at its budget ({config.budget_usd} USD); to evaluate the rest, pass a larger "
            f"one: `sgieval resume {safe(resume_ref(d, config.run_id))} --budget <USD>`",
            soft_wrap=True,
        )
    _run(config, resume=True, run_dir=d)


@app.command()
def report(
    run: str = typer.Argument(..., metavar="RUN", help=RUN_ARG),
    out_dir: Path = typer.Option(Path("runs"), "--out", help=OUT_HELP),
    base_url: Optional[str] = _run_flag(
        "base_url",
        "Base URL for the agent model that writes the narrative (instead of the one in the run's config.json, "
        "which is used only once confirmed).",
    ),
    trust_config: bool = typer.Option(
        False, "--trust-config", help="Use the base URL of the run's config.json without asking."
    ),
) -> None:
    """Re-render the report of a run from its records (no model calls but the agent model's narrative)."""
    d = run_dir(run, out_dir)
    config = read_config(d)
    confirm_agent_settings(config, d, base_url, trust_config)  # only the agent model (the narrative) is called
    run_begins()
    try:
        out.print(f"report: {safe(asyncio.run(rerender_report(d, config)))}", soft_wrap=True, highlight=False)
    except SgievalError as e:
        fail(e)
    except (typer.Exit, click.exceptions.Exit):
        raise
    except Exception as e:  # noqa: BLE001 - one line (a full disk names the disk), the traceback in log.jsonl
        unexpected(e, d, config.run_id)


@app.command()
def export(
    run: str = typer.Argument(..., metavar="RUN", help=RUN_ARG),
    fmt: str = typer.Option("parquet", "--format", "-f", help="parquet | jsonl | csv"),
    dest: Optional[Path] = typer.Option(None, "--dest", help="Output folder (default: runs/<id>/export)."),
    out_dir: Path = typer.Option(Path("runs"), "--out", help=OUT_HELP),
) -> None:
    """Write the run's items, responses and scores as tables (one row per score with the item's facets)."""
    from ..reports import export_run

    d = run_dir(run, out_dir)
    with exit_on_error():
        paths = export_run(d, fmt.lower(), dest)
    for p in paths:
        out.print(safe(p), soft_wrap=True, highlight=False)


@app.command()
def runs(
    out_dir: Path = typer.Option(Path("runs"), "--out", help="Folder holding run folders."),
    as_json: bool = typer.Option(False, "--json", help="Print the index as one JSON list (one object per run)."),
) -> None:
    """List the runs in the runs folder, newest first: status, date, request, benchmark and items, target models,
    judge, the ranking metric's winner as the run's report states it (or the tie), and cost.  Read only: a folder
    that cannot be read (a link in it, an unreadable config.json) is listed with the reason."""
    from ..reports import list_runs

    entries = list_runs(out_dir, read_state=read_state)
    if as_json:
        out.print_json(data=[e.to_dict() for e in entries])
        return
    for e in entries:
        if e.status == "broken" and not e.run_id:
            out.print(safe(f"{e.folder}\tunreadable: {e.problem}"), soft_wrap=True, highlight=False)
            continue
        c = e.cells()
        status = c["status"] if e.status != "incomplete" else "incomplete (sgieval resume)"
        if e.status == "stopped" and "budget" in e.status_detail:
            status = "stopped at its budget (sgieval resume <run> --budget USD)"
        elif e.status == "running":
            status = f"running ({e.status_detail})" if e.status_detail else "running"
        lines = [
            f"{e.run_id}\t{status}\tresponses={e.responses}\tscores={e.scores}\t{e.request!r}",
            f"    started {c['date']} UTC; {c['benchmark']}; target models: {c['models']}; judge: {c['judge']}",
            f"    winner: {c['winner']}; cost (USD): {c['cost']}",
        ]
        if e.problem:
            lines.append(f"    problem: {e.problem}")
        for line in lines:
            out.print(safe(line), soft_wrap=True, highlight=False)
    if not entries:
        out.print(f"no runs in {safe(out_dir)}", highlight=False)


@app.command()
def compare(
    runs_: list[str] = typer.Argument(
        ...,
        metavar="RUN_A RUN_B [RUN...]",
        help="Run ids, run folders or their report.md (two or more; the first is the baseline).",
    ),
    out_dir: Path = typer.Option(Path("runs"), "--out", help="Folder holding run folders (for run ids)."),
    dest: Optional[Path] = typer.Option(
        None, "--dest", help="Folder for compare.md, compare.json and index.html (default: <out>/compare-<a>-<b>)."
    ),
    metric: Optional[str] = typer.Option(
        None, "--metric", help="The ranking metric (default: the runs' own ranking metric, if every run scored it)."
    ),
    resamples: int = typer.Option(10000, "--resamples", help="Resamples of the paired tests and bootstrap CIs."),
    seed: int = typer.Option(0, "--seed", help="Random seed of the paired tests and bootstrap CIs."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the comparison as JSON (compare.json) instead of Markdown."
    ),
) -> None:
    """Compare runs: items matched by id, models by name.  The same model in two runs gets a paired comparison on the
    shared items (difference, 95% CI, paired permutation test: a change is real only when p < 0.05); every model is
    ranked together on the items all runs share; what is not shared is counted and named.  Prints the Markdown report
    and writes it with its viewer page to <out>/compare-<a>-<b>/ (compare.md, compare.json, index.html)."""
    from ..api import compare as compare_runs
    from ..reports import COMPARE_PREFIX

    if len(runs_) < 2:
        fail(InputError("a comparison needs two runs or more", what="RUN", fix="give two run ids or run folders"))
    dirs = [run_dir(r, out_dir) for r in runs_]
    try:
        result = compare_runs(*dirs, metric=metric, n_resamples=resamples, seed=seed)
        folder = dest if dest is not None else out_dir / (COMPARE_PREFIX + "-".join(result.run_ids))
        if dest is None and len(folder.name) > 200:  # a file name's limit is 255 bytes
            digest = hashlib.sha256("\n".join(result.run_ids).encode()).hexdigest()[:12]
            folder = out_dir / f"{COMPARE_PREFIX}{len(result.run_ids)}-runs-{digest}"
        try:
            paths = result.write(folder)
        except OSError as e:  # a read-only runs folder (runs received from someone else): name it, give the fix
            raise InputError(
                f"cannot write the comparison ({e.strerror or e})",
                what=str(folder),
                fix="pass `--dest FOLDER`, a folder you can write (the run folders are only read)",
            ) from None
    except SgievalError as e:
        fail(e)
    except OSError as e:
        unexpected(e)
    if as_json:
        typer.echo(read_text_in(paths["json"].parent, paths["json"]))
        return
    typer.echo(escape_control_chars(result.to_markdown()))
    out.print(f"report: {safe(paths['markdown'])}", soft_wrap=True, highlight=False)
    out.print(f"viewer: {safe(paths['page'])}", soft_wrap=True, highlight=False)


@app.command()
def catalog(
    benchmark: Optional[list[str]] = _run_flag("benchmarks"),
    data_dir: Optional[Path] = _run_flag("data_dir"),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as one JSON object."),
) -> None:
    """Print item counts per facet (benchmark, task, discipline, direction, type) and the models with stored
    responses per benchmark (usable as replay:<name> without a model call)."""
    from ..benchmarks import FACETS, load_catalog, stored_responses

    with exit_on_error():
        cat = load_catalog(split(benchmark) or None, str(data_dir) if data_dir else None)
        stored, unreadable = stored_responses(cat, str(data_dir) if data_dir else None)
    counts = {f: dict(sorted(cat.counts(f).items())) for f in FACETS}
    if as_json:
        out.print_json(
            data={
                "items": len(cat.items),
                "facets": counts,
                "unavailable": cat.unavailable,
                "stored_responses": stored,
                "unreadable_responses": unreadable,
                "files_not_read": cat.skipped,
            }
        )
        return
    out.print(f"[bold]{len(cat.items)} items[/]")
    for f in FACETS:
        t = Table(f, "items")
        for v, n in counts[f].items():
            t.add_row(safe(v) if v else "(none)", str(n))
        out.print(t)
    t = Table(
        "benchmark", "stored responses (--models replay:<name>)", "items answered", title="models with stored responses"
    )
    for b in sorted({i.benchmark for i in cat.items}):
        models = stored.get(b) or {}
        if not models:
            t.add_row(safe(b), "none (run models live: --models openai:<model>, ...)", "-")
        for m, n in sorted(models.items()):
            t.add_row(safe(b), safe(m), str(n))
    out.print(t)
    for path, why in unreadable.items():
        out.print(f"[yellow]unreadable stored responses[/] {safe(path)}: {safe(why)}", soft_wrap=True)
    for b, files in cat.skipped.items():
        for f in files:
            out.print(f"[yellow]not read[/] {safe(b)}: {safe(f)}", soft_wrap=True, highlight=False)
    for b, why in cat.unavailable.items():
        out.print(f"[yellow]not loaded[/] {safe(b)}: {safe(why)}", soft_wrap=True)


@data_app.command("pull")
def data_pull(
    benchmark: str = typer.Argument(..., help="sciaidanbench or sgi-bench"),
    force: bool = typer.Option(False, "--force", help="Download again even when the data is already found."),
) -> None:
    """Download a benchmark's public data into the user cache (needs the network); when the data is already
    found (--data-dir/$SGIEVAL_DATA, ../shared/data, the user cache) only say where, offline included."""
    from ..benchmarks import find_benchmark_dir, pull

    if not force:
        try:
            found = find_benchmark_dir(benchmark, required=False)
        except SgievalError:
            found = None  # a named folder without it: the download goes to the user cache
        if found is not None:
            out.print(
                safe(f"{benchmark}: already present in {found} (nothing downloaded; --force downloads again)"),
                highlight=False,
                soft_wrap=True,
            )
            return
    with exit_on_error():
        dest = pull(benchmark)
    out.print(safe(f"{benchmark}: {dest}"), highlight=False)


@data_app.command("where")
def data_where() -> None:
    """Show the data lookup order and what each location holds."""
    from ..benchmarks import data_roots, registry

    for root in data_roots(os.environ.get("SGIEVAL_DATA")):
        held = [d.name for d in registry.with_data() if (root / d.data_folder).is_dir()]
        out.print(safe(f"{root}: {', '.join(held) or '-'}"), highlight=False)
