"""SciAidanBench / AidanBench metrics counted from the answer records in ``Response.metadata["records"]`` (METRICS.md
B.6, B.7, C.7, D.6, D.15), and the B.5 stop rule.  Each spec's description gives its formula."""

from __future__ import annotations

from collections import defaultdict
from contextlib import suppress
from typing import Any, Callable, Sequence

from ..core import CORPUS, OPEN_CREATIVITY, Item, JudgeReplyEvidence, MetricSpec, Response, Score
from .base import Metric, ScoringContext
from .registry import metric

BENCHMARK = "sciaidanbench"

SRC = "METRICS.md B.6, C.7, D.6; SciAidanBench (github CFN-softbio/SciAidanBench aaa03c4)"
SRC_AIDAN = "METRICS.md B.6; AidanBench (github aidanmclaughlin/AidanBench a6bb325)"
SRC_POOLED = "METRICS.md D.6, D.15"

# The B.5 stop rule's thresholds (coherence 0-100, novelty 0-1), also the cut of AidanBench plot.py's count (B.6).
TAU_C = 15
TAU_N = 0.15
TAU_LLM = 0.15

COHERENCE_STOP = "coherence_threshold"
EMBEDDING_STOP = "embedding_dissimilarity_threshold"
LLM_STOP = "llm_dissimilarity_threshold"


def _spec(name: str, **kw: Any) -> MetricSpec:
    return MetricSpec(name=name, tasks=[OPEN_CREATIVITY], benchmark=BENCHMARK, **kw)


ACCEPTED = _spec(
    "aidan_accepted_answers",
    range=(0, float("inf")),
    primary=True,
    unit="answers",
    qualities=["creativity", "novelty"],
    description="Accepted answers per question (SciAidanBench README): records with stopping_condition null. "
    "Model score = sum over questions.",
    source=SRC,
)

_COUNT: dict[str, Any] = {"range": (0, float("inf")), "variant_of": ACCEPTED.name, "unit": "answers"}
PUBLISHED = _spec(
    "aidan_published_count",
    **_COUNT,
    description="Published count per question (SciAidanBench analysis/utils.py, the published figures): "
    "len(list) including the rejected terminating answer; normally accepted + 1. Model score = sum over questions.",
    source=SRC,
)
README_SCORE = _spec(
    "aidan_readme_score",
    **_COUNT,
    description="AidanBench README score S(q): the largest n such that answers 1..n of the list all have "
    "coherence C > tau_c (15) and embedding novelty N > tau_n (0.15), i.e. the accepted answers without the "
    "terminating one; summed over a question's stored lists. Model score = sum over questions.",
    source=SRC_AIDAN + " (README)",
)
LEADERBOARD = _spec(
    "aidan_leaderboard_score",
    **_COUNT,
    description="AidanBench plot.py (leaderboard) count per question: walk the list and stop at the first answer "
    "with N < 0.15 or coherence < 15; the answers before it count (LLM novelty ignored; coherence exactly 15 "
    "counts); summed over the question's lists of one temperature, the largest over temperatures. The "
    "leaderboard's model score is aidan_leaderboard_total.",
    source=SRC_AIDAN + " (plot.py)",
)
LEADERBOARD_TOTAL = _spec(
    "aidan_leaderboard_total",
    **_COUNT,
    description="AidanBench plot.py leaderboard score of a model (corpus level, a total, not a mean): the sum "
    "over questions of the aidan_leaderboard_score counts at one temperature, maximised over temperatures.",
    source=SRC_AIDAN + " (plot.py)",
)
COHERENCE = _spec(
    "aidan_mean_coherence",
    range=(0, 100),
    description="Mean stored coherence_score (0-100, the coherence judge) pooled over the accepted answers of "
    "the selected questions, first answers included (corpus level: one value per model).",
    source=SRC_POOLED,
)
COHERENCE_PER_ITEM = _spec(
    "aidan_mean_coherence_per_item",
    range=(0, 100),
    variant_of="aidan_mean_coherence",
    description="Mean stored coherence_score (0-100) of the accepted answers of a question; the model figure "
    "is the mean of these per-question means (each question weighs the same, however many answers it has).",
    source=SRC_POOLED + " (per-item reading)",
)
NOVELTY = _spec(
    "aidan_mean_novelty",
    qualities=["novelty"],
    description="Mean stored embedding_dissimilarity_score (1 - max cosine against the earlier answers, 0-1) "
    "pooled over the accepted answers of the selected questions, leaving out each list's first answer (its "
    "novelty is 1.0 by definition) (corpus level: one value per model).",
    source=SRC_POOLED,
)
NOVELTY_WITH_FIRST = _spec(
    "aidan_mean_novelty_with_first",
    variant_of="aidan_mean_novelty",
    description="Mean stored embedding_dissimilarity_score pooled over the accepted answers, each list's first "
    "answer (novelty 1.0 by definition) included; favours models with short lists (corpus level).",
    source=SRC_POOLED + " (with first answers)",
)
NOVELTY_PER_ITEM = _spec(
    "aidan_mean_novelty_per_item",
    variant_of="aidan_mean_novelty",
    description="Mean stored embedding_dissimilarity_score of a question's accepted answers without each list's "
    "first answer; the model figure is the mean of these per-question means (each question weighs the same).",
    source=SRC_POOLED + " (per-item reading)",
)


