"""Shared records of sgieval (DESIGN.md "Contracts": items -> responses -> scores -> report): pydantic models, each
one JSON line in the run folder (``runs/<run_id>/{items,responses,scores}.jsonl``)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_serializer, model_validator

from .files import lone_surrogate, repair_deep
from .replies import THINK_CLOSE, THINK_OPEN, join_reasoning, split_reasoning

# --------------------------------------------------------------------------- tasks
DEEP_RESEARCH = "deep_research"
IDEA_GENERATION = "idea_generation"
DRY_EXPERIMENT = "dry_experiment"
WET_EXPERIMENT = "wet_experiment"
EXPERIMENTAL_REASONING = "experimental_reasoning"
OPEN_CREATIVITY = "open_creativity"
FEASIBILITY = "feasibility"
GENERIC = "generic"

SGI_TASKS = (DEEP_RESEARCH, IDEA_GENERATION, DRY_EXPERIMENT, WET_EXPERIMENT, EXPERIMENTAL_REASONING)

CORPUS = "*"
"""``Score.item_id`` of a corpus-level score (computed over all items of a model, e.g. SFBench's kappa)."""


Status = Literal["ok", "judge_error", "infra_error", "parse_error", "not_run", "input_error", "truncated", "empty"]
"""Per-record status (METRICS.md D.7, D.10): only ``ok`` scores enter metric means; ``truncated`` (cut by the token
limit) and ``empty`` (no final text) come from the target's reply and pass on to its Scores."""


# ------------------------------------------------------------------------- records
class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Repairable(_Record):
    """A record whose lone surrogates become U+FFFD, flagged in ``text_repaired`` if it has one (written when set)."""

    @model_serializer(mode="wrap")
    def _drop_unset_flag(self, handler: Any) -> Any:
        out = handler(self)
        if isinstance(out, dict) and out.get("text_repaired") is False:
            del out["text_repaired"]
        return out

    @model_validator(mode="after")
    def _repair(self, info: ValidationInfo) -> Any:
        repaired = info.mode != "json" and _repair_model(self)  # parsed JSON holds no lone surrogate
        if repaired and "text_repaired" in type(self).model_fields:
            setattr(self, "text_repaired", True)
        return self


def _repair_model(m: BaseModel) -> bool:
    """Replace in place every lone surrogate in ``m``'s strings (and held records') by U+FFFD; whether any changed."""
    changed = False
    for name in type(m).model_fields:
        v = m.__dict__.get(name)
        if isinstance(v, BaseModel):
            changed = _repair_model(v) or changed
        elif isinstance(v, list) and any(isinstance(x, BaseModel) for x in v):
            changed = any([_repair_model(x) for x in v if isinstance(x, BaseModel)]) or changed
        else:
            nv, c = repair_deep(v)
            if c:
                m.__dict__[name] = nv
                changed = True
    return changed


class Item(_Repairable):
    """One benchmark item: ``id`` (``<benchmark>/<native id>``) is stable across runs, ``prompt`` is what the target
    model sees, ``reference`` the task-specific gold (None for open-ended tasks), ``type`` the benchmark's own category."""

    id: str
    benchmark: str
    task: str
    discipline: str = ""
    direction: str = ""
    type: str = ""
    prompt: str
    reference: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("prompt")
    @classmethod
    def _prompt_is_text(cls, v: str) -> str:
        at = lone_surrogate(v)
        if at is not None:
            raise ValueError(
                f"the prompt holds a lone surrogate (U+{ord(v[at]):04X} at character {at + 1}), which is no "
                "character: the model would see a different prompt; write the character it stands for"
            )
        return v


class Response(_Repairable):
    """One target-model reply to one item: ``text`` is the final text after the model's reasoning (METRICS.md D.8;
    ``reasoning`` is never scored), ``answer`` the parsed answer, ``latency_s`` wall seconds, ``tokens`` {"input",
    "output"}, ``cost`` USD. A failed call has ``status`` != "ok" and ``error``; it is never scored as a zero."""

    item_id: str
    model: str
    text: str = ""
    answer: Any = None
    latency_s: float | None = None
    tokens: dict[str, int] | None = None
    cost: float | None = None
    error: str | None = None
    status: Status = "ok"
    metadata: dict[str, Any] = Field(default_factory=dict)
    reasoning: str | None = None
    finish_reason: str | None = None
    text_repaired: bool = False
    """True when text of this record held lone surrogates, each replaced by U+FFFD."""
    invocation: str | None = None
    """The id of the invocation (``invocations.jsonl``) that made this record; None in older run folders."""

    @model_validator(mode="after")
    def _error_implies_status(self) -> "Response":
        if self.error and self.status == "ok":
            self.status = "infra_error"
        return self

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def split_reasoning(self) -> "Response":
        """This response with its reasoning moved out of ``text`` (METRICS.md D.8); an ``ok`` one left without text is
        ``empty`` (D.10).

        Returns:
            A new Response, or ``self`` when ``text`` has no think tag.
        """
        if THINK_CLOSE not in self.text and THINK_OPEN not in self.text:
            return self
        think, final = split_reasoning(self.text)
        update: dict[str, Any] = {"text": final, "reasoning": join_reasoning(self.reasoning, think)}
        if self.status == "ok" and not final.strip():
            update.update(status="empty", error="empty reply (reasoning only, no final text after it)")
        return self.model_copy(update=update)


# ------------------------------------------------------------------------ evidence
class _Evidence(_Record):
    """Base of the typed evidence records: one shape per ``kind``; ``details`` holds what a metric adds beyond it."""

    details: dict[str, Any] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list)
    """Flags this record raises about the score, e.g. ``injection_suspected`` (METRICS.md D.14)."""


