"""The runs index: one entry per run folder below a runs folder (``sgieval runs``, the home page ``index.html``), read
as data and never through a link; a folder that cannot be read is an entry with its ``problem``.

Stable names of the home page (``runs.html.j2``): ``#runs-index``, ``tr.run-row`` (``data-run-id``,
``data-status``), ``td.col-<key>`` per :data:`COLUMNS` key, ``a.run-link``, ``tr.run-broken`` / ``td.run-problem``,
and ``#compare-index`` with ``a.compare-link``."""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..core import BUDGET_STOP_NOTE, REPORT_PENDING, RunConfig, SgievalError, run_holder
from ..core import find_links, json_loads_strict, read_bytes_in, split_jsonl, validation_errors_text, write_text_in
from .format import count_phrase, fmt_p
from .render import render_html
from .serve import viewer_files

COMPARE_PREFIX = "compare-"
"""Name prefix of the folders ``sgieval compare`` writes (``compare-<run a>-<run b>``)."""

StateReader = Callable[[Path, str], dict[str, Any]]
"""``read_state(state.sqlite path, run id) -> graph state`` (``{}`` without a checkpoint)."""

COLUMNS = (
    ("run", "run"),
    ("date", "started (UTC)"),
    ("request", "request"),
    ("benchmark", "benchmark (items)"),
    ("models", "target models"),
    ("judge", "judge"),
    ("winner", "winner by the ranking metric"),
    ("status", "status"),
    ("cost", "cost (USD)"),
)


@dataclass
class Winner:
    """The ranking metric's first place as the run's report states it (several models for a ``1=`` tie); ``p`` is the
    report's paired test of the first two, ``text`` the index's cell."""

    metric: str
    models: list[str]
    runner_up: list[str] = field(default_factory=list)
    p: float | None = None
    separated: bool | None = None
    text: str = ""

    @property
    def tie(self) -> bool:
        """Whether several models share first place."""
        return len(self.models) > 1


@dataclass
class RunEntry:
    """One run of the index: ``started`` ISO 8601 UTC, ``cost_usd`` None without a ledger or a priced call, ``status``
    complete, running, incomplete, stopped, failed or broken (see ``problem``), ``viewer`` relative to ``--out``."""

    folder: str
    path: str
    run_id: str = ""
    started: str = ""
    request: str = ""
    benchmarks: list[str] = field(default_factory=list)
    n_items: int | None = None
    models: list[str] = field(default_factory=list)
    judges: list[str] = field(default_factory=list)
    added_judges: list[str] = field(default_factory=list)
    winner: Winner | None = None
    status: str = "broken"
    status_detail: str = ""
    cost_usd: float | None = None
    cost_note: str = ""
    responses: int = 0
    scores: int = 0
    problem: str = ""
    viewer: str = ""
    added: list[dict[str, Any]] = field(default_factory=list)
    reported: bool = False

    def cells(self) -> dict[str, str]:
        """The index's cells as text, by :data:`COLUMNS` key."""
        models_added = additions_text(self.added, judges=False)
        judges_added = additions_text(self.added, judges=True)
        if self.added_judges and not judges_added:  # a folder without invocations.jsonl rows naming them
            judges_added = f"{', '.join(self.added_judges)} added by ask --into"
        return {
            "run": self.run_id or self.folder,
            "date": self.started.replace("T", " ")[:16] if self.started else "unknown",
            "request": self.request or "(the whole catalog)",
            "benchmark": (", ".join(self.benchmarks) or "benchmark unknown")
            + (f" ({count_phrase(self.n_items)})" if self.n_items is not None else ""),
            "models": (", ".join(self.models) or "none") + (f" ({models_added})" if models_added else ""),
            "judge": (", ".join(self.judges) or "none") + (f" (+ {judges_added})" if judges_added else ""),
            "winner": self.winner.text if self.winner else self._no_winner(),
            "status": self.status + (f": {self.status_detail}" if self.status_detail else ""),
            "cost": self.cost_text(),
        }

    def _no_winner(self) -> str:
        if self.status == "broken":
            return "-"
        if self.reported:
            return "no ranked model (see its report)" if not self.problem.startswith("report.json") else "-"
        return "no report"

    def cost_text(self) -> str:
        """The cost cell: ``0.0123`` (with its note), or ``n/a`` and why."""
        if self.cost_usd is None:
            return f"n/a ({self.cost_note})" if self.cost_note else "n/a"
        if self.cost_usd == 0 and self.cost_note == "no model calls":
            return "0 (no model calls)"
        return f"{self.cost_usd:.4f}" + (f" ({self.cost_note})" if self.cost_note else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``sgieval runs --json``): every field, ``winner`` with its ``tie``."""
        d = asdict(self)
        if self.winner is not None:
            d["winner"]["tie"] = self.winner.tie
        return d


def _read(root: Path, name: str) -> bytes:
    """The bytes of ``root / name``; b"" without the file."""
    try:
        return read_bytes_in(root, root / name)
    except FileNotFoundError:
        return b""


def _count_lines(root: Path, name: str) -> int:
    """Lines of a JSONL file as ``split_jsonl`` counts them; 0 without the file."""
    data = _read(root, name)
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _rows(root: Path, name: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file; [] without the file."""
    out = []
    for ln in split_jsonl(_read(root, name).decode("utf-8", "replace")):
        try:
            v = json.loads(ln)
        except ValueError:
            continue
        if isinstance(v, dict):
            out.append(v)
    return out


