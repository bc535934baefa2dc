"""Tokens, latency and cost per model and role (the :class:`Ledger`), and the run budget.

Prices: `genai-prices <https://github.com/pydantic/genai-prices>`_ bundled data, exact model names only (unknown:
cost ``None``); user prices (``--price``, :func:`set_prices`) win.  Cost of one call (USD, prices per 1M tokens)::

    cost = (input - cache_read - cache_write) * price_in + cache_read * price_cache_read
           + cache_write * price_cache_write + output * price_out
"""

from __future__ import annotations

import contextlib
import contextvars
from importlib.metadata import version
import uuid
import functools
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping


from ..core import InputError, ModelRef, SgievalError, load_yaml

Prices = dict[str, tuple[float, float]]
"""A user price table: model -> (USD per 1M input tokens, USD per 1M output tokens)."""

_prices: Prices = {}


class BudgetExceeded(SgievalError):
    """The run's budget (``--budget``, USD) is spent; raised before a call."""

    def __init__(self, spent_usd: float, budget_usd: float, *, model: str = "", role: str = ""):
        self.spent_usd, self.budget_usd, self.model, self.role = spent_usd, budget_usd, model, role
        super().__init__(
            f"budget of ${budget_usd:.4f} reached (${spent_usd:.4f} spent at that point; calls already in "
            f"flight still finish and count); refused a {role or 'model'} call to {model or '?'}.",
            what="--budget",
            fix="raise --budget, or continue the run with `sgieval resume <run id> --budget <USD>`",
        )


def load_prices(source: str | Path | Mapping[str, Any]) -> Prices:
    """Parse a user price table.

    Args:
        source: a dict or a YAML file, ``model: {input: x, output: y}`` or ``model: [x, y]`` (USD per 1M tokens).

    Returns:
        {model: (USD per 1M input tokens, USD per 1M output tokens)}.

    Raises:
        InputError: naming the file and the model on a malformed or negative entry.
    """
    yaml_fix = "write the price table as YAML: model: {input: USD, output: USD} per 1M tokens"
    where = "<price table>" if isinstance(source, Mapping) else str(Path(source))
    data = source if isinstance(source, Mapping) else load_yaml(Path(source), fix=yaml_fix)
    if not isinstance(data, Mapping):
        raise InputError(
            "price table must map model -> {input: USD/1M, output: USD/1M}",
            what=where,
            fix="e.g. `gpt-4o: {input: 2.5, output: 10}`",
        )
    out: Prices = {}
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
        out[str(model)] = (pin, pout)
    return out


def set_prices(source: str | Path | Mapping[str, Any], *, replace: bool = False) -> None:
    """Add to (or replace) the process-wide user prices.

    Args:
        source: as for :func:`load_prices`.
        replace: replace the prices instead of adding to them.

    Raises:
        InputError: on a bad price file or table.
    """
    parsed = load_prices(source)
    if replace:
        _prices.clear()
    _prices.update(parsed)


def price_table() -> Prices:
    """A copy of the process-wide user prices.

    Returns:
        model -> (USD per 1M input tokens, USD per 1M output tokens).
    """
    return dict(_prices)


def reset_prices() -> None:
    """Forget the prices set with :func:`set_prices`."""
    _prices.clear()


def _own_price(model: str, prices: Mapping[str, tuple[float, float]] | None) -> tuple[float, float] | None:
    """The user price of the full model string, else of its name, else of an entry with that name."""
    table = _prices if prices is None else prices
    if model in table:
        return table[model]
    if ":" in model:  # the model id after the provider: openai:gpt-4o -> gpt-4o
        return table.get(ModelRef.parse(model, strict=False).name)
    return next((v for k, v in table.items() if ":" in k and ModelRef.parse(k, strict=False).name == model), None)


