"""The metric interface: :class:`Metric` (one :class:`Score` per spec and (item, response), corpus-level scores from
:meth:`Metric.corpus`), its scoring context and :class:`FunctionMetric`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..core import CORPUS, InputError, Item, MetricSpec, Response, Score, Status, as_evidence, same_model  # noqa: F401 (re-exported: CORPUS is imported from here by agents and metrics)
from ..models import NamedModel


@dataclass
class ScoringContext:
    """What a metric may use: judges, the run's ToolPool, a Sandbox, an embedder (None: MiniLM loaded lazily)."""

    judges: list[NamedModel] = field(default_factory=list)
    tools: Any = None
    sandbox: Any = None
    embedder: Callable[[list[str]], Any] | None = None
    allow_self_judge: bool = False
    options: dict[str, Any] = field(default_factory=dict)

    def judges_for(self, target_model: str) -> list[NamedModel]:
        """The judges allowed to score ``target_model`` (no self-judging without the flag).

        Args:
            target_model: the name of the model under test.

        Returns:
            The judges, in panel order.
        """
        if self.allow_self_judge:
            return list(self.judges)
        return [j for j in self.judges if not same_model(j.name, target_model)]

    def judge_problem(self, target_model: str, metric: str) -> tuple[str, str | None] | None:
        """Why judge metric ``metric`` cannot score ``target_model``, if it cannot.

        Args:
            target_model: the name of the model under test.
            metric: the judge metric's name.

        Returns:
            ``(problem, fix)`` (fix None when the problem names it), or None when a judge may score it.
        """
        if self.judges_for(target_model):
            return None
        if not self.judges:
            return f"{metric} needs a judge: no judge configured (pass --judge)", None
        return (
            f"{metric} needs a judge: the only judge(s) ({', '.join(j.name for j in self.judges)}) are the "
            f"target model {target_model}",
            "pass another --judge or --allow-self-judge",
        )

    def no_judge_reason(self, target_model: str, metric: str) -> str:
        """:meth:`judge_problem` as one line.

        Args:
            target_model: the name of the model under test.
            metric: the judge metric's name.

        Returns:
            The reason judge metrics report as ``not_run``.
        """
        p = self.judge_problem(target_model, metric)
        return f"no judge scored {metric}" if p is None else p[0] if p[1] is None else f"{p[0]}; {p[1]}"


class Metric:
    """Base class: subclasses set ``specs`` and implement :meth:`score`."""

    specs: list[MetricSpec] = []
    corpus_specs: list[MetricSpec] = []

    @property
    def name(self) -> str:
        return self.specs[0].name

    @classmethod
    def from_options(cls, options: dict) -> "Metric":
        """The metric for a run; override to read options.

        Args:
            options: the run's metric options.

        Returns:
            ``cls()`` here.
        """
        return cls()

    @property
    def all_specs(self) -> list[MetricSpec]:
        """Per-item specs, then corpus-level specs."""
        return list(self.specs) + list(self.corpus_specs)

    def applies(self, item: Item) -> bool:
        """Whether this metric scores ``item``.

        Args:
            item: an item of the run.

        Returns:
            True when a per-item spec lists the item's task (or ``"*"``).
        """
        return any(item.task in s.tasks or "*" in s.tasks for s in self.specs)

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        """Score one response to ``item``.

        Args:
            ctx: the run's scoring context (judges, options, tools).

        Returns:
            One Score per per-item spec; a failure is a Score with status and reason, never a silent zero.

        Raises:
            NotImplementedError: in this base class.
        """
        raise NotImplementedError

    def corpus(self, items: dict[str, Item], responses: Sequence[Response], scores: Sequence[Score]) -> list[Score]:
        """Corpus-level scores of one target model (``item_id == "*"``).

        Args:
            items: the run's items by id.
            responses: the model's responses.
            scores: the model's per-item scores.

        Returns:
            One Score per corpus-level spec (none here).
        """
        return []

    def failed(
        self,
        item: Item,
        response: Response,
        status: str,
        error: str,
        *,
        judge: str = "objective",
        evidence: Sequence[Any] | None = None,
    ) -> list[Score]:
        """One failed Score per spec, with the same status and reason.

        Args:
            status: the status of every Score.
            error: the reason, shown in the report.
            judge: who tried to score.
            evidence: typed evidence records or dicts.

        Returns:
            The failed Scores (value None).
        """
        ev = [as_evidence(e) for e in evidence or []]
        return [
            score_for(item, response, s.name, None, status=status, error=error, judge=judge, evidence=ev)
            for s in self.specs
        ]

    def judges_or_failed(
        self, item: Item, response: Response, ctx: ScoringContext, metric: str
    ) -> tuple[list[NamedModel], list[Score] | None]:
        """The judges that may score ``response``, or the failed Scores to return instead.

        Args:
            metric: the metric's name, used in the ``not_run`` reason.

        Returns:
            ``(judges, None)``, or ``([], scores)`` with the failed response's status or ``not_run``.
        """
        if not response.ok:
            return [], self.failed(item, response, response.status, f"no response: {response.error}")
        judges = ctx.judges_for(response.model)
        if not judges:
            return [], self.failed(item, response, "not_run", ctx.no_judge_reason(response.model, metric))
        return judges, None