_STAMP = re.compile(r"^(\d{8})-(\d{6})-")


def _started(root: Path, run_id: str, log: list[dict[str, Any]]) -> str:
    t = log[0].get("timestamp") if log else None
    if isinstance(t, str):
        with suppress(ValueError):
            return _dt.datetime.fromisoformat(t.replace("Z", "+00:00")).astimezone(_dt.timezone.utc).isoformat()
    m = _STAMP.match(run_id)
    if m:  # new_run_id's local time stamp
        with suppress(ValueError):
            stamp = _dt.datetime.strptime(m.group(1) + m.group(2), "%Y%m%d%H%M%S")
            return stamp.astimezone(_dt.timezone.utc).isoformat()
    try:
        st = os.stat(root / "config.json", follow_symlinks=False)
    except OSError:
        return ""
    return _dt.datetime.fromtimestamp(st.st_mtime, _dt.timezone.utc).isoformat()


def _cost(root: Path) -> tuple[float | None, str]:
    """(known cost in USD of ``ledger.jsonl``'s calls, note)."""
    rows = _rows(root, "ledger.jsonl")
    made = [r for r in rows if not r.get("cached")]
    if not made:
        return 0.0, "no model calls" if not rows else f"{len(rows)} calls, all from the cache"
    known = [float(c) for r in made if isinstance(c := r.get("cost"), (int, float)) and not isinstance(c, bool)]
    unpriced = sum(1 for r in made if r.get("cost") is None and not r.get("error"))
    interrupted = sum(1 for r in made if r.get("interrupted"))
    notes = ["no call had a known price" if unpriced and not known else count_phrase(len(made), "call")]
    notes += [f"{unpriced} without a known price, not counted"] if unpriced else []
    notes += [f"{interrupted} interrupted, cost unknown"] if interrupted else []
    return (float(sum(known)) if known else None), "; ".join(notes)


def _into_additions(root: Path) -> list[dict[str, Any]]:
    """What each ``ask --into`` added to the run ``root`` (its models, judges and new ranking metric), in file order."""
    out: list[dict[str, Any]] = []
    before: list[str] = []
    judges_before: list[str] = []
    metric = ""
    invocations = _rows(root, "invocations.jsonl")
    made: dict[str, list[str]] = {}  # invocation id -> the target models it answered (read only for an --into)
    for r in _rows(root, "responses.jsonl") if any(row.get("kind") == "into" for row in invocations) else []:
        inv, model = r.get("invocation"), r.get("model")
        if isinstance(inv, str) and isinstance(model, str) and model not in made.setdefault(inv, []):
            made[inv].append(model)
    for row in invocations:
        opts = row["options"] if isinstance(row.get("options"), dict) else {}
        models = [str(m) for m in opts.get("models") or [] if isinstance(m, str)]
        new_metric = str(opts.get("metric") or "")
        judges = [str(j) for j in opts.get("added_judges") or [] if isinstance(j, str)]
        if row.get("kind") == "into":
            added = made.get(str(row.get("id", ""))) or [m for m in models if m not in before]
            out.append(
                {
                    "invocation": str(row.get("id", "")),
                    "time": str(row.get("time", "")),
                    "models": added,
                    "judges": [j for j in judges if j not in judges_before],
                    "metric": new_metric if new_metric != metric else "",
                }
            )
        if models:
            before = models
        judges_before = judges
        metric = new_metric
    return out