STORED_JUDGE = "o1-mini"  # coherence and LLM-novelty judge of the published SciAidanBench run (METRICS.md B.2, B.4)
STORED_EMBEDDER = "text-embedding-3-large"  # embedding model of the stored novelty (METRICS.md B.3)


def judged_by(metadata: dict[str, Any]) -> dict[str, str]:
    """Who decided the acceptance of a question's answers: the live run's judge and embedder, else the stored records'
    or the benchmark definition's (METRICS.md B.2-B.4).  Keys: ``coherence``, ``novelty``, ``origin``, ``source``."""
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
    """How far a question's answer list can be trusted as a count: ``missing`` (empty list), ``censored`` (ended by an
    error record, METRICS.md B.7: the count is a lower bound) or ``{}``."""
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


def answer_lists(metadata: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """``(temperature, records)`` of each stored list of one question (``metadata["lists"]``: each one's ``temperature``,
    ``start``, ``n``; without it one list); ValueError when ``lists`` does not cover the records exactly."""
    records = metadata.get("records") or []
    lists = metadata.get("lists")
    if not isinstance(lists, list) or not lists:
        return [(str(metadata.get("temperature", "")), list(records))]
    out = []
    at = 0
    for k, lst in enumerate(lists):
        start, n = int(lst.get("start", -1)), int(lst.get("n", -1))
        if start != at or n < 0:
            raise ValueError(f"metadata['lists'][{k}] starts at {start}, expected {at}")
        out.append((str(lst.get("temperature", "")), list(records[start : start + n])))
        at += n
    if at != len(records):
        raise ValueError(f"metadata['lists'] covers {at} of {len(records)} records")
    return out


def _num(r: dict[str, Any], key: str) -> float | None:
    v = r.get(key)
    return None if v is None or isinstance(v, bool) else float(v)


def _prefix(records: Sequence[dict[str, Any]], ok: Callable[[float, float], bool]) -> int:
    """How many records from the first have coherence and novelty and pass ``ok(coherence, novelty)``."""
    n = 0
    for r in records:
        c, nov = _num(r, "coherence_score"), _num(r, "embedding_dissimilarity_score")
        if c is None or nov is None or not ok(c, nov):
            break
        n += 1
    return n


def readme_score(records: Sequence[dict[str, Any]], tau_c: float = TAU_C, tau_n: float = TAU_N) -> int:
    """AidanBench README S(q) of one list (METRICS.md B.6): the largest n such that records 1..n all have coherence >
    ``tau_c`` and embedding novelty > ``tau_n`` (a missing value ends the prefix)."""
    return _prefix(records, lambda c, nov: c > tau_c and nov > tau_n)


def leaderboard_count(records: Sequence[dict[str, Any]]) -> int:
    """AidanBench ``plot.py`` count of one list (METRICS.md B.6): the records before the first one with embedding
    novelty < 0.15 or coherence < 15 (LLM novelty ignored; a missing value ends the walk)."""
    return _prefix(records, lambda c, nov: not (nov < TAU_N or c < TAU_C))


def pooled_values(
    lists: Sequence[tuple[str, Sequence[dict[str, Any]]]], key: str, *, first_answers: bool
) -> list[float]:
    """The ``key`` values of the accepted records (D.6) of every list; ``first_answers`` False leaves out each list's
    first record (D.15)."""
    accepted = (
        r
        for _t, recs in lists
        for k, r in enumerate(recs)
        if (k or first_answers) and r.get("stopping_condition") is None
    )
    return [v for v in (_num(r, key) for r in accepted) if v is not None]


STOP_REASONS = {  # what the answer a ``stopping_condition`` rejected was
    COHERENCE_STOP: "incoherent",
    EMBEDDING_STOP: "not novel (embedding)",
    LLM_STOP: "not novel (LLM judge)",
}


def stopping_condition(
    coherence: float,
    novelty: float,
    llm_novelty: float | None = None,
    *,
    tau_c: float = TAU_C,
    tau_n: float = TAU_N,
    tau_llm: float = TAU_LLM,
) -> str | None:
    """B.5 stop rule, in this order: coherence <= ``tau_c``; embedding novelty < ``tau_n``; LLM novelty (when not None)
    < ``tau_llm``; else None."""
    if coherence <= tau_c:
        return COHERENCE_STOP
    if novelty < tau_n:
        return EMBEDDING_STOP
    if llm_novelty is not None and llm_novelty < tau_llm:
        return LLM_STOP
    return None


def _answer_marks(
    lists: Sequence[tuple[str, Sequence[dict[str, Any]]]],
    tau_c: float = TAU_C,
    tau_n: float = TAU_N,
    tau_llm: float = TAU_LLM,
) -> list[dict[str, Any]]:
    """Each stored answer of one question (``n``, ``coherence``, ``novelty``, ``llm_novelty``, ``accepted``, ``rejected``,
    ``reason``); without ``stopping_condition`` the last record is rejected if it fails the B.5 rule."""
    out: list[dict[str, Any]] = []
    for li, (temp, recs) in enumerate(lists):
        for k, r in enumerate(recs):
            c, nov, llm = (
                _num(r, k) for k in ("coherence_score", "embedding_dissimilarity_score", "llm_dissimilarity_score")
            )
            stop = r.get("stopping_condition")
            last = k == len(recs) - 1
            reason: str | None = None
            rejected = False
            if r.get("error_message") or r.get("error_type") or stop == "error":
                reason = (
                    f"error: {str(r.get('error_message') or r.get('error_type') or 'stopping_condition error')[:200]}"
                )
            elif stop == "content_error":
                reason = "content filter"
            elif stop is not None:  # what the threshold it names rejects, else the value itself
                named = (what for key, what in STOP_REASONS.items() if key.split("_")[0] in str(stop).lower())
                rejected, reason = True, next(named, str(stop))
            elif "stopping_condition" not in r and last and c is not None and nov is not None:
                why = stopping_condition(c, nov, llm, tau_c=tau_c, tau_n=tau_n, tau_llm=tau_llm)
                if why:
                    rejected, reason = True, STOP_REASONS[why]
            accepted = stop is None and not rejected
            n = r.get("answer_num")
            out.append(
                {
                    "list": li,
                    "temperature": temp,
                    "n": int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else k + 1,
                    "coherence": c,
                    "novelty": nov,
                    "llm_novelty": llm,
                    "accepted": accepted,
                    "rejected": rejected,
                    "reason": reason,
                }
            )
    return out


POOLED_CI_RESAMPLES = 2000


def pooled_ci(
    per_question: Sequence[Sequence[float]], *, n_resamples: int = POOLED_CI_RESAMPLES, seed: int = 0
) -> tuple[float, float] | None:
    """95% percentile bootstrap CI of a mean pooled over answers, resampling questions (clusters): each resample's
    value is the sum of the drawn questions' values over their count.  None with fewer than 2 questions, or no
    variation."""
    import numpy as np  # kept off the start-up path: the registry imports this module before the first model call

    qs = [q for q in per_question if q]
    if len(qs) < 2:
        return None
    sums = np.array([float(sum(q)) for q in qs])
    counts = np.array([len(q) for q in qs], dtype=float)
    idx = np.random.default_rng(seed).integers(0, len(qs), size=(n_resamples, len(qs)))
    est = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    lo, hi = (float(x) for x in np.quantile(est, [0.025, 0.975]))
    return None if hi - lo <= 0 else (lo, hi)


_PER_ITEM_MEANS = (
    (COHERENCE_PER_ITEM, "coherence_score", True),
    (NOVELTY_PER_ITEM, "embedding_dissimilarity_score", False),
)
_POOLED = (
    (COHERENCE, "coherence_score", True),
    (NOVELTY, "embedding_dissimilarity_score", False),
    (NOVELTY_WITH_FIRST, "embedding_dissimilarity_score", True),
)


@metric(
    ACCEPTED,
    PUBLISHED,
    README_SCORE,
    LEADERBOARD,
    COHERENCE_PER_ITEM,
    NOVELTY_PER_ITEM,
    corpus=(COHERENCE, NOVELTY, NOVELTY_WITH_FIRST, LEADERBOARD_TOTAL),
    scope=BENCHMARK,
)
class AnswerCountMetrics(Metric):
    """The record-count metrics of one question and the pooled means of a model (corpus level)."""

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        if not response.ok:
            return self.failed(item, response, response.status, f"no response: {response.error}")
        records = response.metadata.get("records")
        if not isinstance(records, list):
            why = "response has no answer records (metadata['records']); the open-creativity metrics need the "
            return self.failed(item, response, "parse_error", why + "generation protocol or a SciAidanBench replay")
        try:
            lists = answer_lists(response.metadata)
        except (ValueError, TypeError) as e:
            return self.failed(item, response, "parse_error", f"stored answer lists do not match the records: {e}")
        acc = accepted_records(records)
        stop = records[-1].get("final_stopping_condition") or records[-1].get("stopping_condition") if records else None
        flag = {**record_flag(records), "judged_by": judged_by(response.metadata)}
        why = f"{len(acc)} accepted of {len(records)} stored answers; stopped by {stop or 'no stop recorded'}"
        if flag.get("flag_reason"):
            why += f" ({'missing' if flag.get('missing') else 'censored'}: {flag['flag_reason']})"

        def ok(spec: MetricSpec, value: float, rationale: str, **extra: Any) -> Score:
            return _score(item.id, response.model, spec, value, rationale=rationale, details={**flag, **extra})

        th = response.metadata.get("thresholds") or {}
        tau_c, tau_n = float(th.get("coherence", TAU_C)), float(th.get("embedding", TAU_N))
        readme = sum(readme_score(recs, tau_c, tau_n) for _t, recs in lists)
        by_temp, best_t = _by_temperature(lists)
        board = by_temp.get(best_t, 0)
        n_lists = f" over {len(lists)} stored lists" if len(lists) > 1 else ""
        marks = _answer_marks(lists, tau_c, tau_n, float(th.get("llm", TAU_LLM)))
        below = f"answers before the first with novelty < {TAU_N:g} or coherence < {TAU_C:g}"
        out = [
            ok(ACCEPTED, float(len(acc)), why, answers=marks),
            ok(PUBLISHED, float(len(records)), f"len(list) = {len(records)} (includes the rejected terminating answer)"),
            ok(README_SCORE, float(readme), f"S(q) = {readme}: answers before the first with coherence <= {tau_c:g} "
               f"or novelty <= {tau_n:g}" + n_lists),
            ok(LEADERBOARD, float(board), f"plot.py count = {board}: {below}" + n_lists
               + (f" (temperature {best_t})" if best_t else ""), by_temperature=dict(by_temp)),
        ]  # fmt: skip
        for spec, key, first in _PER_ITEM_MEANS:
            vals = pooled_values(lists, key, first_answers=first)
            which = "accepted answers" if first else "accepted answers after the first"
            if vals:
                out.append(ok(spec, sum(vals) / len(vals), f"mean {key} over {len(vals)} {which}"))
            else:
                none = f"no {which} with {'an' if key[0] in 'aeiou' else 'a'} {key}"
                details = {"not_applicable": True, **flag}
                out.append(_score(item.id, response.model, spec, None, status="not_run", error=none, details=details))
        flagged = [r for r in records if r.get("flags")]  # answers carrying the judge's own tags (D.14)
        if not flagged:
            return out
        nums = [r.get("answer_num") for r in flagged]
        meta = response.metadata
        raw = [e.get("raw", "") for e in meta.get("judge_raw") or [] if e.get("answer_num") in nums and e.get("flags")]
        ev = JudgeReplyEvidence(
            judge=str(meta.get("judge") or ""), raw=raw, attempts=len(raw), structured="text",
            flags=sorted({f for r in flagged for f in r["flags"]}), details={"answer_nums": nums},
        )  # fmt: skip
        return [o.model_copy(update={"evidence": [*o.evidence, ev]}) for o in out]  # on every score of the question

    def corpus(self, items: dict[str, Item], responses: Sequence[Response], scores: Sequence[Score]) -> list[Score]:
        """The pooled means (D.6, D.15) and the leaderboard total (B.6) of each model."""
        got: dict[str, list[list[tuple[str, list[dict[str, Any]]]]]] = defaultdict(list)
        failed: dict[str, int] = defaultdict(int)
        for r in responses:
            if r.item_id not in items or items[r.item_id].task != OPEN_CREATIVITY:
                continue
            with suppress(ValueError, TypeError):  # stored lists that do not match the records count as failed
                if r.ok and isinstance(r.metadata.get("records"), list):
                    got[r.model].append(answer_lists(r.metadata))
                    continue
            failed[r.model] += 1
        out: list[Score] = []
        for model in dict.fromkeys([r.model for r in responses if r.item_id in items]):
            if got[model] or failed[model]:  # else no open-creativity item for this model
                out += [_pooled(model, got[model], failed[model], *p) for p in _POOLED]
                out.append(_leaderboard_total(model, got[model], failed[model]))
        return out


def _score(item_id: str, model: str, spec: MetricSpec, value: float | None, **fields: Any) -> Score:
    """One Score of ``spec`` (``fields``: the Score's other fields)."""
    return Score(item_id=item_id, model=model, metric=spec.name, value=value, **fields)


def _by_temperature(lists: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> tuple[dict[str, int], str]:
    """The leaderboard counts of the lists summed per temperature, and the first with the largest ("" if none)."""
    out: dict[str, int] = defaultdict(int)
    for t, recs in lists:
        out[t] += leaderboard_count(recs)
    return out, max(out, key=out.__getitem__, default="")


def _pooled(model: str, got: list, failed: int, spec: MetricSpec, key: str, first: bool) -> Score:
    """One model's mean of ``key`` pooled over the accepted answers of its questions (D.6, D.15), with its CI."""
    per_q = [pooled_values(lists, key, first_answers=first) for lists in got]
    vals = [v for q in per_q for v in q]
    details: dict[str, Any] = {
        "n": sum(1 for q in per_q if q), "n_answers": len(vals), "n_questions": len(got), "failed": failed,
        "pooled": "over answers" + ("" if first else ", each list's first answer left out"),
    }  # fmt: skip
    which = "accepted answers" if first else "accepted answers after each list's first"
    ci = pooled_ci(per_q)
    if ci is not None:
        details.update(
            ci_low=ci[0],
            ci_high=ci[1],
            ci_method=f"95% percentile bootstrap over questions ({POOLED_CI_RESAMPLES} resamples, seed 0)",
        )
    if vals:
        why = f"mean {key} pooled over {len(vals)} {which} of {details['n']} questions"
        return _score(CORPUS, model, spec, sum(vals) / len(vals), rationale=why, details=details)
    none = f"no {which} with {'an' if key[0] in 'aeiou' else 'a'} {key} in {len(got)} questions"
    return _score(CORPUS, model, spec, None, status="not_run", error=none, details={**details, "not_applicable": True})


def _leaderboard_total(model: str, got: list, failed: int) -> Score:
    """One model's plot.py leaderboard score: the sum over questions at its best temperature (B.6)."""
    totals, best = _by_temperature([lst for lists in got for lst in lists])
    if not totals:
        return _score(
            CORPUS, model, LEADERBOARD_TOTAL, None, status="not_run", error="no stored answer lists for this model",
            details={"n": 0, "not_applicable": True, "failed": failed},
        )  # fmt: skip
    why = f"plot.py leaderboard score: sum over {len(got)} questions at temperature {best}" + (
        f" (the largest of {len(totals)} temperatures)" if len(totals) > 1 else ""
    )
    details = {"n": len(got), "by_temperature": dict(totals), "temperature": best}
    return _score(CORPUS, model, LEADERBOARD_TOTAL, float(totals[best]), rationale=why, details=details)
