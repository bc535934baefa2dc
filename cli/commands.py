"""The commands of ``sgieval`` (typer + rich): ``ask``, ``resume``, ``report``, ``view``, ``export``, ``runs``,
``catalog``, ``data``; ``metric`` (:mod:`.metric`) and ``labels``/``label`` (:mod:`.labels`) are added here.

The process around a command (start-up, the last-resort handler, exit codes) is :mod:`.process`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import click
import typer
from rich.console import Console
from rich.table import Table

from .labels import label, labels_app
from .metric import metric_app
from ..core import (
    BUDGET_STOP_NOTE,
    InputError,
    RunConfig,
    RunStore,
    SgievalError,
    TamperedFileError,
    check_state_file,
    disk_error,
    escape_control_chars,
    is_disk_full,
    option_names,
    run_options,
)
from ..core import read_bytes_in, read_text_in
from .output import err, fail, out, safe
from .process import CommandLine, run_begins


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


def _unexpected(e: BaseException, run_dir: Path | None = None, run_id: str = "", ref: str | None = None) -> None:
    """One line for an exception that is not an SgievalError, never a traceback
    on the terminal: a full disk names the disk and its free
    space (exit 2); anything else names the exception (exit 1), and with a run
    folder ``run_dir`` its full traceback goes to ``run_dir/log.jsonl`` and the
    line says how to continue (``sgieval resume <ref>``)."""
    if is_disk_full(e):
        fail(disk_error(e, getattr(e, "filename", None) or run_dir or Path.cwd()))  # type: ignore[arg-type]
    first = str(e).splitlines()[0] if str(e) else ""
    line = f"unexpected {type(e).__name__}: {first}"
    if run_dir is not None:
        from ..core import log_traceback

        log_traceback(run_dir, run_id, e)
        line += (
            f"; the full traceback is in {run_dir / 'log.jsonl'}; every finished response and score is kept: "
            f"continue with `sgieval resume {ref or run_dir}`"
        )
    err.print(f"[bold red]error:[/] {safe(line)}", highlight=False, soft_wrap=True)
    raise typer.Exit(1)


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for x in values or [] for v in x.split(",") if v.strip()]


def _validation_reason(e: Exception) -> str:
    """One line for a pydantic ValidationError (``field: message; ...``) or any
    other exception (its last non-empty line), never the pydantic help URL."""
    errors = getattr(e, "errors", None)
    if callable(errors):
        try:
            return "; ".join(
                (f"{'.'.join(map(str, x['loc']))}: " if x.get("loc") else "") + str(x.get("msg", "")) for x in errors()
            )
        except Exception:  # noqa: BLE001 - fall back to the text
            pass
    lines = [
        ln.strip() for ln in str(e).splitlines() if ln.strip() and not ln.strip().startswith("For further information")
    ]
    return lines[-1] if lines else type(e).__name__


def _check_targets(config: RunConfig) -> None:
    """Without ``--models`` the targets are the stored SciAidanBench models
    (``<data>/sciaidanbench/responses/*.json``); raise InputError when there
    are none, so a run never "completes" with an empty ranking.  A data
    folder that cannot be searched is left to the catalog's own error."""
    if config.models:
        return
    from ..benchmarks import find_benchmark_dir
    from ..benchmarks import list_response_files

    try:
        folder = find_benchmark_dir("sciaidanbench", config.data_dir, required=False)
    except SgievalError:
        return  # the data folder itself is wrong: load_catalog reports it
    if folder is None or not list_response_files(folder):
        from ..benchmarks import load_catalog

        load_catalog(config.benchmarks or None, config.data_dir)  # no benchmark data at all: that is the first error
        where = f"{folder / 'responses'}" if folder is not None else "<data>/sciaidanbench/responses/"
        raise InputError(
            f"no target models were given and no stored responses were found in {where}",
            what="--models",
            fix="pass --models replay:<name|file> or openai:<model> (comma-separated), "
            "or put stored responses in <data>/sciaidanbench/responses/",
        )


def _resume_ref(run_dir: Path, run_id: str) -> str:
    """What ``sgieval resume`` needs, typed here, to find the run in ``run_dir``: its id when the folder is
    ``runs/<id>`` below the working directory (resume's default ``--out``), else the folder itself (quoted
    for the shell when needed), so the printed command works also after ``--out``."""
    import shlex

    try:
        default = run_dir.name == run_id and run_dir.parent.resolve() == Path("runs").resolve()
    except OSError:
        default = False
    return run_id if default else shlex.quote(str(run_dir))


def _progress_every(rt: Any) -> float:
    """Seconds between progress lines when stderr is no terminal (``SGIEVAL_PROGRESS_EVERY``, default 10)."""
    settings = getattr(rt, "settings", None)
    return float(getattr(settings, "progress_every", 10.0))


def _run(config: RunConfig, *, resume: bool, run_dir: Path | None = None, kind: str = "") -> None:
    """Run (``resume=False``) or continue the run of ``config`` in ``run_dir``
    (default ``<out_dir>/<run_id>``; ``resume`` passes the folder it was given,
    renamed or symlinked).  A folder is removed on failure or cancellation only
    when this call created it and nothing was evaluated."""
    from ..graphs import check_request_models, execute, make_runtime

    try:
        # an --into under --dry-run reads the run folder only: nothing in it is made or changed
        rt = make_runtime(config, run_dir=run_dir, read_only=kind == "into" and config.dry_run)
    except SgievalError as e:
        fail(e)
    rt.argv, rt.invocation_kind = list(sys.argv[1:]), kind
    ref = _resume_ref(rt.store.root, config.run_id)
    for m in [*rt.targets, *rt.judges, *([rt.agent] if rt.agent else [])]:
        for param, why in m.dropped.items():  # the run header says what is not sent
            err.print(safe(f"{m.name} ({m.role}): {param} not sent: {why}"), soft_wrap=True, highlight=False)
    if not resume:
        try:
            check_request_models(rt)  # before the progress bar: the error is the only line printed
        except SgievalError as e:
            if rt.store.created and not rt.store.read("responses"):
                shutil.rmtree(rt.store.root, ignore_errors=True)
            fail(e)
    from .progress import RunProgress

    batches = lambda: rt.calls.batches if rt.calls is not None else None  # noqa: E731 - --batch: pending batches
    with RunProgress(err, lambda: rt.ledger, every_s=_progress_every(rt), batches_of=batches) as progress:
        rt.on_progress = progress.update

        def confirm(payload: dict) -> bool:
            progress.pause()
            if payload.get("kind") == "did_you_mean":  # a misspelt request word (the questioning agent)
                err.print(safe(payload["question"]), highlight=False, soft_wrap=True)
                try:
                    ok = typer.confirm(f"Ask \"{safe(payload['request'])}\" instead?", default=True, err=True)
                except (typer.Abort, EOFError):  # stdin closed: not confirmed, the run stops (exit 2)
                    err.print("")
                    ok = False
                progress.resume()
                return ok
            _print_metrics(payload)
            _print_estimate(payload.get("estimate"))
            try:
                ok = typer.confirm("Run with these metrics?", default=True, err=True)
            except (typer.Abort, EOFError):  # stdin closed: the same as answering no
                err.print("")
                ok = False
            progress.resume()
            return ok

        run_begins()
        try:
            state = asyncio.run(execute(rt, resume=resume, confirm=confirm))
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
            kept = rt.store.root.is_dir()
            _unexpected(e, rt.store.root if kept else None, config.run_id, ref)
    if config.dry_run and state.get("estimate") is not None:
        if state.get("dry_run_metrics"):
            _print_metrics(state["dry_run_metrics"], out)
        _print_estimate(state["estimate"], out)
        if not resume and rt.store.created and not rt.store.read("responses"):
            rt.store.close()
            shutil.rmtree(rt.store.root, ignore_errors=True)
        err.print("dry run: no target or judge call was made", soft_wrap=True)
        return
    if state.get("confirmed") is False:
        # nothing evaluated in a folder this call made: no run folder left to resume (never one it was given)
        if not resume and rt.store.created and not rt.store.read("responses"):
            rt.store.close()
            shutil.rmtree(rt.store.root, ignore_errors=True)
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


def _print_metrics(payload: dict, console: Console | None = None) -> None:
    """Print the metric confirmation's payload (:func:`sgieval.agents.run.confirmation`): the metrics, the ranking
    metric, what each metric needs and whether it is available (with the fix), and the plan's notes, on
    ``console`` (default stderr, beside the question)."""
    from ..agents import MetricNeeds

    console = console or err
    console.print("[bold]Metrics for this run[/]")
    console.print(f"  predefined: {safe(', '.join(payload['predefined']))}", highlight=False, soft_wrap=True)
    if payload.get("custom"):
        console.print(f"  custom: {safe(', '.join(payload['custom']))}", highlight=False, soft_wrap=True)
    console.print(f"  ranking by: {safe(payload['primary'])}", highlight=False)
    for need in payload.get("needs") or []:
        console.print(f"  - {safe(MetricNeeds.model_validate(need).line())}", highlight=False, soft_wrap=True)
    for n in payload.get("notes") or []:
        console.print(f"  note: {safe(n)}", highlight=False, soft_wrap=True)


def _print_estimate(estimate: dict | None, console: Console | None = None) -> None:
    """Print the run's estimate (the ``lines`` of :func:`sgieval.agents.estimate.estimate_step`) under its heading,
    on ``console`` (default stderr, beside the confirmation)."""
    if not estimate:
        return
    console = console or err
    console.print("[bold]Estimate before any call[/]")
    for line in estimate.get("lines") or []:
        console.print(f"  {safe(line)}", highlight=False, soft_wrap=True)


def options_command(config_cls: type[RunConfig], run: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
    """A Typer command whose options are the run options of ``config_cls`` (:func:`sgieval.core.run_options`):
    each field's flag(s), type, default and help (its docstring); ``request`` is the argument.

    Args:
        config_cls: RunConfig or a subclass (a new field is a new option, with nothing else to write).
        run: called with the RunConfig fields the command line gives (field name -> value; a list option not
            given is left out, so the field's default holds; ``--no-cache`` gives ``use_cache=False``).

    Returns:
        The command function, for ``app.command(...)``.
    """
    import inspect

    opts = [o for o in run_options(config_cls) if o.cli]
    params, hints = [], {}
    for o in opts:
        if o.positional:
            default: Any = typer.Argument(o.default, help=o.help)
            kind = o.scalar
        elif o.is_list:
            kind = Optional[o.scalar]
            default = typer.Option(list(o.default) or None, o.flag, *[o.short] * bool(o.short), help=o.help)
        elif o.switches_off:
            kind = bool
            default = typer.Option(False, o.flag, *[o.short] * bool(o.short), help=o.cli_help)
        else:
            kind = o.scalar if o.default is not None else Optional[o.scalar]
            default = typer.Option(o.default, o.flag, *[o.short] * bool(o.short), help=o.help)
        params.append(inspect.Parameter(o.field, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default))
        hints[o.field] = kind

    def command(**given: Any) -> None:
        fields: dict[str, Any] = {}
        for o in opts:
            v = given[o.field]
            if o.is_list and v is None:
                continue
            fields[o.field] = (not v) if o.switches_off else v
        run(fields)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {**hints, "return": None}
    return command


def _ask(fields: dict[str, Any]) -> None:
    """``sgieval ask``: validate the options (the same RunConfig validation as the Python API), then run."""
    from ..graphs import new_run_id

    try:
        config = RunConfig.checked(
            option_names(RunConfig, "cli"), run_id=new_run_id(fields.get("request", "")), **fields
        )
    except SgievalError as e:
        fail(e)
    if config.into:
        _ask_into(config, fields)
        return
    try:
        _check_targets(config)
    except SgievalError as e:
        fail(e)
    _run(config, resume=False)


def _ask_into(config: RunConfig, fields: dict[str, Any]) -> None:
    """``sgieval ask ... --into RUN``: add the given target models, judge or metric to the run RUN (its records
    reused) and rewrite its report.  The run's folder is data: the settings of its config.json that send data or
    run code elsewhere are used only when given again, trusted or confirmed, as for ``resume``."""
    from ..graphs import into_run

    defaults = {o.field: o.default for o in run_options(RunConfig) if o.cli}
    given = [f for f, v in fields.items() if f != "into" and v != defaults.get(f)]
    try:
        merged, d = asyncio.run(into_run(config, given))
    except SgievalError as e:
        fail(e)
    from ..core import is_own_run, is_trusted, remember, remember_run, sensitive_settings

    again = {
        k: getattr(merged, k)
        for k in sensitive_settings(config)
        if k in given and k not in ("models", "judges", "added_judges")
    }
    base = _read_config(d)
    if is_trusted(base):  # the run's own settings are the user's (this machine started or confirmed the run)
        for k, v in again.items():
            setattr(merged, k, v)
    else:  # what this invocation adds is the user's choice; the folder's settings are confirmed first
        _confirm_settings(merged, d, again, False, trust_flag=None)
    if not merged.dry_run:  # the grown run is the user's own too: resuming it here asks nothing
        remember(merged)
        if is_own_run(base):
            remember_run(merged)
    _run(merged, resume=True, run_dir=d, kind="into")


ask = app.command("ask", help="Answer a plain-language evaluation request and write runs/<run_id>/report.md.")(
    options_command(RunConfig, _ask)
)


def _run_dir(run: str, out_dir: Path) -> Path:
    """The run folder named by ``run``: a run id (looked up in ``out_dir``), a
    path to the run folder, or a path to a file in it (e.g. the
    ``runs/<id>/report.md`` that ``ask`` prints).  Fails (exit 2) when none of
    these holds a ``config.json``."""
    p = Path(run).expanduser()
    for d in (out_dir / run, p, p.parent if p.suffix else None):
        if d is not None and (d / "config.json").is_file():
            return d
    fail(
        InputError(
            "no such run",
            what=run,
            fix=f"give a run id listed by `sgieval runs --out {out_dir}`, the run folder, or its report.md",
        )
    )
    raise AssertionError  # unreachable: fail exits


def _read_config(d: Path) -> RunConfig:
    """``d/config.json`` as a RunConfig whose ``out_dir`` is ``d``'s parent;
    fails (exit 2) with the file and the reason when it cannot be read."""
    try:
        config = RunStore(d, read_only=True).read_config()
    except SgievalError as e:
        fail(e)
    except (ValueError, OSError) as e:
        fail(
            InputError(
                f"unreadable run config ({_validation_reason(e)})",
                what=str(d / "config.json"),
                fix="restore the file, or start a new run with `sgieval ask`",
            )
        )
    config.out_dir = str(d.parent)
    return config


def _confirm_settings(
    config: RunConfig,
    d: Path,
    given: dict[str, Any],
    trust: bool,
    only: tuple[str, ...] | None = None,
    *,
    trust_flag: str | None = "--trust-config",
) -> None:
    """Before ``resume``/``report``/``view`` use a run's ``config.json`` with the
    user's credentials: the settings that send data or run
    code elsewhere (:func:`sgieval.core.trust.sensitive_settings`; ``only``
    restricts them, e.g. to ``base_url`` when only the agent model is called)
    are used only when given again on the command line (``given`` replaces
    them in ``config``), ``--trust-config`` is passed, they are the user's own
    (this machine started or confirmed a run with them), or the user confirms
    them at the prompt, which shows each of them.  Fails (exit 2) otherwise,
    naming each setting and the flag that passes it (``trust_flag``: the
    command's option that accepts them all; None for a command without one,
    e.g. ``ask --into``, whose fix is the prompt)."""
    from ..core import FLAGS, is_trusted, remember, sensitive_settings

    for k, v in given.items():
        setattr(config, k, v)
    pending = {k: v for k, v in sensitive_settings(config).items() if k not in given and (only is None or k in only)}
    if not pending or trust or is_trusted(config):
        return
    shown = "; ".join(f"{k} = {v}" for k, v in pending.items())
    err.print(
        f"{safe(d / 'config.json')} asks for settings that send data or run code elsewhere, or models billed to "
        f"your key: {safe(shown)}",
        soft_wrap=True,
        highlight=False,
    )
    try:
        ok = typer.confirm("Use them with your credentials?", default=False, err=True)
    except (typer.Abort, click.exceptions.Abort, EOFError):  # no answer (stdin closed): not confirmed
        err.print("")
        ok = False
    if not ok:
        flags = [f for f in (FLAGS.get(k) for k in pending) if f]
        again = f"pass them again ({', '.join(flags)}) or " if flags else ""
        if trust_flag is None:
            fix = again + "answer y at the prompt after checking them"
        else:
            fix = (again or "pass ") + f"{trust_flag} after checking them"
        fail(InputError(f"not confirmed: {shown}", what=str(d / "config.json"), fix=fix))
    remember(config)


def _given_settings(
    base_url: str | None, sandbox: str | None, tools: str | None, unsafe_local_exec: bool | None
) -> dict[str, Any]:
    """The sensitive settings passed on the ``resume`` command line (``--base-url ''``: no base URL)."""
    given: dict[str, Any] = {}
    if base_url is not None:
        given["base_url"] = base_url or None
    if sandbox is not None:
        given["sandbox"] = sandbox
    if tools is not None:
        given["tools"] = _split([tools])
    if unsafe_local_exec is not None:
        given["unsafe_local_exec"] = unsafe_local_exec
    return given


def _stopped_at_budget(d: Path) -> bool:
    """Whether the report in run folder ``d`` says the run stopped at its budget."""
    try:
        text = read_bytes_in(d, d / "report.md").decode("utf-8", "replace")
    except (OSError, SgievalError):  # missing, or a link (never followed)
        return False
    return BUDGET_STOP_NOTE in text


async def _reopen_budget_stopped(config: RunConfig, d: Path) -> bool:
    """If the run's graph finished with a budget stop, step its checkpoint back
    to just after the metric confirmation so :func:`execute` evaluates the
    remaining units (done responses and scores are skipped) and rewrites the
    report.  Returns True when the run was reopened."""
    from ..graphs import open_saver
    from ..graphs import build_graph, make_runtime

    if not (d / "state.sqlite").exists():
        return False
    check_state_file(d / "state.sqlite")
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
    run: str = typer.Argument(..., metavar="RUN", help="Run id, run folder, or its report.md."),
    out_dir: Path = typer.Option(Path("runs"), "--out", help="Folder holding run folders (for a run id)."),
    budget: Optional[float] = typer.Option(
        None,
        "--budget",
        help="New budget in USD (total for the run, "
        "including what was already spent). A run stopped at its budget "
        "continues with the items it did not reach.",
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not pause to confirm the metrics."),
    base_url: Optional[str] = typer.Option(
        None,
        "--base-url",
        help="Base URL of the OpenAI-compatible "
        "server to use (instead of the one in the run's config.json, which "
        "is used only once confirmed; '' for none).",
    ),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", help="Sandbox backend (as for `ask`)."),
    tools: Optional[str] = typer.Option(None, "--tools", help="Tool pool (as for `ask`; '' for none)."),
    unsafe_local_exec: Optional[bool] = typer.Option(
        None,
        "--unsafe-local-exec/--no-unsafe-local-exec",
        help="Allow (or refuse) running model code without a sandbox.",
    ),
    price: Optional[list[str]] = typer.Option(
        None,
        "--price",
        help="Price of a model as MODEL=IN,OUT, USD per 1M input and output tokens (repeatable; as for `ask`), "
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
    given = _given_settings(base_url, sandbox, tools, unsafe_local_exec)
    try:
        RunConfig.checked(
            option_names(RunConfig, "cli"), run_id="resume", budget_usd=budget, prices=price or [], **given
        )
    except SgievalError as e:
        fail(e)
    d = _run_dir(run, out_dir)
    config = _read_config(d)
    from ..core import is_own_run

    # a received folder's "yes" never skips the metric confirmation: only --yes, or the user's own run's
    config.yes = yes or (config.yes and is_own_run(config))
    if price:
        config.prices = [*config.prices, *price]
        RunStore(d).write_config(config)  # the report and later resumes price with them too
    _confirm_settings(config, d, given, trust_config)
    try:
        check_state_file(d / "state.sqlite")
    except SgievalError as e:
        fail(e)
    if budget is not None:
        config.budget_usd = budget
        RunStore(d).write_config(config)  # the report header and later resumes see the new budget
        try:
            if asyncio.run(_reopen_budget_stopped(config, d)):
                err.print(f"continuing the run stopped at its budget with a budget of {budget} USD")
        except SgievalError as e:
            fail(e)
    elif _stopped_at_budget(d):
        err.print(
            f"this run stopped at its budget ({config.budget_usd} USD); to evaluate the rest, pass a larger "
            f"one: `sgieval resume {safe(_resume_ref(d, config.run_id))} --budget <USD>`",
            soft_wrap=True,
        )
    _run(config, resume=True, run_dir=d)


async def _rerender_report(d: Path, config: RunConfig) -> str:
    """Re-render ``report.md`` (and ``report.json``) of the run in folder ``d``
    from its records; raises SgievalError when the run has not chosen its metrics."""
    from ..graphs import open_saver
    from ..graphs import build_graph, make_runtime, report_run

    run_id = config.run_id
    check_state_file(d / "state.sqlite")
    # the folder given (renamed or symlinked), never <out>/<run_id>; no target or judge is called: no key needed
    rt = make_runtime(config, run_dir=d, calls=False)
    async with open_saver(d / "state.sqlite") as saver:
        snap = await build_graph(rt, saver).aget_state({"configurable": {"thread_id": run_id}})
    if not snap.values.get("metric_plan"):
        raise SgievalError("the run has not chosen its metrics yet", what=str(d), fix=f"`sgieval resume {d}`")
    return str(await report_run(rt, snap.values))


@app.command()
def report(
    run: str = typer.Argument(..., metavar="RUN", help="Run id, run folder, or its report.md."),
    out_dir: Path = typer.Option(Path("runs"), "--out", help="Folder holding run folders (for a run id)."),
    base_url: Optional[str] = typer.Option(
        None,
        "--base-url",
        help="Base URL for the agent model that "
        "writes the narrative (instead of the one in the run's "
        "config.json, which is used only once confirmed).",
    ),
    trust_config: bool = typer.Option(
        False, "--trust-config", help="Use the base URL of the run's config.json without asking."
    ),
) -> None:
    """Re-render the report of a run from its records (no model calls but the agent model's narrative)."""
    d = _run_dir(run, out_dir)
    config = _read_config(d)
    if config.agent_model:  # only the agent model (the narrative) is called by `report`
        _confirm_settings(
            config, d, _given_settings(base_url, None, None, None), trust_config, only=("base_url", "agent_model")
        )
    run_begins()
    try:
        out.print(f"report: {safe(asyncio.run(_rerender_report(d, config)))}", soft_wrap=True, highlight=False)
    except SgievalError as e:
        fail(e)
    except (typer.Exit, click.exceptions.Exit):
        raise
    except Exception as e:  # noqa: BLE001 - one line (a full disk names the disk), the traceback in log.jsonl
        _unexpected(e, d, config.run_id)


def _serve(
    folder: Path, port: int, open_browser: bool, labels: Any = None, files: dict[str, Path] | None = None
) -> None:
    """Serve the viewer folder ``folder`` on 127.0.0.1 (``port`` 0: any free port) until Ctrl-C, under a
    random per-session path that only this session's page knows (:class:`sgieval.reports.viewer.ViewerServer`);
    open the browser on it.  ``labels``: the receiver of the page's labels (``sgieval.cli.labels.ViewerLabels``), or
    None (no labelling form that saves).  ``files``: the files to serve instead of the viewer folder's (path
    below the session root -> file; the home page's :func:`sgieval.reports.runs.home_files`)."""
    import webbrowser

    from ..reports import ViewerServer

    try:
        server = ViewerServer(folder, port, labels=labels)
        if files is not None:
            server.files = files
    except OSError as e:
        fail(
            InputError(
                f"cannot listen on 127.0.0.1:{port} ({e.strerror})",
                what="--port",
                fix="pass another --port, or --port 0 for any free port",
            )
        )
    out.print(f"serving {safe(folder)} at {server.url} (Ctrl-C to stop)", soft_wrap=True, highlight=False)
    if open_browser:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


@app.command()
def view(
    run: Optional[str] = typer.Argument(
        None,
        metavar="[RUN]",
        help="Run id, run folder, or its report.md.  Without it: the home page of the runs folder (--out), listing "
        "every run with a link to its viewer page.",
    ),
    out_dir: Path = typer.Option(Path("runs"), "--out", help="Folder holding run folders (for a run id)."),
    serve: bool = typer.Option(
        False,
        "--serve",
        help="Serve the viewer on 127.0.0.1, to its own page only (a random per-session path), and open the browser.",
    ),
    port: int = typer.Option(0, "--port", help="Port for --serve (0: any free port)."),
    open_browser: bool = typer.Option(True, "--open/--no-open", help="With --serve: open the browser."),
    base_url: Optional[str] = typer.Option(
        None,
        "--base-url",
        help="Base URL for the agent model when the report must be re-rendered (instead of the run's config.json's).",
    ),
    trust_config: bool = typer.Option(
        False, "--trust-config", help="Use the base URL of the run's config.json without asking."
    ),
    labeller: Optional[str] = typer.Option(
        None, "--labeller", help="Your name in the labels the viewer's form saves (default $USER)."
    ),
    dest: Optional[Path] = typer.Option(
        None,
        "--dest",
        help="Write the viewer folder here instead of RUN/viewer: the run folder is then only read (a run folder "
        "received from someone else, or read-only).",
    ),
) -> None:
    """Write the run's HTML viewer (runs/<id>/viewer/index.html: one folder, no network needed to open it).
    The run folder is read as data: nothing in it but its viewer/ folder is written (with --dest, nothing).

    Each item page has a labelling form for the run's judge and rubric metrics, blind to the judge's score until
    the label is saved: with --serve it saves to the run's labels.jsonl, else the labels stay in the browser and
    "download labels.jsonl" gives a file for `sgieval labels import`.

    Without RUN: write the home page <out>/index.html, the runs index of `sgieval runs` with a link to each run's
    viewer page (a run's viewer is written when it is missing or older than the run's records) and to the
    comparisons of `sgieval compare`; --serve serves the home page, the runs' viewer pages and the comparison
    pages (nothing else of the folder)."""
    if run is None:
        files = _write_home(out_dir)
        if serve:
            _serve(out_dir, port, open_browser, files=files)
        return
    d = _run_dir(run, out_dir)
    config = _read_config(d)
    if dest is not None:
        _check_viewer_dest(dest, d)
    rerender = (
        dest is None
        and (d / "report.md").is_file()
        and not (d / "report.json").is_file()
        and (d / "state.sqlite").is_file()
        and os.access(d, os.W_OK)
    )
    if rerender:
        if config.agent_model:  # re-rendering may call the agent model: its base URL must be the user's choice
            _confirm_settings(
                config, d, _given_settings(base_url, None, None, None), trust_config, only=("base_url", "agent_model")
            )
        try:  # a run reported before report.json existed: re-render its report from the records
            asyncio.run(_rerender_report(d, config))
        except TamperedFileError as e:
            fail(e)
        except SgievalError as e:
            err.print(
                f"no report for this run ({safe(e.one_line())}); the viewer shows its records without a ranking",
                soft_wrap=True,
            )
    elif (d / "report.md").is_file() and not (d / "report.json").is_file():
        err.print(
            "the run's report data (report.json) is missing and the run folder is only read here; the viewer shows "
            "its records without a ranking (`sgieval report` re-renders the report in the folder)",
            soft_wrap=True,
        )
    try:
        path, receiver = _write_run_viewer(d, config, serve=serve, labeller=labeller, dest=dest)
    except SgievalError as e:
        fail(e)
    out.print(f"viewer: {safe(path)}", soft_wrap=True, highlight=False)
    if serve:
        _serve(path.parent, port, open_browser, receiver)


def _check_viewer_dest(dest: Path, run_dir: Path) -> None:
    """Fail (exit 2) for a ``view --dest`` folder that would be emptied but is not a viewer folder (an existing
    folder holding anything but a viewer's files), or that is the run folder itself."""
    if dest.resolve() == run_dir.resolve():
        fail(InputError("--dest is the run folder itself", what=str(dest), fix="give a new folder, e.g. viewer-copy"))
    try:
        names = {e.name for e in os.scandir(dest)}
    except FileNotFoundError:
        return
    except OSError as e:
        fail(InputError(f"--dest cannot be used ({e.strerror})", what=str(dest), fix="give a new folder"))
    if names and not {"index.html", "data.js"} <= names:
        fail(
            InputError(
                "--dest holds files that are not a viewer's (the viewer replaces the whole folder)",
                what=str(dest),
                fix="give a new folder, or the folder of an earlier `sgieval view --dest`",
            )
        )


def _write_run_viewer(
    d: Path, config: RunConfig, *, serve: bool = False, labeller: str | None = None, dest: Path | None = None
) -> tuple[Path, Any]:
    """Write the viewer of the run in folder ``d`` from its records and report.json (never re-rendering the
    report), in ``d/viewer`` or the folder ``dest``; returns (path of its index.html, the labels receiver for
    --serve or None).  Raises SgievalError for a folder it refuses (a link planted in it, a tampered checkpoint,
    unreadable report data) or a viewer folder it cannot write (naming it, with the fix)."""
    from .labels import ViewerLabels, viewer_labelling
    from ..reports import write_viewer

    report_data = None
    if (d / "report.json").is_file():
        try:
            report_data = json.loads(read_text_in(d, d / "report.json"))
        except ValueError as e:
            raise InputError(
                f"unreadable report data ({e})",
                what=str(d / "report.json"),
                fix=f"re-render it with `sgieval report {config.run_id}`",
            ) from None
    labelling, receiver = None, None
    try:  # the labelling form: the run's judge and rubric metrics with their criteria and random samples
        from ..api import load_run, run_metric_specs

        records = load_run(d)
        label_specs = run_metric_specs(records)
        labelling = viewer_labelling(records, label_specs)
        if labelling is not None and serve:
            receiver = ViewerLabels(records, label_specs, labelling, labeller or os.environ.get("USER", ""))
    except TamperedFileError:
        raise
    except SgievalError as e:
        err.print(f"no labelling form in the viewer ({safe(e.one_line())})", soft_wrap=True)
    store = RunStore(d, read_only=True)  # a link planted in the folder, two different records of one key: one line
    items, responses, scores, prompts = (
        store.read("items"),
        store.read("responses"),
        store.read("scores"),
        store.prompts(),
    )
    target = dest if dest is not None else d / "viewer"
    try:
        path = write_viewer(
            d,
            items,
            responses,
            scores,
            report=report_data,
            config=config.model_dump(mode="json"),
            specs=(report_data or {}).get("metric_specs"),
            labelling=labelling,
            prompts=prompts,
            dest=dest,
        )
    except OSError as e:
        raise InputError(
            f"cannot write the viewer ({e.strerror or e})",
            what=str(target),
            fix="pass `--dest FOLDER` to write it elsewhere (the run folder is then only read)"
            if dest is None
            else "give a folder you can write",
        ) from None
    return path, receiver


def _viewer_stale(d: Path) -> bool:
    """Whether the run in ``d`` has no viewer, or one older than its records or report (file modification times,
    links not followed)."""
    try:
        made = os.stat(d / "viewer" / "data.js", follow_symlinks=False).st_mtime
    except OSError:
        return True
    for name in ("report.json", "scores.jsonl", "responses.jsonl", "labels.jsonl"):
        try:
            if os.stat(d / name, follow_symlinks=False).st_mtime > made:
                return True
        except OSError:
            continue
    return False


def _write_home(out_dir: Path) -> dict[str, Path]:
    """``sgieval view`` without a run: write each listed run's missing or stale viewer, then the home page
    ``out_dir/index.html`` (:func:`sgieval.reports.runs.write_runs_page`); a run whose viewer cannot be written
    is listed with the reason.  Returns the files ``--serve`` may serve (:func:`sgieval.reports.runs.home_files`)."""
    from ..reports import home_files, list_comparisons, list_runs, read_run, write_runs_page

    if not out_dir.is_dir():
        fail(InputError("no such runs folder", what=str(out_dir), fix="give the folder holding run folders (--out)"))
    entries = list_runs(out_dir, read_state=_read_state)
    for k, e in enumerate(entries):
        if e.status in ("broken", "running") or e.problem:
            continue
        d = Path(e.path)
        if not _viewer_stale(d):
            continue
        try:
            config = _read_config(d)
            _write_run_viewer(d, config)
        except SgievalError as x:
            e.problem = f"viewer not written: {x.one_line()}"
            continue
        except (typer.Exit, click.exceptions.Exit):
            e.problem = "viewer not written: its config.json cannot be read"
            continue
        entries[k] = read_run(d, read_state=_read_state, base=out_dir)
    try:
        comparisons = list_comparisons(out_dir)
        page = write_runs_page(out_dir, entries, comparisons)
    except SgievalError as x:
        fail(x)
    out.print(
        f"home: {safe(page)} ({len(entries)} run{'' if len(entries) == 1 else 's'})", soft_wrap=True, highlight=False
    )
    return home_files(out_dir, entries, comparisons)


@app.command()
def export(
    run: str = typer.Argument(..., metavar="RUN", help="Run id, run folder, or its report.md."),
    fmt: str = typer.Option("parquet", "--format", "-f", help="parquet | jsonl | csv"),
    dest: Optional[Path] = typer.Option(None, "--dest", help="Output folder (default: runs/<id>/export)."),
    out_dir: Path = typer.Option(Path("runs"), "--out", help="Folder holding run folders (for a run id)."),
) -> None:
    """Write the run's items, responses and scores as tables (one row per score with the item's facets)."""
    from ..reports import export_run

    d = _run_dir(run, out_dir)
    try:
        paths = export_run(d, fmt.lower(), dest)
    except SgievalError as e:
        fail(e)
    for p in paths:
        out.print(safe(p), soft_wrap=True, highlight=False)


def _read_state(path: Path, run_id: str) -> dict[str, Any]:
    """A run's checkpoint state through the allowlisted reader (:func:`sgieval.graphs.checkpoints.read_state`)."""
    from ..graphs import read_state

    return read_state(path, run_id)


@app.command()
def runs(
    out_dir: Path = typer.Option(Path("runs"), "--out", help="Folder holding run folders."),
    as_json: bool = typer.Option(False, "--json", help="Print the index as one JSON list (one object per run)."),
) -> None:
    """List the runs in the runs folder, newest first: status, date, request, benchmark and items, target models,
    judge, the ranking metric's winner as the run's report states it (or the tie), and cost.  Read only: a folder
    that cannot be read (a link in it, an unreadable config.json) is listed with the reason."""
    from ..reports import list_runs

    entries = list_runs(out_dir, read_state=_read_state)
    if as_json:
        out.print_json(json.dumps([e.to_dict() for e in entries]))
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
    """Compare runs: items matched by id, models by name.  The same model in two runs gets a paired comparison on
    the shared items (difference, 95% CI, paired permutation test: a change is real only when p < 0.05); every
    model is ranked together on the items all runs share; what is not shared is counted and named.  Prints the
    Markdown report and writes it with its viewer page to <out>/compare-<a>-<b>/ (compare.md, compare.json,
    index.html)."""
    from ..api import compare as compare_runs
    from ..reports import COMPARE_PREFIX

    if len(runs_) < 2:
        fail(InputError("a comparison needs two runs or more", what="RUN", fix="give two run ids or run folders"))
    dirs = [_run_dir(r, out_dir) for r in runs_]
    try:
        result = compare_runs(*dirs, metric=metric, n_resamples=resamples, seed=seed)
        folder = dest if dest is not None else out_dir / (COMPARE_PREFIX + "-".join(result.run_ids))
        if dest is None and len(folder.name) > 200:  # a file name's limit is 255 bytes
            import hashlib

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
        _unexpected(e)
    if as_json:
        typer.echo(read_text_in(paths["json"].parent, paths["json"]))
        return
    typer.echo(escape_control_chars(result.to_markdown()))
    out.print(f"report: {safe(paths['markdown'])}", soft_wrap=True, highlight=False)
    out.print(f"viewer: {safe(paths['page'])}", soft_wrap=True, highlight=False)


@app.command()
def catalog(
    benchmark: Optional[list[str]] = typer.Option(
        None,
        "--benchmark",
        "-b",
        help="sciaidanbench, sgi-bench, sfbench or a .jsonl path (repeatable). Default: every benchmark with data.",
    ),
    data_dir: Optional[Path] = typer.Option(
        None,
        "--data-dir",
        help="Data folder, the only one looked in when given (default: $SGIEVAL_DATA, else ../shared/data, then the user cache).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as one JSON object."),
) -> None:
    """Print item counts per facet (benchmark, task, discipline, direction, type) and the models with stored
    responses per benchmark (usable as replay:<name> without a model call)."""
    from ..benchmarks import FACETS, load_catalog, stored_responses

    try:
        cat = load_catalog(_split(benchmark) or None, str(data_dir) if data_dir else None)
        stored, unreadable = stored_responses(cat, str(data_dir) if data_dir else None)
    except SgievalError as e:
        fail(e)
    counts = {f: dict(sorted(cat.counts(f).items())) for f in FACETS}
    if as_json:
        out.print_json(
            json.dumps(
                {
                    "items": len(cat.items),
                    "facets": counts,
                    "unavailable": cat.unavailable,
                    "stored_responses": stored,
                    "unreadable_responses": unreadable,
                    "files_not_read": cat.skipped,
                }
            )
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
    try:
        dest = pull(benchmark)
    except SgievalError as e:
        fail(e)
    out.print(safe(f"{benchmark}: {dest}"), highlight=False)


@data_app.command("where")
def data_where() -> None:
    """Show the data lookup order and what each location holds."""
    from ..benchmarks import registry
    from ..benchmarks import data_roots

    for root in data_roots(os.environ.get("SGIEVAL_DATA")):
        held = [d.name for d in registry.with_data() if (root / d.data_folder).is_dir()]
        out.print(safe(f"{root}: {', '.join(held) or '-'}"), highlight=False)