class ToolCallEvidence(_Evidence):
    """One tool call made for a score: ``output`` is a summary of at most 500 characters, ``refused`` means not run
    (budget used up or tool not offered), ``judge`` the judge or agent that called it."""

    kind: Literal["tool_call"] = "tool_call"
    tool: str
    input: Any = None
    output: Any = None
    duration_s: float | None = None
    error: str | None = None
    refused: bool = False
    judge: str | None = None


class JudgeReplyEvidence(_Evidence):
    """Every reply of one judge call: ``raw`` (one text per attempt), ``error`` (why no reply parsed), ``structured``
    (``json_schema`` / ``function_calling`` (native), ``prompt`` (embedded schema), ``text`` (a tag format)), ``note``
    (why the native path was left), ``reasoning`` per attempt (METRICS.md D.8), ``prompt_hash`` (the first attempt's
    prompt, kept once per hash in ``prompts.jsonl``) and ``prompt_hashes`` (one per attempt). ``prompt`` and ``prompts``
    carry those prompts in memory until the run store writes them; they are never part of the score's JSON."""

    kind: Literal["judge_reply"] = "judge_reply"
    judge: str = ""
    raw: list[str] = Field(default_factory=list)
    attempts: int = 0
    error: str | None = None
    structured: str = ""
    note: str = ""
    reasoning: list[str] = Field(default_factory=list)
    prompt_hash: str = ""
    prompt: dict[str, Any] | None = Field(default=None, exclude=True)
    prompt_hashes: list[str] = Field(default_factory=list)
    prompts: list[dict[str, Any]] | None = Field(default=None, exclude=True)


class SandboxRunEvidence(_Evidence):
    """One program run in a sandbox: ``output`` is the tail of stderr + stdout, ``exit_code`` None when it never
    started."""

    kind: Literal["sandbox_run"] = "sandbox_run"
    input: str = ""
    backend: str = ""
    output: str = ""
    exit_code: int | None = None
    duration_s: float | None = None


class RetrievalEvidence(_Evidence):
    """Works retrieved for a score (METRICS.md E): ``works`` is [{"title", "source", "similarity"}...]."""

    kind: Literal["retrieval"] = "retrieval"
    query: str = ""
    works: list[dict[str, Any]] = Field(default_factory=list)
    embedder: str = ""
    n_requested: int | None = None
    n_found: int | None = None
    backend: str = ""


Evidence = Annotated[
    ToolCallEvidence | JudgeReplyEvidence | SandboxRunEvidence | RetrievalEvidence, Field(discriminator="kind")
]
"""One typed evidence record; ``kind`` selects the shape."""

EVIDENCE_KINDS: dict[str, type[BaseModel]] = {
    c.model_fields["kind"].default: c for c in get_args(get_args(Evidence)[0])
}


def _legacy_evidence(d: dict[str, Any]) -> dict[str, Any]:
    """An evidence dict without a known ``kind`` given the ``kind`` of its shape."""
    tool = d.get("tool")
    rest = {k: v for k, v in d.items() if k != "tool"}
    if tool == "judge":
        return {**rest, "judge": d.get("judge") or "", "kind": "judge_reply"}
    if tool == "sandbox":
        return {**rest, "kind": "sandbox_run", "input": str(d.get("input") or "")}
    if "query" in d and "works" in d:
        return {**d, "kind": "retrieval"}
    return {**d, "kind": "tool_call", "tool": str(tool or "unknown")}


def as_evidence(e: Any) -> Any:
    """A typed evidence record from a record, a dict with ``kind``, or a legacy dict without one.

    Args:
        e: an evidence record or dict.

    Returns:
        The typed record.
    """
    if isinstance(e, dict):
        if e.get("injection_suspected"):  # a truthy injection_suspected key becomes that flag
            e = {k: v for k, v in e.items() if k != "injection_suspected"}
            e["flags"] = [*(e.get("flags") or []), "injection_suspected"]
        if e.get("kind") not in EVIDENCE_KINDS:
            e = _legacy_evidence(e)
        cls = EVIDENCE_KINDS[e["kind"]]
        fields = set(cls.model_fields)
        out = {k: v for k, v in e.items() if k in fields}
        extra = {k: v for k, v in e.items() if k not in fields}
        if extra:  # keys beyond the shape (e.g. a retrieval's backend and counts) are kept in details
            out["details"] = {**extra, **dict(out.get("details") or {})}
        return cls.model_validate(out)
    return e