def additions_text(added: list[dict[str, Any]], *, judges: bool) -> str:
    """``"replay:openai/4o added by ask --into at 2026-12-01 20:08 UTC"`` for :func:`_into_additions`' rows.

    Args:
        added: :func:`_into_additions` rows.
        judges: False: the target models and ranking metrics; True: the judges.

    Returns:
        The text ("" for none).
    """
    parts = []
    for a in added:
        when = str(a.get("time", "")).replace("T", " ")[:16]
        by = "by ask --into" + (f" at {when} UTC" if when else "")
        if judges:
            if a.get("judges"):
                parts.append(f"{', '.join(a['judges'])} added {by}")
            continue
        did = [f"{', '.join(a['models'])} added"] if a["models"] else []
        did += [f"ranking metric set to {a['metric']}"] if a.get("metric") else []
        if not did and a.get("judges"):
            continue  # an --into that added only a judge: said in the judge field
        parts.append(f"{', '.join(did) or 'nothing new added'} {by}")
    return "; ".join(parts)


def _winner(report: dict[str, Any]) -> Winner | None:
    """The first rank of ``report.json``'s ranking and the report's paired test of the first two."""
    ranking = raw if isinstance(raw := report.get("ranking"), dict) else {}
    metric = str(ranking.get("metric") or "")
    rows = [r for r in ranking.get("rows") or [] if isinstance(r, dict)]
    ranks = [(str(r.get("rank", "")), str(r.get("model", ""))) for r in rows]
    first = [m for rk, m in ranks if rk in ("1", "1=")]
    if not first:
        return None
    rest = [(rk, m) for rk, m in ranks if rk not in ("1", "1=") and rk.rstrip("=").isdigit()]
    runner = [m for rk, m in rest if rk == rest[0][0]]
    w = Winner(metric=metric, models=first, runner_up=runner)
    comp = report.get("comparison")
    if isinstance(comp, dict) and isinstance(comp.get("p"), (int, float)) and comp.get("a") in first:
        w.p = float(comp["p"])
        w.separated = bool(w.p < 0.05)
    by = f" by {metric}" if metric else ""
    p = "" if w.p is None else f"p = {fmt_p(w.p)}"
    if w.tie:
        w.text = f"tie{by}: {' = '.join(first)}" + (f" (paired test {p}: not separated)" if p else "")
    elif not runner:
        w.text = f"{first[0]}{by} (the only ranked model)"
    elif w.p is None:
        w.text = f"{first[0]}{by} (no paired test against {' = '.join(runner)})"
    else:
        word = "separated from" if w.separated else "not separated from"
        w.text = f"{first[0]}{by} ({word} {' = '.join(runner)}: paired test {p})"
    return w


def _status(root: Path, state: dict[str, Any], log: list[dict[str, Any]]) -> tuple[str, str]:
    holder = run_holder(root)
    if holder is not None:
        return "running", f"pid {holder}" if holder > 0 else ""
    report = (root / "report.md").is_file() and not (root / "report.md").is_symlink()
    if state.get("confirmed") is False:
        return "stopped", "at the metric confirmation (sgieval resume)"
    if report and not os.path.lexists(root / REPORT_PENDING):
        try:
            text = read_bytes_in(root, root / "report.md").decode("utf-8", "replace")
        except (OSError, SgievalError):
            text = ""
        if BUDGET_STOP_NOTE in text:
            return "stopped", "at its budget (sgieval resume <run> --budget USD)"
        return "complete", ""
    errors = [r for r in log if r.get("level") == "error"]
    if errors:
        return "failed", f"{str(errors[-1].get('error', ''))[:200]} (see log.jsonl; sgieval resume)"
    if state.get("metric_plan") and "confirmed" not in state:  # paused where the metrics are confirmed
        return "stopped", "at the metric confirmation, nothing evaluated yet (sgieval resume)"
    return "incomplete", "sgieval resume"


