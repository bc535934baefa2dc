"""SciAidanBench / AidanBench predefined metrics, counted from answer records.

The records are those of METRICS.md B.7 (stored and replayed, or produced by
the generation protocol in :mod:`.aidanbench_protocol`); each Response keeps
them in ``metadata["records"]``.  METRICS.md B.6, C.7 and D.6:

- ``aidan_accepted_answers`` (default, primary): records whose
  ``stopping_condition`` is null (the SciAidanBench README's "accepted
  answers"); per question 0..cap, model score = sum over questions.
- ``aidan_published_count``: ``len(list)``, which includes the rejected
  terminating answer (SciAidanBench ``analysis/utils.py``, used for the
  published figures); a named variant of the accepted count.
- ``aidan_mean_coherence``: mean ``coherence_score`` (0-100, stored judge) of
  the accepted answers of a question.
- ``aidan_mean_novelty``: mean ``embedding_dissimilarity_score`` (0-1) of the
  accepted answers of a question.
"""

from __future__ import annotations

from typing import Any

from ..core import OPEN_CREATIVITY, Item, JudgeReplyEvidence, MetricSpec, Response, Score
from .base import Metric, ScoringContext

SRC = "METRICS.md B.6, C.7, D.6; SciAidanBench (github CFN-softbio/SciAidanBench aaa03c4)"

ACCEPTED = MetricSpec(
    name="aidan_accepted_answers",
    tasks=[OPEN_CREATIVITY],
    kind="objective",
    range=(0, float("inf")),
    higher_is_better=True,
    benchmark="sciaidanbench",
    primary=True,
    unit="answers",
    qualities={"creativity": 1, "novelty": 3},
    description="Accepted answers per question: records with stopping_condition null. Model score = sum over questions.",
    source=SRC,
)
PUBLISHED = MetricSpec(
    name="aidan_published_count",
    tasks=[OPEN_CREATIVITY],
    kind="objective",
    range=(0, float("inf")),
    higher_is_better=True,
    benchmark="sciaidanbench",
    variant_of="aidan_accepted_answers",
    unit="answers",
    description="Published count per question: len(list) including the rejected terminating answer "
    "(analysis/utils.py); normally accepted + 1.",
    source=SRC,
)
COHERENCE = MetricSpec(
    name="aidan_mean_coherence",
    tasks=[OPEN_CREATIVITY],
    kind="objective",
    range=(0, 100),
    higher_is_better=True,
    benchmark="sciaidanbench",
    description="Mean stored coherence_score (0-100, o1-mini judge) of the accepted answers of a question.",
    source=SRC,
)
NOVELTY = MetricSpec(
    name="aidan_mean_novelty",
    tasks=[OPEN_CREATIVITY],
    kind="objective",
    range=(0, 1),
    higher_is_better=True,
    benchmark="sciaidanbench",
    qualities={"novelty": 2},
    description="Mean stored embedding_dissimilarity_score (1 - max cosine vs earlier answers) of accepted answers.",
    source=SRC,
)


STORED_JUDGE = "o1-mini"
"""Coherence (and LLM-novelty) judge of the published SciAidanBench run (METRICS.md B.2, B.4)."""
STORED_EMBEDDER = "text-embedding-3-large"
"""Embedding model of the stored ``embedding_dissimilarity_score`` (METRICS.md B.3)."""


def judged_by(metadata: dict[str, Any]) -> dict[str, str]:
    """Who decided the acceptance of a question's answers (issue 17 item 2).

    Live protocol runs name their judge and embedder in the response
    metadata (``judge``, ``embedder``): origin ``live``.  Stored (replayed)
    records do not name them, so the benchmark definition is used: coherence
    by ``o1-mini`` and novelty by ``text-embedding-3-large`` embeddings
    (METRICS.md B.2-B.4), origin ``stored``.  Keys: ``coherence``,
    ``novelty``, ``origin``, ``source``."""
    if metadata.get("judge"):
        return {
            "coherence": str(metadata["judge"]),
            "novelty": str(metadata.get("embedder") or "unknown embedder"),
            "origin": "live",
            "source": "this run's judge and embedder",
        }
    return {
        "coherence": str(metadata.get("stored_judge") or STORED_JUDGE),
        "novelty": str(metadata.get("stored_embedder") or STORED_EMBEDDER),
        "origin": "stored",
        "source": (
            "the stored records"
            if metadata.get("stored_judge")
            else "the SciAidanBench definition, METRICS.md B.2-B.3: the stored records do not name them"
        ),
    }