class Score(_Repairable):
    """One metric value for one (item, target model): ``value`` on the metric's native scale (``MetricSpec.range``),
    None when not computed (``status`` and ``error`` say why); ``judge`` is the judge model or ``"objective"``;
    ``evidence`` typed records (dicts converted by :func:`as_evidence`); ``details`` keeps sub-scores."""

    item_id: str
    model: str
    metric: str
    value: float | None = None
    rationale: str = ""
    evidence: list[Evidence] = Field(default_factory=list)
    judge: str = "objective"
    error: str | None = None
    status: Status = "ok"
    details: dict[str, Any] = Field(default_factory=dict)
    text_repaired: bool = False
    """True when text of this record held lone surrogates, each replaced by U+FFFD."""
    invocation: str | None = None
    """The id of the invocation that made this record, as for :class:`Response`."""

    @field_validator("evidence", mode="before")
    @classmethod
    def _typed_evidence(cls, v: Any) -> Any:
        """Dicts become typed evidence records."""
        return [as_evidence(e) for e in v] if isinstance(v, (list, tuple)) else v

    @property
    def flags(self) -> list[str]:
        """Flags raised by this score's evidence (e.g. ``injection_suspected``), in order, without repeats."""
        return list(dict.fromkeys(f for e in self.evidence for f in getattr(e, "flags", ())))

    @model_validator(mode="after")
    def _consistent(self) -> "Score":
        if self.status == "ok" and (self.value is None or math.isnan(self.value)):
            if self.error is None:
                raise ValueError(f"Score {self.metric} for {self.item_id}: status ok needs a value")
            self.status = "parse_error"
        return self

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Label(_Repairable):
    """One human label for one (item, target model, metric[, criterion]): ``value`` on the metric's scale or the
    criterion's (0-10); ``created_at`` an ISO 8601 UTC timestamp. The latest label per :attr:`key` counts."""

    item_id: str
    model: str
    metric: str
    criterion: str | None = None
    value: float
    labeller: str = ""
    created_at: str = ""
    note: str = ""
    text_repaired: bool = False
    """True when text of this label held lone surrogates, each replaced by U+FFFD."""

    sample: str = ""
    """How the unit was chosen: ``random``, ``disagreement`` (where the judges differ most), ``user`` (picked in the
    viewer) or "" (imported: not known)."""

    @field_validator("value", mode="before")
    @classmethod
    def _number(cls, v: Any) -> Any:
        if isinstance(v, bool) or (isinstance(v, float) and not math.isfinite(v)):
            raise ValueError(f"a label value must be a finite number, got {v!r}")
        return v

    @property
    def key(self) -> tuple[str, str, str, str | None, str]:
        """(item_id, model, metric, criterion, labeller): one label per key counts (the latest)."""
        return (self.item_id, self.model, self.metric, self.criterion, self.labeller)


MetricKind = Literal["objective", "judge", "rubric"]


class MetricSpec(_Record):
    """Declaration of a metric: ``range`` is the native (min, max) of per-item values; ``source`` cites the paper
    section, spec section, URL or "user"; ``benchmark`` the benchmark whose predefined metric this is; ``variant_of``
    the default metric this one is a named variant of; ``primary`` marks the metric the report ranks by; ``qualities``
    the words a request asks about that it measures (a mapping is read as its keys)."""

    name: str
    tasks: list[str]
    kind: MetricKind = "objective"
    range: tuple[float, float] = (0.0, 1.0)
    higher_is_better: bool = True
    description: str = ""
    source: str = ""
    benchmark: str = ""
    variant_of: str | None = None
    primary: bool = False
    unit: str = ""
    qualities: list[str] = Field(default_factory=list)
    aggregation: str = ""
    """How the report's per-model value is formed from the per-item values; "" for a plain mean over the valid items."""

    @field_validator("qualities", mode="before")
    @classmethod
    def _qualities(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return [str(q) for q in v]
        return [] if v is None else v

    def measures(self, quality: str) -> bool:
        """Whether this metric measures ``quality``.

        Args:
            quality: a quality word of the vocabulary.

        Returns:
            True when ``quality`` is one of the spec's declared qualities.
        """
        return quality in self.qualities

    @property
    def scale_label(self) -> str:
        lo, hi = self.range
        unit = f" {self.unit}" if self.unit else ""
        if not math.isfinite(hi):
            return f"count >= {lo:g}{unit}"
        return f"{lo:g}-{hi:g}{unit}"