@functools.lru_cache(maxsize=512)
def _listed(model: str) -> tuple[str | None, str, bool] | None:
    """(genai-prices provider id, model reference, batch price listed) of a model it knows exactly, else None."""
    parsed = ModelRef.parse(model, strict=False)
    if parsed.offline:
        return None
    provider_id, ref = (parsed.provider, parsed.name) if parsed.provider else (None, model)
    try:
        listed = getattr(_calc(provider_id, ref, {"input": 1, "output": 1}), "model", None)
    except LookupError:
        return None
    variants = getattr(listed, "price_variants", None) or ()
    return provider_id, ref, any(getattr(v, "when", {}).get("processing") == "batch" for v in variants)


def _calc(provider_id: str | None, ref: str, usage: Mapping[str, int], *, batch: bool = False) -> Any:
    """genai-prices' price of one call (LookupError when unknown), with ``batch`` its batch price variant."""
    from genai_prices import Usage, calc_price

    inp = int(usage.get("input", 0))
    cache_read = min(int(usage.get("cache_read", 0) or 0), inp)
    cache_write = min(int(usage.get("cache_write", 0) or 0), inp - cache_read)
    out = int(usage.get("output", 0))
    reasoning = min(int(usage.get("reasoning", 0) or 0), out)
    fields = {"cache_read_tokens": cache_read, "cache_write_tokens": cache_write, "output_reasoning_tokens": reasoning}
    tokens = Usage(input_tokens=inp, output_tokens=out, **{k: v for k, v in fields.items() if v})
    return calc_price(tokens, ref, provider_id=provider_id, price_context={"processing": "batch"} if batch else None)


def price_source(model: str, prices: Mapping[str, tuple[float, float]] | None = None) -> str | None:
    """Where ``model``'s price comes from.

    Args:
        model: a model string.
        prices: user prices by model; None: the process-wide ones.

    Returns:
        ``"user"``, ``"genai-prices <version>"``, ``"free"`` (``local:``, ``replay:``), or None (unknown).
    """
    if _own_price(model, prices) is not None:
        return "user"
    if ModelRef.parse(model, strict=False).offline:
        return "free"
    if _listed(model) is not None:
        return f"genai-prices {version('genai-prices')}"
    return None


BATCH_DISCOUNT = 0.5
"""The share of the list (or user) price a batch call costs where genai-prices lists no batch price: 50%, the
published rate of OpenAI's Batch API (platform.openai.com/docs/guides/batch) and Anthropic's Message Batches."""


def price_call(
    model: str,
    usage: Mapping[str, int] | None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    *,
    batch: bool = False,
) -> float | None:
    """USD cost of one call (formula in the module doc).

    Args:
        model: the model string.
        usage: ``input``, ``output`` and, when reported, ``cache_read``, ``cache_write``, ``reasoning``.
        prices: a user price table (default: the process-wide one).
        batch: priced at genai-prices' batch price, else at :data:`BATCH_DISCOUNT` of the price.

    Returns:
        The cost in USD (>= 0), or None when the usage or the model's price is unknown.
    """
    if not usage:
        return None
    own = _own_price(model, prices)
    if own is not None:
        cost = usage.get("input", 0) * own[0] / 1e6 + usage.get("output", 0) * own[1] / 1e6
        return cost * BATCH_DISCOUNT if batch else cost
    listed = _listed(model)
    if listed is None:
        return None
    provider_id, ref, batch_price = listed
    if batch and batch_price:  # genai-prices' own batch price
        return float(_calc(provider_id, ref, usage, batch=True).total_price)
    cost = float(_calc(provider_id, ref, usage).total_price)
    return cost * BATCH_DISCOUNT if batch else cost


def unpriced_models(models: list[str], prices: Mapping[str, tuple[float, float]] | None = None) -> list[str]:
    """The models whose price is unknown: a budget cannot be kept on them.

    Args:
        models: model strings.
        prices: user prices by model.

    Returns:
        The unpriced ones, in order, each once.
    """
    return [m for m in dict.fromkeys(models) if price_source(m, prices) is None]


