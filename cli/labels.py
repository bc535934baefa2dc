"""``sgieval labels`` and ``sgieval label``: the researcher's own labels of a run's responses, in ``labels.jsonl``.

``label`` is a blind terminal session (the judge's score shown only once the label is saved; ``s`` skips, ``q`` quits;
run again it continues with the same units); ``labels import`` validates every row of a JSONL or CSV file before saving
any; ``labels export`` writes them (``--template``: the units to label with an empty ``value``). Exit code 2: bad input.
"""

from __future__ import annotations

import csv
import io
import json
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import typer
from pydantic import ValidationError
from rich.panel import Panel
from rich.text import Text

from ..core import Criterion, InputError, Label, MetricSpec, Rubric, RunStore, SgievalError
from ..reports import csv_cell
from .output import err, exit_on_error, fail, out, safe


labels_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Human labels of a run: import from JSONL/CSV, export (or a template to fill).",
)
FIELDS = ("item_id", "model", "metric", "criterion", "value", "labeller", "created_at", "note", "sample")
"""Columns of a labels CSV (JSONL objects use the same keys)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _run(run: str, out_dir: Path) -> tuple[Any, dict[str, MetricSpec]]:
    """The run's records (``sgieval.load_run``) and its metric specs by name; exits 2 when there is no run."""
    from ..api import load_run, run_metric_specs

    p = Path(run).expanduser()
    given = p if p.exists() else out_dir / run
    with exit_on_error():
        records = load_run(given)
        specs = run_metric_specs(records)
    if not specs:
        fail(InputError("the run has not chosen its metrics yet", what=str(given), fix=f"`sgieval resume {given}`"))
    return records, specs


def _validate(
    labels: list[Label], records: Any, specs: dict[str, MetricSpec], source: str, positions: list[str] | None = None
) -> None:
    """:func:`sgieval.metric_pool.validate_labels` against the run's metrics, items and target models."""
    from ..metric_pool import validate_labels

    models = sorted({r.model for r in records.responses} | {s.model for s in records.scores})
    item_ids = [i.id for i in records.items]
    validate_labels(
        labels, specs=list(specs.values()), item_ids=item_ids, models=models, source=source, positions=positions
    )


def _append(root: Path, labels: list[Label]) -> None:
    """Append ``labels`` to ``root/labels.jsonl`` as the folder's one writer (refused while a run holds it)."""
    with exit_on_error(), RunStore(root) as store:
        store.hold()
        store.append("labels", labels)


