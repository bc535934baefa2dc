"""``sgieval view``: a run's HTML viewer, or the home page of a runs folder, optionally served on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path
from typing import Any, Optional

import click
import typer

from ..core import InputError, RunConfig, RunStore, SgievalError, TamperedFileError, read_text_in
from .labels import ViewerLabels, viewer_labelling
from .output import err, exit_on_error, fail, out, safe
from .runfolder import confirm_agent_settings, read_config, read_state, rerender_report, run_dir


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
    d = run_dir(run, out_dir)
    config = read_config(d)
    if dest is not None:
        _check_viewer_dest(dest, d)
    _report_data(d, config, base_url, trust_config, writable=dest is None)
    with exit_on_error():
        path, receiver = _write_run_viewer(d, config, serve=serve, labeller=labeller, dest=dest)
    out.print(f"viewer: {safe(path)}", soft_wrap=True, highlight=False)
    if serve:
        _serve(path.parent, port, open_browser, receiver)


def _report_data(d: Path, config: RunConfig, base_url: str | None, trust: bool, writable: bool) -> None:
    """A run without report.json: re-render its report when writable, else say the viewer shows no ranking."""
    if not (d / "report.md").is_file() or (d / "report.json").is_file():
        return
    if writable and (d / "state.sqlite").is_file() and os.access(d, os.W_OK):
        confirm_agent_settings(config, d, base_url, trust)  # re-rendering may call the agent model
        try:
            asyncio.run(rerender_report(d, config))
        except TamperedFileError as e:
            fail(e)
        except SgievalError as e:
            err.print(
                f"no report for this run ({safe(e.one_line())}); the viewer shows its records without a ranking",
                soft_wrap=True,
            )
        return
    err.print(
        "the run's report data (report.json) is missing and the run folder is only read here; the viewer shows "
        "its records without a ranking (`sgieval report` re-renders the report in the folder)",
        soft_wrap=True,
    )


def _serve(
    folder: Path, port: int, open_browser: bool, labels: Any = None, files: dict[str, Path] | None = None
) -> None:
    """Serve ``folder`` on 127.0.0.1 under a random path until Ctrl-C (``labels``: receiver, ``files``: served)."""
    import webbrowser

    from ..reports import ViewerServer

    try:
        server = ViewerServer(folder, port, labels=labels)
        if files is not None:
            server.files = files
    except OSError as e:
        fix = "pass another --port, or --port 0 for any free port"
        fail(InputError(f"cannot listen on 127.0.0.1:{port} ({e.strerror})", what="--port", fix=fix))
    out.print(f"serving {safe(folder)} at {server.url} (Ctrl-C to stop)", soft_wrap=True, highlight=False)
    if open_browser:
        webbrowser.open(server.url)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    finally:
        server.close()


def _check_viewer_dest(dest: Path, run_dir: Path) -> None:
    """Exit 2 for a ``--dest`` that is the run folder, or an existing folder holding anything but a viewer."""
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


def _labelling(d: Path, serve: bool, labeller: str | None) -> tuple[Any, Any]:
    """The viewer's labelling form (the run's judge and rubric metrics) and, with ``serve``, its labels receiver."""
    from ..api import load_run, run_metric_specs

    labelling, receiver = None, None
    try:
        records = load_run(d)
        label_specs = run_metric_specs(records)
        labelling = viewer_labelling(records, label_specs)
        if labelling is not None and serve:
            receiver = ViewerLabels(records, label_specs, labelling, labeller or os.environ.get("USER", ""))
    except TamperedFileError:
        raise
    except SgievalError as e:
        err.print(f"no labelling form in the viewer ({safe(e.one_line())})", soft_wrap=True)
    return labelling, receiver


def _write_run_viewer(
    d: Path, config: RunConfig, *, serve: bool = False, labeller: str | None = None, dest: Path | None = None
) -> tuple[Path, Any]:
    """Write the viewer of the run in ``d`` (in ``d/viewer`` or ``dest``) from its records and report.json; returns (its
    index.html, the labels receiver or None).  Raises SgievalError for a folder it refuses or cannot write."""
    from ..reports import write_viewer

    report_data = None
    if (d / "report.json").is_file():
        try:
            report_data = json.loads(read_text_in(d, d / "report.json"))
        except ValueError as e:
            fix = f"re-render it with `sgieval report {config.run_id}`"
            raise InputError(f"unreadable report data ({e})", what=str(d / "report.json"), fix=fix) from None
    labelling, receiver = _labelling(d, serve, labeller)
    store = RunStore(d, read_only=True)  # a link planted in the folder, two different records of one key: one line
    items, responses, scores = (store.read(kind) for kind in ("items", "responses", "scores"))
    prompts = store.prompts()
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
            what=str(dest if dest is not None else d / "viewer"),
            fix="pass `--dest FOLDER` to write it elsewhere (the run folder is then only read)"
            if dest is None
            else "give a folder you can write",
        ) from None
    return path, receiver


def _viewer_stale(d: Path) -> bool:
    """Whether the run in ``d`` has no viewer, or one older than its records or report (links not followed)."""
    try:
        made = os.stat(d / "viewer" / "data.js", follow_symlinks=False).st_mtime
    except OSError:
        return True
    for name in ("report.json", "scores.jsonl", "responses.jsonl", "labels.jsonl"):
        with contextlib.suppress(OSError):
            if os.stat(d / name, follow_symlinks=False).st_mtime > made:
                return True
    return False


def _write_home(out_dir: Path) -> dict[str, Path]:
    """Write each listed run's missing or stale viewer, then the home page ``out_dir/index.html``; a run whose
    viewer cannot be written is listed with the reason.  Returns the files ``--serve`` may serve."""
    from ..reports import home_files, list_comparisons, list_runs, read_run, write_runs_page

    if not out_dir.is_dir():
        fail(InputError("no such runs folder", what=str(out_dir), fix="give the folder holding run folders (--out)"))
    entries = list_runs(out_dir, read_state=read_state)
    for k, e in enumerate(entries):
        if e.status in ("broken", "running") or e.problem or not _viewer_stale(Path(e.path)):
            continue
        try:
            _write_run_viewer(Path(e.path), read_config(Path(e.path)))
        except SgievalError as x:
            e.problem = f"viewer not written: {x.one_line()}"
        except (typer.Exit, click.exceptions.Exit):
            e.problem = "viewer not written: its config.json cannot be read"
        else:
            entries[k] = read_run(Path(e.path), read_state=read_state, base=out_dir)
    try:
        comparisons = list_comparisons(out_dir)
        page = write_runs_page(out_dir, entries, comparisons)
    except SgievalError as x:
        fail(x)
    n = len(entries)
    out.print(f"home: {safe(page)} ({n} run{'' if n == 1 else 's'})", soft_wrap=True, highlight=False)
    return home_files(out_dir, entries, comparisons)
