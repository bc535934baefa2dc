"""What each chosen metric needs (a judge, a sandbox, items, stored judgements) and whether the run has it, with the
fix: the metric confirmation's list; with ``--yes`` a run in which no chosen metric can run stops before any work."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..core import DRY_EXPERIMENT, OPEN_CREATIVITY, InputError, Item, MetricSpec, same_model

JUDGE_FIX = "pass --judge <model> (e.g. --judge openai:gpt-4.1; --judge local:smollm2 offline, smoke-test quality)"
SANDBOX_FIX = (
    "install bubblewrap (`apt-get install bubblewrap`), or pass --sandbox e2b with E2B_API_KEY set, "
    "or --sandbox unsafe-local --unsafe-local-exec"
)


class MetricNeeds(BaseModel):
    """One row of the confirmation: a metric, its kind, whether it ranks or is custom, its ``needs``, whether they are
    ``available`` and else what is ``missing`` and the ``fix``."""

    metric: str
    kind: str = "objective"
    primary: bool = False
    custom: bool = False
    needs: list[str] = Field(default_factory=list)
    available: bool = True
    missing: str = ""
    fix: str = ""
    judge_missing: bool = False
    """The metric needs a judge and no judge may score any target."""

    def line(self) -> str:
        """The confirmation's line for this metric.

        Returns:
            E.g. ``rigor (rubric, ranking): needs judge, 25 items -- NOT available: no judge given. Fix: ...``.
        """
        tags = [self.kind] + (["custom"] if self.custom else []) + (["ranking"] if self.primary else [])
        text = f"{self.metric} ({', '.join(tags)}): needs {', '.join(self.needs) or 'nothing'}"
        if self.available:
            return f"{text} -- available"
        return f"{text} -- NOT available: {self.missing}" + (f". Fix: {self.fix}" if self.fix else "")


def metric_needs(
    specs: list[MetricSpec], items: list[Item], *, primary: str = "", custom: set[str] | None = None,
    judges: list[str] | None = None, targets: list[str] | None = None, replay_targets: bool = False,
    sandbox: bool = False, allow_self_judge: bool = False,
) -> list[MetricNeeds]:  # fmt: skip
    """One :class:`MetricNeeds` per spec: judge and rubric metrics (and live open creativity) need a judge that is not
    the only target, dry experiments a sandbox, replayed open creativity stored judgements, every metric its items."""
    custom = custom or set()
    judges = list(judges or [])
    targets = list(targets or [])
    out = []
    for s in specs:
        n = sum(1 for i in items if i.task in s.tasks or "*" in s.tasks)
        row = MetricNeeds(metric=s.name, kind=s.kind, primary=s.name == primary, custom=s.name in custom)
        problems: list[tuple[str, str]] = []
        if s.kind in ("judge", "rubric") or (OPEN_CREATIVITY in s.tasks and targets and not replay_targets):
            row.needs.append("judge")
            if not judges:
                problems.append(("no judge given", JUDGE_FIX))
            elif not allow_self_judge and targets and all(any(same_model(j, t) for t in targets) for j in judges):
                only = f"the only judge ({', '.join(judges)}) is a target model"
                problems.append((only, "pass another --judge, or --allow-self-judge"))
        # no judge may score any target: none given, or each target's only judges are that target itself
        row.judge_missing = "judge" in row.needs and (
            not judges
            or (not allow_self_judge and bool(targets) and all(all(same_model(j, t) for j in judges) for t in targets))
        )
        if OPEN_CREATIVITY in s.tasks and replay_targets:
            row.needs.append("stored judgements (replayed answers)")
        if DRY_EXPERIMENT in s.tasks:
            row.needs.append("sandbox")
            if not sandbox:
                problems.append(("no sandbox can start", SANDBOX_FIX))
        row.needs.append(f"{n} item{'' if n == 1 else 's'}")
        if n == 0:
            problems.append(("no selected item of its tasks", "select items of " + ", ".join(s.tasks)))
        if problems:
            row.available = False
            row.missing = "; ".join(p for p, _ in problems)
            row.fix = "; ".join(dict.fromkeys(f for _, f in problems if f))
        out.append(row)
    return out


def none_can_run(needs: list[MetricNeeds]) -> InputError | None:
    """The error that stops a ``--yes`` run in which no chosen metric can run (None when one can)."""
    if not needs or any(n.available for n in needs):
        return None
    why = "; ".join(f"{n.metric}: {n.missing}" for n in needs)
    fixes = "; ".join(dict.fromkeys(n.fix for n in needs if n.fix))
    return InputError(f"none of the chosen metrics can run ({why})", what="metrics", fix=fixes or None)


def ranking_cannot_run(needs: list[MetricNeeds]) -> InputError | None:
    """The error that stops a ``--yes`` run whose ranking metric has no judge that may score, naming the metrics that
    could rank instead (None otherwise)."""
    primary = next((n for n in needs if n.primary), None)
    if primary is None or not primary.judge_missing:
        return None
    others = [n.metric for n in needs if n.available and not n.primary]
    instead = f"; or rank by a metric that can run: --metric {others[0]} (can run: {', '.join(others[:4])})"
    return InputError(
        f"it needs a judge to score, so nothing could be ranked ({primary.missing})",
        what=f"ranking metric {primary.metric}",
        fix=primary.fix + (instead if others else ""),
    )