def _read_label_file(path: Path, *, labeller: str) -> tuple[list[Label], list[str]]:
    """The labels of a JSONL (split on ``\n`` only) or ``.csv`` file and the line of each (``"line 3"``), ``labeller``
    and now filled in where empty; InputError naming the first bad row's line and field, and up to 5 more."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the labels file ({e})", what=str(path), fix="give a UTF-8 JSONL or CSV file")
    problems: list[tuple[int, str, str]] = []  # (line, field, reason)
    rows: list[tuple[int, dict[str, Any]]] = []
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        rows = [(reader.line_num, {k: v for k, v in row.items() if k and v not in (None, "")}) for row in reader]
    else:
        for n, line in enumerate(text.split("\n"), 1):
            if line.strip():
                try:
                    row = json.loads(line)
                except ValueError as e:
                    problems.append((n, "", f"not JSON ({e})"))
                    continue
                if not isinstance(row, dict):
                    problems.append((n, "", "not a JSON object"))
                    continue
                rows.append((n, row))
    now = _now()
    labels, positions = [], []
    for n, row in rows:
        if isinstance(row.get("value"), str):
            try:
                row["value"] = float(row["value"])
            except ValueError:
                problems.append((n, "value", f"value {row['value']!r} is not a number"))
                continue
        row.setdefault("labeller", labeller)
        row.setdefault("created_at", now)
        try:
            labels.append(Label.model_validate(row))
            positions.append(f"line {n}")
        except ValidationError as e:
            first = e.errors()[0]
            problems.append((n, ".".join(map(str, first["loc"])) or "?", first["msg"]))
    if problems:
        problems.sort()
        n, field, why = problems[0]
        more = "; ".join(f"line {m}{f' field {f}' if f else ''}: {y}" for m, f, y in problems[1:6])
        if len(problems) > 6:
            more += f"; and {len(problems) - 6} more"
        raise InputError(
            why + (f" (also {more})" if more else ""),
            what=f"{path} line {n}" + (f" field {field}" if field else ""),
            fix=f"one label per line with the fields {', '.join(FIELDS)}; nothing of the file was saved",
        )
    return labels, positions


@labels_app.command("import")
def import_labels(
    run: str = typer.Argument(..., metavar="RUN", help="Run id, run folder, or its report.md."),
    file: Path = typer.Argument(
        ..., metavar="FILE", help="Labels as JSONL or CSV (fields: " + ", ".join(FIELDS) + ")."
    ),
    labeller: Optional[str] = typer.Option(None, "--labeller", help="Labeller of rows that name none (default $USER)."),
    out_dir: Path = typer.Option(Path("runs"), "--out", help="Folder holding run folders (for a run id)."),
) -> None:
    """Add labels from FILE to the run's labels.jsonl; nothing is added when one row is bad."""
    records, specs = _run(run, out_dir)
    with exit_on_error():
        labels, positions = _read_label_file(file, labeller=labeller or os.environ.get("USER", ""))
        _validate(labels, records, specs, str(file), positions)
    have = {(x.key, x.value, x.note) for x in records.labels}
    new = [x for x in labels if (x.key, x.value, x.note) not in have]
    _append(records.run_dir, new)
    again = len(labels) - len(new)
    out.print(
        f"imported {len(new)} label(s) into {safe(records.run_dir / 'labels.jsonl')}"
        + (f"; {again} already there with the same value were not added again" if again else ""),
        highlight=False,
    )


@labels_app.command("export")
def export_labels(
    run: str = typer.Argument(..., metavar="RUN", help="Run id, run folder, or its report.md."),
    to: Optional[Path] = typer.Option(None, "--to", help="File to write (.csv or .jsonl); default: JSONL on stdout."),
    template: bool = typer.Option(False, "--template", help="Write the units to label (value empty), not the labels."),
    metric: Optional[str] = typer.Option(None, "--metric", help="With --template: the metric (default as `label`)."),
    n: int = typer.Option(30, "--n", min=1, help="With --template: units per target model."),
    seed: int = typer.Option(0, "--seed", help="With --template: seed of the random sample."),
    out_dir: Path = typer.Option(Path("runs"), "--out", help="Folder holding run folders (for a run id)."),
) -> None:
    """Write the run's labels (or, with --template, the units to label) as JSONL or CSV."""
    records, specs = _run(run, out_dir)
    if template:
        spec = _choose_metric(records, specs, metric)
        from ..metric_pool import sample_units

        crits = [c.name for c in spec.criteria] if isinstance(spec, Rubric) else [None]
        rows = [
            {"item_id": i, "model": m, "metric": spec.name, "criterion": c, "value": None, "sample": "random"}
            for i, m in sample_units(records.scores, metric=spec.name, n=n, seed=seed)
            for c in crits
        ]
    else:
        rows = [lab.model_dump() for lab in records.labels]
    if to is not None and to.suffix.lower() == ".csv":
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=list(FIELDS), extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows({k: csv_cell(row.get(k)) for k in FIELDS} for row in rows)
        text = buf.getvalue()
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if to is None:
        typer.echo(text, nl=False)
    else:
        to.write_text(text, encoding="utf-8")
        err.print(f"wrote {len(rows)} row(s) to {safe(to)}", highlight=False)


def _choose_metric(records: Any, specs: dict[str, MetricSpec], metric: str | None) -> MetricSpec:
    """The metric to label: ``metric`` when given; else the run's first custom rubric, else its primary metric."""
    if metric is not None:
        if metric not in specs:
            fail(
                InputError(
                    f"the run has no metric {metric!r}", what="--metric", fix=f"use one of {', '.join(sorted(specs))}"
                )
            )
        return specs[metric]
    custom = [s for s in specs.values() if isinstance(s, Rubric)]
    primary = str((records.metric_plan or {}).get("primary") or "")
    return custom[0] if custom else specs.get(primary) or next(iter(specs.values()))