def score_for(item: Item, response: Response, metric: str, value: float | None, **fields: Any) -> Score:
    """The Score of ``response`` to ``item`` for ``metric``.

    Args:
        metric: the spec name.
        value: the value on the spec's range, or None.
        fields: the Score's other fields.

    Returns:
        The Score.
    """
    return Score(item_id=item.id, model=response.model, metric=metric, value=value, **fields)


@dataclass(frozen=True)
class MetricResult:
    """A metric function's result."""

    value: float
    rationale: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def _result(out: Any, fn: Any) -> MetricResult:
    if not isinstance(out, MetricResult):
        raise TypeError(
            f"metric function {getattr(fn, '__qualname__', fn)!r} returned {type(out).__name__}: return "
            "MetricResult(value, rationale, details) (sgieval.metric_pool.base)"
        )
    return out


class FunctionMetric(Metric):
    """A metric from pure functions of (item, response): one function for all ``specs`` (a :class:`MetricResult`, or
    a dict spec name -> MetricResult), or one per spec, where a ``ValueError`` (``parse_error``) or :class:`InputError`
    (``input_error``) fails only its spec.  The functions see the final text only (METRICS.md D.8)."""

    def __init__(
        self,
        specs: MetricSpec | Sequence[MetricSpec],
        fn: Callable[[Item, Response], Any] | Sequence[Callable[[Item, Response], MetricResult]],
    ):
        self.specs = [specs] if isinstance(specs, MetricSpec) else list(specs)
        self.fns = list(fn) if not callable(fn) else None
        self.fn = fn if callable(fn) else None
        if self.fns is not None and len(self.fns) != len(self.specs):
            raise ValueError("FunctionMetric needs one function per spec, or one function for all")

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        return self.score_sync(item, response)

    def score_sync(self, item: Item, response: Response) -> list[Score]:
        """The Scores of ``response``, without an event loop.

        Args:
            item: the item answered.
            response: the target model's response.

        Returns:
            One Score per spec.
        """
        response = response.split_reasoning()
        if not response.ok:
            return self.failed(item, response, response.status, f"no response: {response.error}")
        if self.fn is not None:
            try:
                out = self.fn(item, response)
            except ValueError as e:
                return self.failed(item, response, "parse_error", str(e))
            results = out if isinstance(out, dict) else {self.specs[0].name: out}
            return [self._score(item, response, s.name, _result(results[s.name], self.fn)) for s in self.specs]
        scores = []
        for s, f in zip(self.specs, self.fns or []):
            try:
                scores.append(self._score(item, response, s.name, _result(f(item, response), f)))
            except (InputError, ValueError) as e:
                status: Status = "input_error" if isinstance(e, InputError) else "parse_error"
                scores.append(score_for(item, response, s.name, None, status=status, error=str(e)))
        return scores

    @staticmethod
    def _score(item: Item, response: Response, metric: str, r: MetricResult) -> Score:
        return score_for(item, response, metric, float(r.value), rationale=r.rationale, details=dict(r.details))