@dataclass
class CallRecord:
    """One model call: tokens (None when not reported), latency (s), cost (USD, None when unknown)."""

    model: str
    role: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_s: float = 0.0
    cost: float | None = None
    cached: bool = False
    error: str | None = None
    cache_read_tokens: int | None = None
    reasoning_tokens: int | None = None
    call_id: str | None = None
    interrupted: bool = False
    batch: bool = False


INTERRUPTED = (
    "interrupted: the process ended after the request was sent and before its reply was recorded "
    "(the provider may have answered and billed it; tokens and cost unknown)"
)
"""The ``error`` of a call recovered by :meth:`Ledger.recover`."""


@dataclass
class Totals:
    """Totals for one (model, role): ``calls`` excludes cache hits; ``cost`` (USD) is None when no cost is known."""

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
    cache_read_tokens: int = 0


_current: contextvars.ContextVar["Ledger | None"] = contextvars.ContextVar("sgieval_ledger", default=None)


def current_ledger() -> "Ledger | None":
    """The ledger activated in this context.

    Returns:
        The ledger, or None.
    """
    return _current.get()


_RECORD_FIELDS = frozenset(CallRecord.__dataclass_fields__)


class Ledger:
    """Per-run account of model calls; ``on_record`` receives each new record as a dict (``ledger.jsonl``)."""

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
        self.spent_usd = 0.0
        """Sum of known costs in USD."""
        self.calls_made = 0
        self.calls_failed = 0
        self.on_send: Callable[[dict[str, Any]], None] | None = None
        """Called with ``{"call_id", "model", "role"}`` before a request is sent (``inflight.jsonl``)."""

    def begin(self, model: str, role: str) -> str | None:
        """Note that a call is about to send its request (to :attr:`on_send`).

        Args:
            model: the model's name.
            role: ``"target"``, ``"judge"`` or ``"agent"``.

        Returns:
            A new call id (32 hex digits) for :meth:`record`, or None without :attr:`on_send`.
        """
        if self.on_send is None:
            return None
        call_id = uuid.uuid4().hex
        self.on_send({"call_id": call_id, "model": model, "role": role})
        return call_id

    def recover(self, sent: list[dict[str, Any]]) -> list[CallRecord]:
        """Record each call of ``sent`` that has no record as ``interrupted``.

        Args:
            sent: rows :meth:`begin` wrote (``call_id``, ``model``, ``role``).

        Returns:
            The new ``interrupted`` records.
        """
        with self._lock:
            known = {r.call_id for r in self.records if r.call_id}
        first: dict[str, dict[str, Any]] = {}
        for row in sent:
            cid = row.get("call_id")
            if isinstance(cid, str) and cid not in known:
                first.setdefault(cid, row)
        new = [
            CallRecord(
                str(r.get("model", "")), str(r.get("role", "")), error=INTERRUPTED, call_id=cid, interrupted=True
            )
            for cid, r in first.items()
        ]
        self._add(new)
        return new

    def record(
        self,
        model: str,
        role: str,
        *,
        usage: Mapping[str, int] | None = None,
        latency_s: float = 0.0,
        cached: bool = False,
        error: str | None = None,
        call_id: str | None = None,
        batch: bool = False,
    ) -> CallRecord:
        """Record one call.

        Args:
            model: the model's name.
            role: ``"target"``, ``"judge"`` or ``"agent"``.
            usage: token counts (``input``, ``output``, ``cache_read``, ``cache_write``, ``reasoning``).
            latency_s: the call's wall time in seconds.
            cached: served by the call cache (no cost).
            error: the failure's reason, None when the call succeeded.
            call_id: the id :meth:`begin` gave the call.
            batch: the call went through a batch API.

        Returns:
            The record, with its cost in USD (None when the price is unknown).
        """
        cost = 0.0 if cached else None if error is not None else price_call(model, usage, self.prices, batch=batch)
        rec = CallRecord(
            model=model,
            role=role,
            input_tokens=int(usage["input"]) if usage else None,
            output_tokens=int(usage["output"]) if usage else None,
            latency_s=float(latency_s),
            cost=cost,
            cached=cached,
            error=error,
            cache_read_tokens=int(usage["cache_read"]) if usage and usage.get("cache_read") else None,
            reasoning_tokens=int(usage["reasoning"]) if usage and usage.get("reasoning") else None,
            call_id=call_id,
            batch=batch,
        )
        self._add([rec])
        return rec

    def _add(self, recs: list[CallRecord], rows: list[dict[str, Any]] | None = None) -> None:
        """Append and count ``recs``, then hand them (or ``rows``) to :attr:`on_record`."""
        with self._lock:
            for rec in recs:
                self.records.append(rec)
                if rec.cost:
                    self.spent_usd += rec.cost
                if not rec.cached:
                    self.calls_made += 1
                    self.calls_failed += rec.error is not None
        if self.on_record is not None and recs:
            self.on_record(rows if rows is not None else [asdict(r) for r in recs])

    def check_budget(self, model: str = "", role: str = "") -> None:
        """Raise :class:`BudgetExceeded` when ``spent_usd >= budget_usd`` (the first refusal kept in :attr:`stopped`).

        Args:
            model: the model about to be called (named in the refusal).
            role: its role.

        Raises:
            BudgetExceeded: the budget (USD) is spent.
        """
        if self.budget_usd is None or self.spent_usd < self.budget_usd:
            return
        with self._lock:
            if self.stopped is None:
                self.stopped = {
                    "spent_usd": self.spent_usd,
                    "budget_usd": self.budget_usd,
                    "model": model,
                    "role": role,
                    "calls": self.calls_made,
                }
        raise BudgetExceeded(self.spent_usd, self.budget_usd, model=model, role=role)

    def totals(self) -> dict[tuple[str, str], Totals]:
        """Totals per (model, role), in first-call order.

        Returns:
            (model, role) -> Totals (calls, tokens, latency in s, cost in USD).
        """
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
            t.cache_read_tokens += r.cache_read_tokens or 0
            if r.cost is None:
                t.unpriced_calls += 1
            else:
                t.cost = (t.cost or 0.0) + r.cost
        for t in out.values():
            if t.cost is None and not t.calls and t.cached_calls:
                t.cost = 0.0  # every call served by the call cache: nothing paid, whatever the price
        return out

    def total(self) -> Totals:
        """Grand total over every model and role (``model``/``role`` = "*").

        Returns:
            The Totals.
        """
        g = Totals(model="*", role="*")
        summed = [f for f in Totals.__dataclass_fields__ if f not in ("model", "role", "cost")]
        for t in self.totals().values():
            for f in summed:
                setattr(g, f, getattr(g, f) + getattr(t, f))
            if t.cost is not None:
                g.cost = (g.cost or 0.0) + t.cost
        return g

    def summary(self) -> dict[str, Any]:
        """The accounts for reports.

        Returns:
            JSON-ready ``{"rows", "total", "budget_usd", "spent_usd", "stopped"}``.
        """
        return {
            "rows": [asdict(t) for t in self.totals().values()],
            "total": asdict(self.total()),
            "budget_usd": self.budget_usd,
            "spent_usd": self.spent_usd,
            "stopped": self.stopped,
        }

    def to_dicts(self) -> list[dict[str, Any]]:
        """Every CallRecord as a dict (to ship across processes).

        Returns:
            One dict per record.
        """
        with self._lock:
            return [asdict(r) for r in self.records]

    def merge(self, records: "Ledger | list[dict[str, Any]]") -> None:
        """Add another ledger's records (or :meth:`to_dicts` output).

        Args:
            records: another ledger, or its :meth:`to_dicts` rows.
        """
        rows = records.to_dicts() if isinstance(records, Ledger) else records
        recs = [CallRecord(**{k: v for k, v in d.items() if k in _RECORD_FIELDS}) for d in rows]
        self._add(recs, [dict(d) for d in rows])

    @contextlib.contextmanager
    def activate(self) -> Iterator["Ledger"]:
        """Make this the ledger :func:`ainvoke` records into within the block.

        Yields:
            This ledger.
        """
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)