def _checkpoint(
    root: Path, run_id: str, read_state: StateReader | None, report: dict[str, Any], problems: list[str]
) -> dict[str, Any]:
    """The checkpoint of a run without a report that no other process holds; one not read is noted in ``problems``."""
    if read_state is None or report or run_holder(root) is not None or not (root / "state.sqlite").is_file():
        return {}
    try:
        return read_state(root / "state.sqlite", run_id) or {}
    except Exception as x:  # noqa: BLE001 - a checkpoint sgieval cannot read is this entry's problem only
        problems.append(f"checkpoint not read: {_reason(x)}")
        return {}


def _selection(root: Path, e: RunEntry, state: dict[str, Any], report: dict[str, Any], benchmarks: list) -> None:
    """Set ``e``'s target models, item count and benchmarks from the checkpoint, the report and items.jsonl."""
    ranking = report.get("ranking") if isinstance(report.get("ranking"), dict) else None
    rows = [r for r in (ranking or {}).get("rows") or [] if isinstance(r, dict) and r.get("model")]
    targets = state.get("targets") or [r["model"] for r in rows]
    if isinstance(targets, list) and targets:
        e.models = [str(m) for m in targets]
    selection = state.get("selection")
    raw = selection.get("item_ids") if isinstance(selection, dict) else None
    ids: list[Any] = raw if isinstance(raw, list) else []
    wanted = set(ids)
    header = report.get("header")
    n = header.get("n_items") if isinstance(header, dict) else None
    items = _rows(root, "items.jsonl")
    if ids:
        e.n_items = len(ids)
    elif isinstance(n, int) and not isinstance(n, bool):
        e.n_items = n
    elif items:
        e.n_items = len(items)
    chosen = {str(i.get("benchmark")) for i in items if i.get("benchmark") and (not ids or i.get("id") in wanted)}
    e.benchmarks = sorted(chosen) or [str(b) for b in benchmarks]


def read_run(root: str | Path, *, read_state: StateReader | None = None, base: str | Path | None = None) -> RunEntry:
    """The index entry of the run folder ``root``; never raises for a folder that cannot be read.

    Args:
        root: a run folder.
        read_state: the checkpoint reader; None: no checkpoint read.
        base: the runs folder ``viewer`` is relative to; default ``root``'s parent.

    Returns:
        The :class:`RunEntry`.
    """
    root = Path(root)
    e = RunEntry(folder=root.name, path=str(root))
    if os.path.islink(root):
        e.problem = "the run folder is a symbolic link (not followed)"
        return e
    links = find_links(root)
    if links:
        e.problem = f"symbolic link(s) in the run folder, not followed: {', '.join(links[:5])}" + (
            f" and {len(links) - 5} more" if len(links) > 5 else ""
        )
        return e
    try:
        config = RunConfig.model_validate_json(read_bytes_in(root, root / "config.json").decode("utf-8"))
    except FileNotFoundError:
        e.problem = "no config.json"
        return e
    except (SgievalError, ValueError, OSError) as x:
        e.problem = f"{root / 'config.json'}: {_reason(x)}"
        return e
    e.run_id, e.request, e.models = config.run_id, config.request, list(config.models)
    e.judges, e.added_judges = list(config.judges), list(config.added_judges)
    e.responses, e.scores = _count_lines(root, "responses.jsonl"), _count_lines(root, "scores.jsonl")
    problems: list[str] = []
    log = _rows(root, "log.jsonl")
    e.started = _started(root, config.run_id, log)
    report: dict[str, Any] = {}
    try:
        r = json_loads_strict(read_bytes_in(root, root / "report.json").decode("utf-8"))
        report = r if isinstance(r, dict) else {}
    except FileNotFoundError:
        pass
    except (SgievalError, ValueError, OSError) as x:
        problems.append(f"report.json not read: {_reason(x)}")
    state = _checkpoint(root, config.run_id, read_state, report, problems)
    _selection(root, e, state, report, list(config.benchmarks))
    e.added = _into_additions(root)
    e.reported = bool(report) and (root / "report.md").is_file()
    e.winner = _winner(report)
    e.status, e.status_detail = _status(root, state, log)
    e.cost_usd, e.cost_note = _cost(root)
    e.problem = "; ".join(problems)
    page = root / "viewer" / "index.html"
    if page.is_file():
        e.viewer = os.path.relpath(page, Path(base) if base is not None else root.parent)
    return e


