"""Tokens, latency and cost per model and role, and the run budget (issue 6 part 4).

Cost of one call (USD)::

    cost = input_tokens * price_in / 1e6 + output_tokens * price_out / 1e6

with ``price_in`` / ``price_out`` in USD per 1M tokens from the price table.
A model missing from the table has cost ``None`` (unknown), never 0; a call
whose provider reported no token usage also has cost ``None``.

The price table (:data:`DEFAULT_PRICES`) holds list prices of common OpenAI
and Anthropic models (USD per 1M tokens, standard tier, no caching/batch
discounts, as published by the providers in 2025).  Override or extend it with
:func:`set_prices` (a dict or a YAML file ``model: {input: x, output: y}``)
or per ledger (``Ledger(prices=...)``).  Model names are matched after
stripping the ``provider:`` prefix, exactly first, then by the longest table
key that prefixes the name (``gpt-4o-2024-08-06`` -> ``gpt-4o``).

A :class:`Ledger` collects one :class:`CallRecord` per call made through
:func:`sgieval.models.calls.ainvoke`; activate it for a block of code with
``with ledger.activate(): ...`` (a contextvar, inherited by asyncio tasks
created inside) or pass ``ledger=`` to ``ainvoke``.  With ``budget_usd`` set,
:meth:`Ledger.check_budget` raises :class:`BudgetExceeded` before a call once
the spent cost reaches the budget, so the run stops cleanly; the ledger keeps
where it stopped (:attr:`Ledger.stopped`).  Calls already in flight when the
budget is reached still finish and are recorded, so the final spend can exceed
the budget by at most the cost of the in-flight calls.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import yaml

from ..core import InputError, SgievalError

# model -> (USD per 1M input tokens, USD per 1M output tokens)
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    # OpenAI
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o1": (15.00, 60.00),
    "o1-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "gpt-3.5-turbo": (0.50, 1.50),
    # Anthropic
    "claude-3-haiku": (0.25, 1.25),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-3-opus": (15.00, 75.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4-1": (15.00, 75.00),
    "claude-opus-4-5": (5.00, 25.00),
}

_prices: dict[str, tuple[float, float]] = dict(DEFAULT_PRICES)


class BudgetExceeded(SgievalError):
    """The run's cost budget (``--budget``, USD) is spent; raised before a
    model call so the run stops cleanly.  ``spent_usd``, ``budget_usd`` and
    ``model``/``role`` (the call that was refused) say where it stopped."""

    def __init__(self, spent_usd: float, budget_usd: float, *, model: str = "", role: str = ""):
        self.spent_usd = spent_usd
        self.budget_usd = budget_usd
        self.model = model
        self.role = role
        super().__init__(
            f"budget of ${budget_usd:.4f} reached (${spent_usd:.4f} spent at that point; calls already in "
            f"flight still finish and count); refused a {role or 'model'} call to {model or '?'}.",
            what="--budget",
            fix="raise --budget, or continue the run with `sgieval resume <run id> --budget <USD>`",
        )


# ------------------------------------------------------------------ price table
def _parse_prices(data: Any, where: str) -> dict[str, tuple[float, float]]:
    if not isinstance(data, Mapping):
        raise InputError(
            "price table must map model -> {input: USD/1M, output: USD/1M}",
            what=where,
            fix="e.g. `gpt-4o: {input: 2.5, output: 10}`",
        )
    out: dict[str, tuple[float, float]] = {}
    for model, v in data.items():
        try:
            if isinstance(v, Mapping):
                pin, pout = float(v["input"]), float(v["output"])
            else:
                pin, pout = (float(x) for x in v)
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(
                f"bad price for model {model!r}: {v!r} ({type(e).__name__}: {e})",
                what=where,
                fix="give `{input: <USD per 1M input tokens>, output: <USD per 1M output tokens>}`",
            ) from e
        if pin < 0 or pout < 0:
            raise InputError(f"negative price for model {model!r}: {v!r}", what=where, fix="prices must be >= 0")
        out[_bare(str(model))] = (pin, pout)
    return out


def load_prices(source: str | Path | Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """Parse a price table from a dict or a YAML file (``model: {input, output}``
    in USD per 1M tokens, or ``model: [input, output]``).  Raises InputError
    naming the file and the model on a malformed entry."""
    if isinstance(source, Mapping):
        return _parse_prices(source, "<price table>")
    p = Path(source)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise InputError(f"cannot read price table: {e}", what=str(p), fix="give a readable YAML file") from e
    return _parse_prices(data, str(p))


def set_prices(source: str | Path | Mapping[str, Any], *, replace: bool = False) -> None:
    """Override (``replace=False``: merge into) the process-wide price table."""
    parsed = load_prices(source)
    if replace:
        _prices.clear()
    _prices.update(parsed)


def price_table() -> dict[str, tuple[float, float]]:
    """A copy of the process-wide price table (what a run starts with)."""
    return dict(_prices)


def reset_prices() -> None:
    """Restore :data:`DEFAULT_PRICES`."""
    _prices.clear()
    _prices.update(DEFAULT_PRICES)


def _bare(name: str) -> str:
    return name.split(":", 1)[1] if ":" in name else name


def price_of(model: str, prices: Mapping[str, tuple[float, float]] | None = None) -> tuple[float, float] | None:
    """(USD per 1M input tokens, USD per 1M output tokens) of ``model`` or None."""
    table = _prices if prices is None else prices
    bare = _bare(model)
    for name in (model, bare):
        if name in table:
            return table[name]
    best = None
    for k in table:
        if bare.startswith(k) and (best is None or len(k) > len(best)):
            best = k
    return table[best] if best is not None else None


def price_call(
    model: str, usage: Mapping[str, int] | None, prices: Mapping[str, tuple[float, float]] | None = None
) -> float | None:
    """USD cost of one call with ``usage`` {"input", "output"} tokens, or None
    when the model's price or the usage is unknown (formula in module doc)."""
    if not usage:
        return None
    p = price_of(model, prices)
    if p is None:
        return None
    return usage.get("input", 0) * p[0] / 1e6 + usage.get("output", 0) * p[1] / 1e6


