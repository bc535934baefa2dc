"""Shared records of sgieval (DESIGN.md "Contracts": items -> responses -> scores -> report): pydantic models, each
one JSON line in the run folder (``runs/<run_id>/{items,responses,scores}.jsonl``)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

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
"""Per-record status (METRICS.md D.7, D.10).  Only ``ok`` scores enter metric means; the others are counted and listed
in the report's failures section.  ``truncated`` (the reply was cut by the token limit) and ``empty`` (no final text)
come from the target's reply and are passed on to its Scores."""


# ------------------------------------------------------------------------- records
class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)


class _Repairable(_Record):
    """A record that flags repaired text (``text_repaired``); the flag is written only when set, so records
    without repaired text keep their shape."""

    @model_serializer(mode="wrap")
    def _drop_unset_flag(self, handler: Any) -> Any:
        out = handler(self)
        if isinstance(out, dict) and out.get("text_repaired") is False:
            del out["text_repaired"]
        return out

    @model_validator(mode="after")
    def _repair(self, info: ValidationInfo) -> Any:
        if info.mode != "json" and _repair_model(self):  # parsed JSON holds no lone surrogate
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
            for x in v:
                changed = (_repair_model(x) if isinstance(x, BaseModel) else False) or changed
        else:
            nv, c = repair_deep(v)
            if c:
                m.__dict__[name] = nv
                changed = True
    return changed


class Item(_Record):
    """One benchmark item.

    ``id`` is stable across runs (``<benchmark>/<native id>``).  ``prompt`` is what the target model sees; ``reference``
    is the task-specific gold (answer string, reference steps, unit tests, protocol, option index, Likert value, or None
    for open-ended tasks).  ``type`` is the benchmark's own category (SGI-Bench Table 1 target category, reasoning type,
    ...), "" when none.
    """

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

    @model_validator(mode="after")
    def _repair_rest(self, info: ValidationInfo) -> "Item":
        if info.mode != "json":  # JSON text cannot hold a lone surrogate (its parser refuses one): nothing to do
            _repair_model(self)  # reference and metadata: a lone surrogate becomes U+FFFD
        return self