def _ask(what: str, low: float, high: float) -> float | str:
    """One value in [low, high], or ``"s"`` (skip) / ``"q"`` (quit); asks again on anything else."""
    while True:
        answer = out.input(Text(f"{what} ({low:g}-{high:g}, s skip, q quit): ")).strip().lower()
        if answer in ("s", "q"):
            return answer
        try:
            v = float(answer)
        except ValueError:
            out.print(f"  not a number: {safe(answer)}", highlight=False)
            continue
        if low <= v <= high:
            return v
        out.print(f"  outside {low:g}-{high:g}", highlight=False)


def label(
    run: str = typer.Argument(..., metavar="RUN", help="Run id, run folder, or its report.md."),
    metric: Optional[str] = typer.Option(
        None, "--metric", help="Metric to label (default: the run's rubric, else its primary metric)."
    ),
    n: int = typer.Option(30, "--n", min=1, help="Units to label per target model."),
    labeller: Optional[str] = typer.Option(None, "--labeller", help="Your name in the labels (default $USER)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random sample (the same seed continues a session)."),
    select: str = typer.Option(
        "random",
        "--select",
        help="random (a uniform sample: PPI's guarantee holds) or disagreement (where judges differ most; not covered).",
    ),
    out_dir: Path = typer.Option(Path("runs"), "--out", help="Folder holding run folders (for a run id)."),
) -> None:
    """Label a sample of the run's responses in the terminal, blind to the judge's score."""
    from ..metric_pool import sample_units

    if select not in ("random", "disagreement"):
        fail(InputError(f"unknown selection {select!r}", what="--select", fix="use random or disagreement"))
    records, specs = _run(run, out_dir)
    spec = _choose_metric(records, specs, metric)
    who = labeller or os.environ.get("USER", "")
    done = {(x.item_id, x.model) for x in records.labels if x.metric == spec.name and x.labeller == who}
    units = sample_units(records.scores, metric=spec.name, n=n, seed=seed, selection=select, done=done)  # type: ignore[arg-type]
    items = {i.id: i for i in records.items}
    responses = {(r.item_id, r.model): r for r in records.responses}
    scores = {(s.item_id, s.model): s for s in records.scores if s.metric == spec.name}
    crits: list[Criterion | None] = list(spec.criteria) if isinstance(spec, Rubric) else [None]  # None: the metric
    out.print(
        f"labelling {safe(spec.name)}: {len(units)} unit(s) to go (--n {n} per target model; {len(done)} already "
        f"labelled by {safe(who or 'you')})"
        + ("" if select == "random" else "; units chosen by disagreement: PPI's guarantee does not cover them"),
        highlight=False,
    )
    saved = 0
    for k, (item_id, model) in enumerate(units, 1):
        item, resp = items.get(item_id), responses.get((item_id, model))
        out.rule(f"{k}/{len(units)}  item {safe(item_id)}  target model {safe(model)}")
        out.print(Panel(safe(item.prompt if item else "(item text not stored)"), title="item"), highlight=False)
        if resp is not None and resp.reasoning:
            out.print(Panel(safe(resp.reasoning), title="reasoning (shown apart)"), highlight=False)
        out.print(Panel(safe(resp.text if resp else "(no stored response)"), title="response"), highlight=False)
        new, stop = _ask_labels(spec, crits, item_id, model, who, select)
        if new and len(new) == len(crits):
            new = _with_totals({spec.name: spec}, new)
            _append(records.run_dir, new)
            saved += len(new)
            s = scores.get((item_id, model))
            if s is not None:  # blind until saved: only now the judge's score and rationale
                by = (
                    f"judge ({safe(s.judge)})"
                    if s.judge and spec.kind != "objective"
                    else "the run's score (objective metric, no judge)"
                )
                out.print(
                    f"saved. {by}: {s.value if s.value is not None else s.status} -- {safe(s.rationale[:600])}",
                    highlight=False,
                )
        if stop:
            break
    agree = "the judges" if spec.kind != "objective" else "the run's scores"
    out.print(
        f"{saved} label(s) saved to {safe(records.run_dir / 'labels.jsonl')}; `sgieval report {safe(records.run_dir)}` "
        f"shows how {agree} agree with them",
        highlight=False,
    )


