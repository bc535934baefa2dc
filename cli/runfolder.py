"""A run folder as the commands that read it find and trust it (``resume``, ``report``, ``view``, ``export``,
``compare``): the folder a run reference names, its config.json, the settings confirmed before they are used, the
last-resort line of a command that has a run folder, and the report re-rendered from the records."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, NoReturn

import click
import typer

from ..core import FLAGS, InputError, RunConfig, RunStore, SgievalError, check_state_file, disk_error, is_disk_full
from ..core import is_trusted, remember, sensitive_settings, validation_errors_text
from .output import err, fail, safe


def split(values: list[str] | None) -> list[str]:
    """Comma-separated or repeated option values as one list, blanks dropped."""
    return [v.strip() for x in values or [] for v in x.split(",") if v.strip()]


def unexpected(e: BaseException, run_dir: Path | None = None, run_id: str = "", ref: str | None = None) -> NoReturn:
    """End the command with one line for an exception that is no SgievalError, never a traceback: a full disk names
    the disk (exit 2); anything else names the exception (exit 1), and with a run folder its traceback goes to
    ``run_dir/log.jsonl`` and the line says how to continue."""
    if is_disk_full(e):
        fail(disk_error(e, getattr(e, "filename", None) or run_dir or Path.cwd()))  # type: ignore[arg-type]
    first = str(e).splitlines()[0] if str(e) else ""
    line = f"unexpected {type(e).__name__}: {first}"
    if run_dir is not None:
        from ..core import log_traceback  # structlog loads only when a command fails

        log_traceback(run_dir, run_id, e)
        line += (
            f"; the full traceback is in {run_dir / 'log.jsonl'}; every finished response and score is kept: "
            f"continue with `sgieval resume {ref or run_dir}`"
        )
    err.print(f"[bold red]error:[/] {safe(line)}", highlight=False, soft_wrap=True)
    raise typer.Exit(1)


def resume_ref(run_dir: Path, run_id: str) -> str:
    """What ``sgieval resume`` takes for ``run_dir``: its id for ``runs/<id>`` in the cwd, else the quoted folder."""
    try:
        default = run_dir.name == run_id and run_dir.parent.resolve() == Path("runs").resolve()
    except OSError:
        default = False
    return run_id if default else shlex.quote(str(run_dir))


def run_dir(run: str, out_dir: Path) -> Path:
    """The run folder ``run`` names (a run id in ``out_dir``, the folder, or a file in it); exit 2 if none."""
    p = Path(run).expanduser()
    for d in (out_dir / run, p, p.parent if p.suffix else None):
        if d is not None and (d / "config.json").is_file():
            return d
    fix = f"give a run id listed by `sgieval runs --out {out_dir}`, the run folder, or its report.md"
    fail(InputError("no such run", what=run, fix=fix))


def _reason(e: Exception) -> str:
    """One line for a pydantic ValidationError (``field: message; ...``) or another exception (its last line)."""
    text = validation_errors_text(e)
    if text is not None:
        return text
    lines = [
        ln.strip() for ln in str(e).splitlines() if ln.strip() and not ln.strip().startswith("For further information")
    ]
    return lines[-1] if lines else type(e).__name__


def read_config(d: Path) -> RunConfig:
    """``d/config.json`` with ``out_dir`` set to ``d``'s parent; exits 2 naming the file when it cannot be read."""
    try:
        config = RunStore(d, read_only=True).read_config()
    except SgievalError as e:
        fail(e)
    except (ValueError, OSError) as e:
        fix = "restore the file, or start a new run with `sgieval ask`"
        fail(InputError(f"unreadable run config ({_reason(e)})", what=str(d / "config.json"), fix=fix))
    config.out_dir = str(d.parent)
    return config


def read_state(path: Path, run_id: str) -> dict[str, Any]:
    """A run's checkpoint state through the allowlisted reader (:func:`sgieval.graphs.read_state`)."""
    from ..graphs import read_state as read

    return read(path, run_id)


def confirm_settings(
    config: RunConfig,
    d: Path,
    given: dict[str, Any],
    trust: bool,
    only: tuple[str, ...] | None = None,
    *,
    trust_flag: str | None = "--trust-config",
) -> None:
    """Use the settings of a run's config.json that send data or run code elsewhere
    (:func:`sgieval.core.sensitive_settings`, restricted to ``only``) only when given again (``given`` replaces them
    in ``config``), trusted (``trust``, or the user's own), or confirmed at the prompt; else exit 2 naming each
    setting and its flag (``trust_flag``: the command's option that accepts them all, None for none)."""
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
    if not ask_yes("Use them with your credentials?", default=False):
        flags = [f for f in (FLAGS.get(k) for k in pending) if f]
        again = f"pass them again ({', '.join(flags)}) or " if flags else ""
        if trust_flag is None:
            fix = again + "answer y at the prompt after checking them"
        else:
            fix = (again or "pass ") + f"{trust_flag} after checking them"
        fail(InputError(f"not confirmed: {shown}", what=str(d / "config.json"), fix=fix))
    remember(config)


def ask_yes(question: str, default: bool) -> bool:
    """The user's answer to ``question`` on stderr; no answer (stdin closed) is no."""
    try:
        return typer.confirm(question, default=default, err=True)
    except (typer.Abort, click.exceptions.Abort, EOFError):
        err.print("")
        return False


def given_settings(
    base_url: str | None, sandbox: str | None = None, tools: str | None = None, unsafe_local_exec: bool | None = None
) -> dict[str, Any]:
    """The sensitive settings passed on the command line (``--base-url ''``: no base URL)."""
    raw = {"base_url": base_url, "sandbox": sandbox, "tools": tools, "unsafe_local_exec": unsafe_local_exec}
    given: dict[str, Any] = {k: v for k, v in raw.items() if v is not None}
    if base_url is not None:
        given["base_url"] = base_url or None
    if tools is not None:
        given["tools"] = split([tools])
    return given


def confirm_agent_settings(config: RunConfig, d: Path, base_url: str | None, trust: bool) -> None:
    """Before re-rendering a report, which calls only the agent model (the narrative): confirm its base URL."""
    if config.agent_model:
        confirm_settings(config, d, given_settings(base_url), trust, only=("base_url", "agent_model"))


async def rerender_report(d: Path, config: RunConfig) -> str:
    """Re-render the run's report.md and report.json from its records; SgievalError when it has not chosen metrics."""
    from ..graphs import build_graph, make_runtime, open_saver, report_run

    check_state_file(d / "state.sqlite")
    rt = make_runtime(config, run_dir=d, calls=False)  # the folder given (renamed or symlinked)
    async with open_saver(d / "state.sqlite") as saver:
        snap = await build_graph(rt, saver).aget_state({"configurable": {"thread_id": config.run_id}})
    if not snap.values.get("metric_plan"):
        raise SgievalError("the run has not chosen its metrics yet", what=str(d), fix=f"`sgieval resume {d}`")
    return str(await report_run(rt, snap.values))