def _reason(x: BaseException) -> str:
    if isinstance(x, SgievalError):
        return x.one_line()
    text = validation_errors_text(x)
    if text is not None:
        return text
    lines = [ln for ln in str(x).splitlines() if ln.strip()]
    return lines[0] if lines else type(x).__name__


def _entries(folder: Path) -> list[os.DirEntry]:
    """The entries of ``folder`` by name ([] when it does not exist)."""
    try:
        return sorted(os.scandir(folder), key=lambda d: d.name)
    except (FileNotFoundError, NotADirectoryError):
        return []


def list_runs(out_dir: str | Path, *, read_state: StateReader | None = None) -> list[RunEntry]:
    """Every run folder of the runs folder ``out_dir``, newest first (no known start time last, by name).

    Args:
        out_dir: the runs folder (``--out``).
        read_state: the checkpoint reader (see :func:`read_run`).

    Returns:
        One :class:`RunEntry` per folder ([] when ``out_dir`` does not exist).
    """
    out_dir = Path(out_dir)
    runs = []
    for d in _entries(out_dir):
        if not os.path.lexists(os.path.join(d.path, "config.json")):
            continue
        if d.is_symlink():
            runs.append(RunEntry(folder=d.name, path=d.path, problem="a symbolic link to a folder (not followed)"))
        elif d.is_dir(follow_symlinks=False):
            try:
                runs.append(read_run(d.path, read_state=read_state, base=out_dir))
            except Exception as x:  # noqa: BLE001 - one folder's unforeseen fault never ends the listing
                runs.append(RunEntry(folder=d.name, path=d.path, problem=f"not read: {type(x).__name__}: {x}"))
    runs.sort(key=lambda r: r.folder)
    runs.sort(key=lambda r: r.started or "", reverse=True)
    return runs


def list_comparisons(out_dir: str | Path) -> list[tuple[str, str]]:
    """The comparison pages ``compare-*/index.html`` in the runs folder (no link followed), by folder name.

    Args:
        out_dir: the runs folder.

    Returns:
        ``(title, path relative to out_dir)`` pairs; the title is the compared run ids joined by ``-``.
    """
    out = []
    for d in _entries(Path(out_dir)):
        if not d.name.startswith(COMPARE_PREFIX) or not d.is_dir(follow_symlinks=False):  # a link is no folder here
            continue
        page = Path(d.path) / "index.html"
        if page.is_file() and not page.is_symlink():
            out.append((d.name.removeprefix(COMPARE_PREFIX), f"{d.name}/index.html"))
    return out


def home_files(out_dir: str | Path, runs: list[RunEntry], comparisons: list[tuple[str, str]]) -> dict[str, Path]:
    """What the served home page may serve (``sgieval view --serve`` without a run).

    Args:
        out_dir: the runs folder.
        runs: :func:`list_runs`'s entries.
        comparisons: :func:`list_comparisons`' pairs.

    Returns:
        Path below the session root -> file: the home page, each run's viewer files and each comparison page.
    """
    out_dir = Path(out_dir)
    files: dict[str, Path] = {}
    for r in runs:
        if r.viewer and r.status != "broken":
            prefix = Path(r.viewer).parent.as_posix()
            files.update({f"{prefix}/{rel}": p for rel, p in viewer_files(out_dir / prefix).items()})
    for href in ["index.html", *(href for _title, href in comparisons)]:
        if (out_dir / href).is_file() and not (out_dir / href).is_symlink():
            files[href] = out_dir / href
    return files


def write_runs_page(out_dir: str | Path, runs: list[RunEntry], comparisons: list[tuple[str, str]]) -> Path:
    """Write the home page ``out_dir/index.html`` (static, every value escaped): the runs index, then the comparisons.

    Args:
        out_dir: the runs folder.
        runs: :func:`list_runs`'s entries.
        comparisons: :func:`list_comparisons`' pairs.

    Returns:
        The page's path.
    """
    out_dir = Path(out_dir)
    html = render_html(
        "runs.html.j2",
        title=f"sgieval runs: {out_dir}",
        folder=str(out_dir),
        columns=COLUMNS,
        runs=[(r, r.cells()) for r in runs],
        comparisons=comparisons,
    )
    return write_text_in(out_dir, out_dir / "index.html", html)