def _ask_labels(
    spec: MetricSpec, crits: list[Criterion | None], item_id: str, model: str, who: str, select: str
) -> tuple[list[Label], bool]:
    """One unit's labels as typed (one per criterion, or one for the metric; none when skipped), and whether quit."""
    new: list[Label] = []
    for c in crits:
        if c is not None:
            anchors = "; ".join(f"{v}: {t}" for v, t in sorted(c.anchors.items()))
            out.print(f"[bold]{safe(c.name)}[/]: {safe(c.description)}" + (f"  [{safe(anchors)}]" if anchors else ""))
        low, high = (0.0, 10.0) if c is not None else spec.range
        answer = _ask(c.name if c is not None else spec.name, low, high)
        if answer in ("q", "s"):
            return ([] if answer == "s" else new), answer == "q"
        new.append(
            Label(
                item_id=item_id,
                model=model,
                metric=spec.name,
                criterion=c.name if c is not None else None,
                value=float(answer),
                labeller=who,
                created_at=_now(),
                sample=select,
            )
        )
    return new, False


def _with_totals(specs: dict[str, MetricSpec], labels: list[Label]) -> list[Label]:
    """``labels`` plus, per unit of a rubric whose every criterion is labelled, the rubric's value (weighted mean x 10)."""
    out = list(labels)
    units: dict[tuple[str, str, str], dict[str, Label]] = {}
    for lab in labels:
        if lab.criterion is not None:
            units.setdefault((lab.item_id, lab.model, lab.metric), {})[lab.criterion] = lab
    for (_, _, metric), crits in units.items():
        spec = specs[metric]
        if isinstance(spec, Rubric) and {c.name for c in spec.criteria} <= set(crits):
            total = spec.aggregate({c: lab.value for c, lab in crits.items()})
            first = next(iter(crits.values()))
            out.append(first.model_copy(update={"criterion": None, "value": round(total, 4), "note": "from criteria"}))
    return out


# ------------------------------------------------------------------ the viewer's labelling form
VIEWER_SAMPLE_N = 30
"""Units per target model in the viewer's random sample (as ``sgieval label``'s default ``--n``)."""

VIEWER_FIELDS = ("item_id", "model", "metric", "criterion", "value", "note")
"""Fields of a label the viewer's page sends (labeller, created_at and sample are set by the server)."""


def viewer_labelling(records: Any, specs: dict[str, MetricSpec], *, seed: int = 0) -> dict[str, Any] | None:
    """What the viewer's labelling form needs (``reports.viewer.build_viewer_data``'s ``labelling``).

    Args:
        records: the run (``sgieval.load_run``).
        specs: the run's metric specs by name (``sgieval.api.run_metric_specs``).
        seed: the seed of each metric's random sample (as ``sgieval label --seed``).

    Returns:
        ``{"metrics": [{name, kind, range, description, criteria: [{name, description, anchors}], weights}],
        "default": metric name, "sample": {metric: [[item_id, model], ...]}}`` (:data:`VIEWER_SAMPLE_N` random units
        per target model) for judge and rubric metrics with item-level scores; None when the run has none.
    """
    from ..metric_pool import sample_units

    scored = {s.metric for s in records.scores if s.item_id != "*"}
    chosen = [s for s in specs.values() if s.kind in ("judge", "rubric") and s.name in scored]
    if not chosen:
        return None
    metrics = [
        {
            "name": s.name,
            "kind": s.kind,
            "range": [float(s.range[0]), float(s.range[1])],
            "description": s.description,
            "criteria": [c.model_dump(mode="json", exclude={"needs"}) for c in s.criteria]
            if isinstance(s, Rubric)
            else [],
            "weights": dict(s.weights) if isinstance(s, Rubric) else {},
        }
        for s in chosen
    ]
    default = _choose_metric(records, {s.name: s for s in chosen}, None).name
    sample = {
        s.name: [list(u) for u in sample_units(records.scores, metric=s.name, n=VIEWER_SAMPLE_N, seed=seed)]
        for s in chosen
    }
    return {"metrics": metrics, "default": default, "sample": sample}