def accepted_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records with ``stopping_condition`` null (D.6)."""
    return [r for r in records if r.get("stopping_condition") is None]


def record_flag(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How far a question's answer list can be trusted as a count (issue 17 item 1).

    - ``{"missing": True, ...}``: the list is empty -- no answer was recorded,
      a missing observation (its count 0 is not a measurement);
    - ``{"censored": True, "stop_error": message, ...}``: the list ended with
      an error record (``error_message`` / ``error_type``, or the legacy
      ``stopping_condition: "error"``, METRICS.md B.7): generation stopped
      by an error, not by the stop rule, so the count is a lower bound;
    - ``{}`` otherwise.
    The published counting is unchanged; these flags go into ``Score.details``
    so the report lists them and tests the ranking without them."""
    if not records:
        return {"missing": True, "flag_reason": "empty stored list: no answer was recorded for this question"}
    last = records[-1]
    if last.get("error_message") or last.get("error_type") or last.get("stopping_condition") == "error":
        msg = str(last.get("error_message") or last.get("error_type") or "stopping_condition 'error'")
        n = len(accepted_records(records))
        return {
            "censored": True,
            "stop_error": msg[:300],
            "flag_reason": f"stopped by error after {n} accepted answer{'' if n == 1 else 's'} (a lower bound)",
        }
    return {}


class AnswerCountMetrics(Metric):
    """The four record-count metrics of one question (see module docstring).

    Needs ``response.metadata["records"]``; without it every score is a
    ``parse_error`` naming the missing records.  Means over zero accepted
    answers are undefined: value None, status ``not_run``, reason given.
    """

    specs = [ACCEPTED, PUBLISHED, COHERENCE, NOVELTY]

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        if not response.ok:
            return self.failed(item, response, response.status, f"no response: {response.error}")
        records = response.metadata.get("records")
        if not isinstance(records, list):
            return self.failed(
                item,
                response,
                "parse_error",
                "response has no answer records (metadata['records']); the open-creativity "
                "metrics need the generation protocol or a SciAidanBench replay",
            )
        acc = accepted_records(records)
        stop = records[-1].get("final_stopping_condition") or records[-1].get("stopping_condition") if records else None
        flag = {**record_flag(records), "judged_by": judged_by(response.metadata)}
        why = f"{len(acc)} accepted of {len(records)} stored answers; stopped by {stop or 'no stop recorded'}"
        if flag.get("flag_reason"):
            why += f" ({'missing' if flag.get('missing') else 'censored'}: {flag['flag_reason']})"
        out = [
            Score(
                item_id=item.id,
                model=response.model,
                metric=ACCEPTED.name,
                value=float(len(acc)),
                rationale=why,
                details=dict(flag),
            ),
            Score(
                item_id=item.id,
                model=response.model,
                metric=PUBLISHED.name,
                value=float(len(records)),
                rationale=f"len(list) = {len(records)} (includes the rejected terminating answer)",
                details=dict(flag),
            ),
        ]
        for spec, key in ((COHERENCE, "coherence_score"), (NOVELTY, "embedding_dissimilarity_score")):
            vals = [float(r[key]) for r in acc if r.get(key) is not None]
            if vals:
                out.append(
                    Score(
                        item_id=item.id,
                        model=response.model,
                        metric=spec.name,
                        value=sum(vals) / len(vals),
                        rationale=f"mean {key} over {len(vals)} accepted answers",
                        details=dict(flag),
                    )
                )
            else:
                out.append(
                    Score(
                        item_id=item.id,
                        model=response.model,
                        metric=spec.name,
                        value=None,
                        status="not_run",
                        error=f"no accepted answers with {'an' if key[0] in 'aeiou' else 'a'} {key}",
                        details={"not_applicable": True, **flag},
                    )
                )
        flagged = [r for r in records if r.get("flags")]
        if flagged:
            # METRICS.md D.14: an answer carrying the judge's own tags is flagged on every score of the question
            nums = [r.get("answer_num") for r in flagged]
            raw = [
                e.get("raw", "")
                for e in response.metadata.get("judge_raw") or []
                if e.get("answer_num") in nums and e.get("flags")
            ]
            ev = JudgeReplyEvidence(
                judge=str(response.metadata.get("judge") or ""),
                raw=raw,
                attempts=len(raw),
                structured="text",
                flags=sorted({f for r in flagged for f in r["flags"]}),
                details={"answer_nums": nums},
            )
            out = [o.model_copy(update={"evidence": [*o.evidence, ev]}) for o in out]
        return out


def metrics(options: dict | None = None) -> list[Metric]:
    """Predefined SciAidanBench metrics."""
    return [AnswerCountMetrics()]