class Response(_Repairable):
    """One target-model reply to one item.

    ``text`` is the raw reply ("" when the call failed), ``answer`` the parsed answer (task-specific; None when not
    parsed), ``latency_s`` wall seconds, ``tokens`` {"input": int, "output": int} when known, ``cost`` in USD when
    known.  A failed call has ``status`` != "ok" and ``error`` gives the reason; it is never scored as a zero.
    ``metadata`` keeps replay provenance (e.g. the stored SciAidanBench records with their stored judge scores).

    ``text`` is the final text after the model's reasoning (METRICS.md D.8: everything up to the last ``</think>`` is
    moved to ``reasoning``, together with any reasoning the server returned apart, e.g. ``reasoning_content``;
    ``reasoning`` is never scored).  ``finish_reason`` is the server's (``stop``, ``length``...; None when unknown).  A
    reply cut by the token limit has status ``truncated``, one with no final text ``empty`` (D.10).
    """

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
    """True when text of this record (from a server or a file) held lone surrogates (``"\\ud800"``: valid
    JSON, no character), each replaced by U+FFFD so the record can be stored and read back."""
    invocation: str | None = None
    """The id of the invocation that made this record (a row of the run folder's ``invocations.jsonl``: an
    ``ask``, a ``resume``, an ``ask --into``); None in run folders written before invocations were kept."""

    @model_validator(mode="after")
    def _error_implies_status(self) -> "Response":
        if self.error and self.status == "ok":
            self.status = "infra_error"
        return self

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def split_reasoning(self) -> "Response":
        """This response with its reasoning moved out of ``text`` (METRICS.md D.8): ``text`` becomes the text after the
        last ``</think>``, the thinking joins ``reasoning``; an ``ok`` one left without text is ``empty`` (D.10).

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
    """Base of the typed evidence records (DESIGN.md "Contracts"): one shape per ``kind``, serialised with ``kind``;
    ``details`` holds what a metric adds beyond the shape (unit test number, judged steps, votes...)."""

    details: dict[str, Any] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list)
    """Flags this record raises about the score, e.g. ``injection_suspected`` (METRICS.md D.14)."""


class ToolCallEvidence(_Evidence):
    """One tool call made for a score (``web_search``, ``read_pdf``, ``run_python``...): ``input`` (arguments),
    ``output`` (a summary of at most 500 characters), ``duration_s`` seconds, ``error`` (the exception type name or the
    reason when it failed), ``refused`` (not run: budget used up or tool not offered), ``judge`` (the judge or agent
    that called it)."""

    kind: Literal["tool_call"] = "tool_call"
    tool: str
    input: Any = None
    output: Any = None
    duration_s: float | None = None
    error: str | None = None
    refused: bool = False
    judge: str | None = None


class JudgeReplyEvidence(_Evidence):
    """Every reply of one judge call: ``raw`` (one text per attempt), ``attempts``, ``error`` (why no reply parsed; None
    when one did), ``structured`` (how the reply was asked for: ``json_schema`` / ``function_calling`` (native),
    ``prompt`` (embedded schema, fallback), ``text`` (a tag format), "" for records written before this field), ``note``
    (why the native path was left), ``reasoning`` (the text up to the last ``</think>`` per attempt, METRICS.md D.8),
    ``flags`` (``injection_suspected`` when the judged text carries the judge's own output tags, D.14), ``prompt_hash``
    (the full prompt sent, kept once per hash in the run folder's ``prompts.jsonl``, :mod:`sgieval.core.prompts`; "" for
    records written before prompts were kept; the first attempt's when the judge was asked again), ``prompt_hashes``
    (the hash of the prompt of each attempt, in order, one per reply in ``raw``: a retry after a parse error sends the
    prompt, the earlier reply and the error, a prompt of its own; [] for records written before retry prompts were
    kept).  ``prompt`` and ``prompts`` carry those prompts (:func:`~sgieval.core.prompts.prompt_record`) in memory until
    the run store writes them; they are never part of the score's JSON."""

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
    """One program run in a sandbox: ``input`` (what ran, e.g. "unit test 3"), ``backend``, ``output`` (the tail of
    stderr + stdout), ``exit_code`` (None when it never started), ``duration_s`` wall seconds."""

    kind: Literal["sandbox_run"] = "sandbox_run"
    input: str = ""
    backend: str = ""
    output: str = ""
    exit_code: int | None = None
    duration_s: float | None = None


class RetrievalEvidence(_Evidence):
    """Works retrieved for a score (METRICS.md E): ``query`` (exact text), ``works`` ([{"title", "source",
    "similarity"}...]), ``embedder``, ``n_requested`` works asked for (None when not fixed), ``n_found``, ``backend``
    (search backend)."""

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
    "tool_call": ToolCallEvidence,
    "judge_reply": JudgeReplyEvidence,
    "sandbox_run": SandboxRunEvidence,
    "retrieval": RetrievalEvidence,
}


def _legacy_evidence(d: dict[str, Any]) -> dict[str, Any]:
    """An evidence dict without ``kind`` mapped to its typed shape: the shape's fields kept, the rest in ``details``."""
    tool = d.get("tool")
    if tool == "judge":
        cls: type[_Evidence] = JudgeReplyEvidence
        d = {**d, "judge": d.get("judge") or "", "kind": "judge_reply"}
        d.pop("tool", None)
    elif tool == "sandbox":
        cls = SandboxRunEvidence
        d = {**d, "kind": "sandbox_run", "input": str(d.get("input") or "")}
        d.pop("tool", None)
    elif "query" in d and "works" in d:
        cls = RetrievalEvidence
        d = {**d, "kind": "retrieval"}
    else:
        cls = ToolCallEvidence
        d = {**d, "kind": "tool_call", "tool": str(tool or "unknown")}
    fields = set(cls.model_fields)
    out = {k: v for k, v in d.items() if k in fields}
    extra = {k: v for k, v in d.items() if k not in fields}
    if extra:
        out["details"] = {**extra, **dict(out.get("details") or {})}
    return out


def _flag_keys(d: dict[str, Any]) -> dict[str, Any]:
    """A truthy ``injection_suspected`` key becomes that flag in ``flags``."""
    if d.get("injection_suspected"):
        d = {k: v for k, v in d.items() if k != "injection_suspected"}
        d["flags"] = [*(d.get("flags") or []), "injection_suspected"]
    return d


def as_evidence(e: Any) -> Any:
    """A typed evidence record from a record, a dict with ``kind``, or a legacy dict (see :func:`_legacy_evidence`).

    Args:
        e: an evidence record or dict.

    Returns:
        The typed record.
    """
    if isinstance(e, _Evidence):
        return e
    if isinstance(e, dict):
        e = _flag_keys(e)
        kind = e.get("kind")
        if kind in EVIDENCE_KINDS:
            cls = EVIDENCE_KINDS[kind]
            fields = set(cls.model_fields)
            out = {k: v for k, v in e.items() if k in fields}
            extra = {k: v for k, v in e.items() if k not in fields}
            if extra:  # keys beyond the shape (e.g. a retrieval's backend and counts) are kept in details
                out["details"] = {**extra, **dict(out.get("details") or {})}
            return cls.model_validate(out)
        return EVIDENCE_KINDS[_legacy_evidence(e)["kind"]].model_validate(_legacy_evidence(e))
    return e


class Score(_Repairable):
    """One metric value for one (item, target model).

    ``value`` is on the metric's declared native scale (``MetricSpec.range``); None when the score could not be
    computed, in which case ``status`` says why and ``error`` gives the reason.  ``judge`` is the judge model name, or
    ``"objective"`` for metrics computed without a model.  ``evidence`` is a list of typed records (:data:`Evidence`:
    ``tool_call``, ``judge_reply``, ``sandbox_run``, ``retrieval``), serialised with ``kind``; dicts given here (and
    legacy run folders) are converted (:func:`as_evidence`). ``details`` keeps sub-scores (e.g. per-criterion rubric
    scores).
    """

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
    """True when text of this record (a judge's reply, a rationale, evidence) held lone surrogates, each
    replaced by U+FFFD."""
    invocation: str | None = None
    """The id of the invocation that made this record (``invocations.jsonl``, as for :class:`Response`); None
    in older run folders."""

    @field_validator("evidence", mode="before")
    @classmethod
    def _typed_evidence(cls, v: Any) -> Any:
        """Dicts become typed evidence records (legacy run folders and tool-pool dicts included)."""
        return [as_evidence(e) for e in v] if isinstance(v, (list, tuple)) else v

    @property
    def flags(self) -> list[str]:
        """Flags raised by this score's evidence (e.g. ``injection_suspected``), in order, without repeats."""
        out: list[str] = []
        for e in self.evidence:
            for f in getattr(e, "flags", ()):
                if f not in out:
                    out.append(f)
        return out

    @model_validator(mode="after")
    def _consistent(self) -> "Score":
        if self.status == "ok":
            if self.value is None or (isinstance(self.value, float) and math.isnan(self.value)):
                if self.error is None:
                    raise ValueError(f"Score {self.metric} for {self.item_id}: status ok needs a value")
                self.status = "parse_error"
        return self

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Label(_Repairable):
    """One human label: the researcher's own value for one (item, target model, metric[, criterion]).

    ``value`` is on the scale of the metric (``MetricSpec.range``) or, with ``criterion``, of the rubric criterion
    (0-10). ``labeller`` names who labelled; ``created_at`` is an ISO 8601 UTC timestamp; ``note`` is free text.
    Labels are stored in the run folder's ``labels.jsonl``; for one (item, model, metric, criterion, labeller) the
    latest label counts. ``sample`` says how the unit was chosen.
    """

    item_id: str
    model: str
    metric: str
    criterion: str | None = None
    value: float
    labeller: str = ""
    created_at: str = ""
    note: str = ""
    text_repaired: bool = False
    """True when text of this label (a note from a file) held lone surrogates, each replaced by U+FFFD."""

    sample: str = ""
    """How the unit was chosen for labelling: ``random`` (a seeded uniform sample, ``sgieval label``),
    ``disagreement`` (where the judges differ most), ``user`` (a unit the labeller picked in the viewer, outside the
    random sample) or "" (imported: not known)."""

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
    """Declaration of a metric.

    ``range`` is the native (min, max) of per-item values; ``higher_is_better`` gives the direction; ``source`` cites
    the paper section, spec section, URL or "user".  ``benchmark`` names the benchmark whose predefined metric this is
    ("" for custom metrics).  ``variant_of`` names the default metric this one is a named variant of (e.g. the code's
    behaviour where METRICS.md C lists a discrepancy).  ``primary`` marks the metric the report ranks by.

    ``qualities`` lists the qualities the metric measures (the words a request
    asks about: ``creativity``, ``novelty``, ``feasibility``, ``accuracy``,
    ...).  Which of several metrics a benchmark prefers for a quality is the
    benchmark's declaration (``Benchmark.prefer``), not the metric's.  A
    mapping is read as its keys, in order.
    """

    model_config = ConfigDict(extra="forbid")

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
    """How the report's per-model value is formed from the per-item values when a reader needs to know
    which runs or items it includes (the report states it); "" for a plain mean over the valid items."""

    @field_validator("qualities", mode="before")
    @classmethod
    def _qualities(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return [str(q) for q in v]
        return [] if v is None else v

    def measures(self, quality: str) -> bool:
        """Whether this metric measures ``quality``.

        Args:
            quality: a quality word of the vocabulary (``"rigor"``, ``"creativity"``).

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