class ViewerLabels:
    """The served viewer's labels (``reports.serve.LabelReceiver``): the run's saved labels, and each POST validated
    and appended to ``labels.jsonl`` one at a time. A rubric's criteria of one unit also give its value (weighted mean
    x 10); a unit of :func:`viewer_labelling`'s sample is saved with ``sample="random"``, others ``sample="user"``."""

    def __init__(self, records: Any, specs: dict[str, MetricSpec], labelling: dict[str, Any], labeller: str):
        self.records = records
        self.specs = specs
        self.labeller = labeller
        self.sample = {m: {tuple(u) for u in units} for m, units in labelling["sample"].items()}
        self.metrics = {m["name"] for m in labelling["metrics"]}
        self.saved: list[Label] = list(records.labels)
        self._lock = threading.Lock()

    def session(self) -> dict[str, Any]:
        """``{"labeller": default labeller, "labels": [every saved label of the run as an object]}``."""
        with self._lock:
            return {"labeller": self.labeller, "labels": [lab.model_dump(mode="json") for lab in self.saved]}

    def _parse(self, body: Any) -> list[Label]:
        """The labels of a POST body ``{"labeller": str, "labels": [{item_id, model, metric, criterion, value,
        note}]}``; raises InputError naming the label and the field of the first one that is not a label."""
        if not isinstance(body, dict) or not isinstance(body.get("labels"), list) or not body["labels"]:
            raise InputError(
                "the body is not {labeller, labels: [...]}", what="POST labels", fix="send a non-empty labels list"
            )
        who = body.get("labeller", self.labeller)
        if not isinstance(who, str):
            raise InputError("labeller is not text", what="POST labels field labeller", fix="give your name")
        now = _now()
        labels = []
        for n, row in enumerate(body["labels"], 1):
            if not isinstance(row, dict):
                raise InputError("not an object", what=f"POST labels label {n}", fix="one object per label")
            extra = sorted(set(row) - set(VIEWER_FIELDS))
            if extra:
                raise InputError(
                    f"unknown field {extra[0]!r}", what=f"POST labels label {n}", fix=f"use {', '.join(VIEWER_FIELDS)}"
                )
            if row.get("metric") not in self.metrics:
                raise InputError(
                    f"metric {row.get('metric')!r} is not labelled here",
                    what=f"POST labels label {n} field metric",
                    fix=f"use one of {', '.join(sorted(self.metrics))}",
                )
            unit = (row.get("item_id"), row.get("model"))
            sample = "random" if unit in self.sample.get(str(row["metric"]), set()) else "user"
            try:
                labels.append(
                    Label.model_validate(
                        {**row, "labeller": who.strip(), "created_at": now, "sample": sample}, strict=False
                    )
                )
            except ValidationError as e:
                first = e.errors()[0]
                raise InputError(
                    first["msg"],
                    what=f"POST labels label {n} field {'.'.join(map(str, first['loc'])) or '?'}",
                    fix=f"a label has the fields {', '.join(VIEWER_FIELDS)}",
                ) from None
        return labels

    def save(self, body: Any) -> tuple[int, dict[str, Any]]:
        """Validate and append the labels of a POST body (:meth:`_parse`).

        Returns:
            (200, {"saved": [the labels written, a rubric's value from its criteria last]}), or (400,
            {"error": reason}) for a bad label, (409, {"error": reason}) when another process holds the run
            folder; nothing is written then.
        """
        try:
            labels = self._parse(body)
            _validate(labels, self.records, self.specs, "POST labels")
            labels = _with_totals(self.specs, labels)
        except InputError as e:
            return 400, {"error": e.one_line()}
        with self._lock:
            try:
                with RunStore(self.records.run_dir) as store:
                    store.hold()
                    store.append("labels", labels)
            except SgievalError as e:
                return 409, {"error": e.one_line()}
            self.saved.extend(labels)
        return 200, {"saved": [lab.model_dump(mode="json") for lab in labels]}