# ----------------------------------------------------------------------- ledger
@dataclass
class CallRecord:
    """One model call: tokens (None when not reported), latency in seconds,
    cost in USD (None when unknown), ``cached`` (served by the call cache, no
    cost), ``error`` (the reason when the call failed after its retries)."""

    model: str
    role: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_s: float = 0.0
    cost: float | None = None
    cached: bool = False
    error: str | None = None


@dataclass
class Totals:
    """Totals for one (model, role).  ``calls`` counts calls made (cache hits
    excluded, failures included); ``cost`` sums known costs in USD (None when
    no call had a known cost); ``unpriced_calls`` counts successful calls whose
    cost is unknown; ``latency_s`` sums per-call wall seconds."""

    model: str
    role: str
    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost: float | None = None
    unpriced_calls: int = 0

    @property
    def mean_latency_s(self) -> float | None:
        made = self.calls
        return self.latency_s / made if made else None


_current: contextvars.ContextVar["Ledger | None"] = contextvars.ContextVar("sgieval_ledger", default=None)


def current_ledger() -> "Ledger | None":
    """The ledger activated in this context, or None."""
    return _current.get()


class Ledger:
    """Per-run account of model calls (see module doc).

    ``budget_usd``: stop before a call once spent >= budget (None: no budget).
    ``prices``: a price table for this ledger (default: the process-wide one).
    ``on_record``: called with the new records as dicts (:meth:`to_dicts`
    form) each time records are added (by :meth:`record` or :meth:`merge`);
    the run graph appends them to the run folder's ``ledger.jsonl`` so a
    killed run loses no call from its accounts.
    """

    def __init__(
        self,
        budget_usd: float | None = None,
        *,
        prices: str | Path | Mapping[str, Any] | None = None,
        on_record: Callable[[list[dict[str, Any]]], None] | None = None,
    ):
        if budget_usd is not None and budget_usd < 0:
            raise InputError(f"budget must be >= 0 USD, got {budget_usd}", what="--budget")
        self.budget_usd = budget_usd
        self.prices = load_prices(prices) if prices is not None else None
        self.records: list[CallRecord] = []
        self.stopped: dict[str, Any] | None = None
        self.on_record = on_record
        self._lock = threading.Lock()
        self._spent = 0.0

    # -- recording -------------------------------------------------------
    def record(
        self,
        model: str,
        role: str,
        *,
        usage: Mapping[str, int] | None = None,
        latency_s: float = 0.0,
        cached: bool = False,
        error: str | None = None,
    ) -> CallRecord:
        """Record one call and return its :class:`CallRecord` (cost priced here)."""
        cost = None
        if not cached and error is None:
            cost = price_call(model, usage, self.prices)
        elif cached:
            cost = 0.0
        rec = CallRecord(
            model=model,
            role=role,
            input_tokens=int(usage["input"]) if usage else None,
            output_tokens=int(usage["output"]) if usage else None,
            latency_s=float(latency_s),
            cost=cost,
            cached=cached,
            error=error,
        )
        with self._lock:
            self.records.append(rec)
            if cost:
                self._spent += cost
        if self.on_record is not None:
            self.on_record([asdict(rec)])
        return rec

    @property
    def spent_usd(self) -> float:
        """Sum of known costs in USD."""
        return self._spent

    def check_budget(self, model: str = "", role: str = "") -> None:
        """Raise :class:`BudgetExceeded` when ``spent_usd >= budget_usd``; the
        first refusal is kept in :attr:`stopped` (spent, budget, model, role,
        calls recorded so far)."""
        if self.budget_usd is None or self._spent < self.budget_usd:
            return
        with self._lock:
            if self.stopped is None:
                self.stopped = {
                    "spent_usd": self._spent,
                    "budget_usd": self.budget_usd,
                    "model": model,
                    "role": role,
                    "calls": sum(1 for r in self.records if not r.cached),
                }
        raise BudgetExceeded(self._spent, self.budget_usd, model=model, role=role)

    # -- totals ----------------------------------------------------------
    def totals(self) -> dict[tuple[str, str], Totals]:
        """Totals per (model, role), in first-call order."""
        out: dict[tuple[str, str], Totals] = {}
        with self._lock:
            recs = list(self.records)
        for r in recs:
            t = out.setdefault((r.model, r.role), Totals(model=r.model, role=r.role))
            if r.cached:
                t.cached_calls += 1
                continue
            t.calls += 1
            t.latency_s += r.latency_s
            if r.error is not None:
                t.failed_calls += 1
                continue
            t.input_tokens += r.input_tokens or 0
            t.output_tokens += r.output_tokens or 0
            if r.cost is None:
                t.unpriced_calls += 1
            else:
                t.cost = (t.cost or 0.0) + r.cost
        return out

    def total(self) -> Totals:
        """Grand total over every model and role (``model``/``role`` = "*")."""
        g = Totals(model="*", role="*")
        for t in self.totals().values():
            g.calls += t.calls
            g.cached_calls += t.cached_calls
            g.failed_calls += t.failed_calls
            g.input_tokens += t.input_tokens
            g.output_tokens += t.output_tokens
            g.latency_s += t.latency_s
            g.unpriced_calls += t.unpriced_calls
            if t.cost is not None:
                g.cost = (g.cost or 0.0) + t.cost
        return g

    def summary(self) -> dict[str, Any]:
        """JSON-ready {"rows": [Totals as dict ...], "total": {...},
        "budget_usd", "spent_usd", "stopped"} for reports."""
        rows = [asdict(t) for t in self.totals().values()]
        return {
            "rows": rows,
            "total": asdict(self.total()),
            "budget_usd": self.budget_usd,
            "spent_usd": self._spent,
            "stopped": self.stopped,
        }

    # -- merging (Ray workers, resumed runs) -----------------------------
    def to_dicts(self) -> list[dict[str, Any]]:
        """Every CallRecord as a dict (to ship across processes)."""
        with self._lock:
            return [asdict(r) for r in self.records]

    def merge(self, records: "Ledger | list[dict[str, Any]]") -> None:
        """Add another ledger's records (or :meth:`to_dicts` output)."""
        rows = records.to_dicts() if isinstance(records, Ledger) else records
        with self._lock:
            for d in rows:
                r = CallRecord(**d)
                self.records.append(r)
                if r.cost:
                    self._spent += r.cost
        if self.on_record is not None and rows:
            self.on_record([dict(d) for d in rows])

    # -- context ---------------------------------------------------------
    @contextlib.contextmanager
    def activate(self) -> Iterator["Ledger"]:
        """Make this the ledger :func:`ainvoke` records into within the block
        (and in asyncio tasks created inside it)."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)


__all__ = [
    "BudgetExceeded",
    "CallRecord",
    "DEFAULT_PRICES",
    "Ledger",
    "Totals",
    "current_ledger",
    "load_prices",
    "price_call",
    "price_of",
    "price_table",
    "reset_prices",
    "set_prices",
]
