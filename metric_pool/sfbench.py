"""SFBench metrics (DATASETS.md "SFBench"; METRICS.md D.5, D.7) of a reply giving a Likert feasibility -2..2 and an
explanation: the Likert score's errors and kappa, and the judged correctness and completeness of the explanation."""

from __future__ import annotations

import math
import re
import warnings
from collections import defaultdict
from typing import Any, Sequence

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationInfo, field_validator

from ..core import FEASIBILITY, Item, MetricSpec, Response, Score, verdict_word
from .answers import normalise_text
from .base import CORPUS, Metric, ScoringContext, score_for
from .judge import as_data, parse_json_object
from .registry import metric
from .repeats import Draw, ask_repeats, judge_means, judge_repeats, repeat_details

BENCHMARK = "sfbench"
LABELS = [-2, -1, 0, 1, 2]
SRC = 'DATASETS.md "SFBench" (SFBench, JHU APL 2026); METRICS.md D.5, D.7'

CORRECTNESS_LEVELS = {"sound": 5, "mostly sound": 4, "mixed": 3, "mostly unsound": 2, "unsound": 1}
COMPLETENESS_LEVELS = {"complete": 5, "strong": 4, "adequate": 3, "weak": 2, "incomplete": 1}
LEVELS = {"correctness": CORRECTNESS_LEVELS, "completeness": COMPLETENESS_LEVELS}

KAPPA_UNDEFINED = "kappa undefined: fewer than two distinct labels on both sides"


def _spec(name: str, description: str, **kw: Any) -> MetricSpec:
    return MetricSpec(name=name, tasks=[FEASIBILITY], benchmark=BENCHMARK, description=description, source=SRC, **kw)


ABS_ERROR = _spec(
    "sfbench_abs_error",
    "|predicted Likert - gold Likert| per claim (labels -2..2).",
    range=(0.0, 4.0),
    higher_is_better=False,
)
EXACT = _spec("sfbench_exact", "1 if the predicted Likert score equals the gold score, else 0.")
QWK = _spec(
    "sfbench_qwk",
    "Quadratic weighted Cohen's kappa between predicted and gold Likert scores over labels -2..2 "
    "(corpus level; undefined when both sides use fewer than two distinct labels).",
    range=(-1.0, 1.0),
    primary=True,
    qualities=["feasibility", "accuracy"],
)
ACCURACY = _spec(
    "sfbench_accuracy", "Fraction of claims whose predicted Likert score equals the gold score (corpus level)."
)
MAE = _spec(
    "sfbench_mae",
    "Mean absolute error of the predicted Likert scores (corpus level).",
    range=(0.0, 4.0),
    higher_is_better=False,
)
CORRECTNESS = _spec(
    "sfbench_expl_correctness",
    "Explanation correctness judged vs the gold explanation: Sound 5, Mostly Sound 4, Mixed 3, "
    "Mostly Unsound 2, Unsound 1.",
    kind="judge",
    range=(1.0, 5.0),
)
COMPLETENESS = _spec(
    "sfbench_expl_completeness",
    "Explanation completeness judged vs the gold explanation: Complete 5, Strong 4, Adequate 3, Weak 2, "
    "Incomplete 1 (infeasible claim: one valid reason suffices; non-negative claim: every crucial "
    "aspect).",
    kind="judge",
    range=(1.0, 5.0),
)
CORRECTNESS_NORM = _spec(
    "sfbench_expl_correctness_norm",
    "Sum of correctness levels / (5 k) over the k judged claims (corpus level).",
    kind="judge",
)
COMPLETENESS_NORM = _spec(
    "sfbench_expl_completeness_norm",
    "Sum of completeness levels / (5 k) over the k judged claims (corpus level).",
    kind="judge",
)
EXPL_F1 = _spec(
    "sfbench_expl_f1",
    "Explanation F1: harmonic mean of the normalised correctness and completeness (corpus level).",
    kind="judge",
)


_SCORE_LINE = re.compile(
    r"^[\s>*_#-]*(?:feasibility(?:\s+score)?|likert(?:\s+score)?|score|rating)[\s*_]*[:=][\s*_]*"
    r"([+\-\u2212]?\s*\d+(?:\.\d+)?)",
    re.I | re.M,
)
_EXPLANATION_LINE = re.compile(r"^[\s>*_#-]*explanation[\s*_]*[:=][\s*_]*", re.I | re.M)
_SCORE_KEYS = ("score", "feasibility_score", "feasibility", "likert")


def _likert(value: Any, where: str) -> int:
    """An integer -2..2 from an int, an integral float or a string like "+1". Raises ValueError naming ``where``."""
    if isinstance(value, str):
        txt = value.strip().replace("\u2212", "-").replace(" ", "")
        try:
            value = float(txt)
        except ValueError:
            raise ValueError(f"{where}: Likert score {value!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where}: Likert score {value!r} is not a number")
    if float(value) != int(value):
        raise ValueError(f"{where}: Likert score {value!r} is not an integer")
    v = int(value)
    if v not in LABELS:
        raise ValueError(f"{where}: Likert score {v} outside -2..2 (METRICS.md D.5)")
    return v


def parse_feasibility_reply(text: str) -> tuple[int, str]:
    """Parse a target reply into ``(likert score -2..2, explanation)``: a JSON object with a ``score`` key (or
    ``feasibility_score`` / ``feasibility`` / ``likert``) and an optional ``explanation``, else the last line like
    ``Feasibility: +1`` and the text after an ``Explanation:`` marker (else the reply without the score line).
    ValueError: no score, a non-integer, or a value outside -2..2 (METRICS.md D.5)."""
    text = text or ""
    try:
        obj = parse_json_object(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        # the score key by priority (score > feasibility_score > feasibility > likert) whatever its case; of two
        # spellings of one key, the lower-case one, else the first
        by_lower = {k.lower(): k for k in reversed(list(obj)) if isinstance(k, str)}
        by_lower.update({k: k for k in obj if isinstance(k, str) and k in _SCORE_KEYS})
        key = next((by_lower[k] for k in _SCORE_KEYS if k in by_lower), None)
        if key is not None:
            expl = obj.get("explanation", obj.get("Explanation", ""))
            if isinstance(expl, list):
                expl = "\n".join(str(e) for e in expl)
            return _likert(obj[key], f"reply field {key!r}"), str(expl or "").strip()
    matches = list(_SCORE_LINE.finditer(text))
    if not matches:
        raise ValueError(
            "no Likert score found in the reply (expected JSON {\"score\": -2..2, \"explanation\": ...} "
            "or a line 'Feasibility: +1')"
        )
    m = matches[-1]
    score = _likert(m.group(1), "reply line " + repr(m.group(0).strip()))
    em = list(_EXPLANATION_LINE.finditer(text))
    if em:
        expl = text[em[-1].end() :]
        expl = _SCORE_LINE.sub("", expl)
    else:
        line_end = text.find("\n", m.end())
        expl = text[: m.start()] + ("" if line_end < 0 else text[line_end:])
    return score, expl.strip()


def gold_likert(item: Item) -> int:
    """The gold Likert score ``item.reference["score"]``; ValueError when missing or outside -2..2 (D.5)."""
    ref = item.reference
    if not isinstance(ref, dict) or "score" not in ref:
        raise ValueError(
            f"item {item.id}: reference has no 'score' field (SFBench items need "
            "reference = {\"score\": -2..2, \"explanation\": str})"
        )
    return _likert(ref["score"], f"item {item.id} field reference.score")


def _corpus_score(model: str, spec: MetricSpec, value: float | None, rationale: str, details: dict, **kw: Any) -> Score:
    """One corpus-level Score of ``model`` (``kw``: status, error)."""
    return Score(item_id=CORPUS, model=model, metric=spec.name, value=value, rationale=rationale, details=details, **kw)


def _not_run(model: str, specs: Sequence[MetricSpec], error: str) -> list[Score]:
    return [_corpus_score(model, s, None, "", {}, status="not_run", error=error) for s in specs]


def quadratic_kappa(gold: Sequence[int], pred: Sequence[int]) -> float | None:
    """Quadratic weighted Cohen's kappa over labels -2..2, or None when undefined (METRICS.md D.5)."""
    from sklearn.metrics import cohen_kappa_score  # kept off the start-up path (the registry imports this module)

    if len(set(gold)) < 2 and len(set(pred)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = float(cohen_kappa_score(list(gold), list(pred), weights="quadratic", labels=LABELS))
    return None if math.isnan(k) else k


def _gold_and_reply(metric: Metric, item: Item, response: Response) -> tuple[int, int, str] | list[Score]:
    """(gold Likert, predicted Likert, explanation), or the failed Scores of ``metric``."""
    try:
        gold = gold_likert(item)
    except ValueError as e:
        return metric.failed(item, response, "input_error", str(e))
    if not response.ok:
        return metric.failed(item, response, response.status, f"no response: {response.error}")
    try:
        pred, expl = parse_feasibility_reply(response.text)
    except ValueError as e:
        return metric.failed(item, response, "parse_error", str(e))
    return gold, pred, expl


@metric(ABS_ERROR, EXACT, corpus=(QWK, ACCURACY, MAE), scope=BENCHMARK)
class SFBenchLikert(Metric):
    """Likert-score metrics of SFBench: per item the absolute error and exact match, per model kappa, accuracy, MAE."""

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        parsed = _gold_and_reply(self, item, response)
        if isinstance(parsed, list):
            return parsed
        gold, pred, expl = parsed
        details = {"pred": pred, "gold": gold, "explanation": expl}
        err = abs(pred - gold)
        values = (
            (ABS_ERROR, err, f"|{pred} - ({gold})| = {err}"),
            (EXACT, pred == gold, f"predicted {pred}, gold {gold}"),
        )
        return [score_for(item, response, s.name, float(v), rationale=r, details=details) for s, v, r in values]

    def corpus(self, items: dict[str, Item], responses: Sequence[Response], scores: Sequence[Score]) -> list[Score]:
        """Corpus scores per model from the ok ``sfbench_abs_error`` Scores."""
        pairs: dict[str, list[tuple[int, int]]] = defaultdict(list)
        models = list(dict.fromkeys([r.model for r in responses] + [s.model for s in scores]))
        for s in scores:
            if s.metric == ABS_ERROR.name and s.ok and s.item_id != CORPUS:
                pairs[s.model].append((int(s.details["gold"]), int(s.details["pred"])))
        out: list[Score] = []
        for model in models:
            pp = pairs.get(model, [])
            if not pp:
                out += _not_run(model, self.corpus_specs, "no parsed SFBench predictions for this model")
                continue
            gold, pred = zip(*pp)
            cm = [[pp.count((a, b)) for b in LABELS] for a in LABELS]
            details = {"n": len(pp), "labels": LABELS, "confusion_matrix": cm}
            details["confusion_matrix_axes"] = "rows gold -2..2, columns predicted -2..2"
            k = quadratic_kappa(gold, pred)
            if k is None:
                undefined = {**details, "undefined": True}
                out.append(_corpus_score(model, QWK, None, "", undefined, status="not_run", error=KAPPA_UNDEFINED))
            else:
                out.append(_corpus_score(model, QWK, k, f"quadratic weighted kappa over {len(pp)} claims", details))
            exact = sum(g == p for g, p in pp)
            mae = sum(abs(g - p) for g, p in pp) / len(pp)
            out.append(_corpus_score(model, ACCURACY, exact / len(pp), f"{exact} of {len(pp)} exact", details))
            out.append(_corpus_score(model, MAE, mae, f"mean |pred - gold| over {len(pp)} claims", details))
        return out


def _level(value: Any, levels: dict[str, int], what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be one of {[k.title() for k in levels]}")
    # D.11 normalisation, then D.17: trailing punctuation is not part of the label ("Mostly Sound." is Mostly Sound)
    word = verdict_word(normalise_text(value))
    key = " ".join(str(word).replace("_", " ").replace("-", " ").split())
    if key not in levels:
        raise ValueError(f"{what} {value!r} is not one of {[k.title() for k in levels]}")
    return key


class ExplanationVerdict(BaseModel):
    """Judge reply for one SFBench explanation: ``correctness`` one of Sound,
    Mostly Sound, Mixed, Mostly Unsound, Unsound; ``completeness`` one of
    Complete, Strong, Adequate, Weak, Incomplete (case-insensitive, D.5);
    ``rationale`` a short justification."""

    rationale: str = Field(default="", description="two or three sentences justifying both labels")
    correctness: str = Field(description="one of: Sound, Mostly Sound, Mixed, Mostly Unsound, Unsound")
    completeness: str = Field(description="one of: Complete, Strong, Adequate, Weak, Incomplete")

    @field_validator("correctness", "completeness")
    @classmethod
    def _known(cls, v: Any, info: ValidationInfo) -> str:
        return _level(v, LEVELS[str(info.field_name)], str(info.field_name))


JUDGE_SYSTEM = """You grade the explanation a system gave for its feasibility rating of a materials-science claim (SFBench).
You are given the claim, the expert (gold) feasibility score on the scale -2 (infeasible) .. +2 (feasible) with the expert explanation, and the system's score and explanation.

Grade two things against the expert explanation.
Correctness of the system's explanation (are its reasons scientifically right and do they support its rating?):
Sound, Mostly Sound, Mixed, Mostly Unsound, Unsound.
Completeness of the system's explanation:
Complete, Strong, Adequate, Weak, Incomplete.
Completeness rules: an explanation of an infeasible claim (gold score below 0) is Complete if it gives
one valid reason why the claim cannot hold; an explanation of a non-negative claim must cover
every crucial aspect the expert explanation covers to be Complete. The rule for this claim is stated with it.

Use exactly one of the five names for each field."""

RULE_INFEASIBLE = (
    "this claim is infeasible (gold score {gold}); an explanation of an infeasible claim is Complete "
    "if it gives one valid reason why the claim cannot hold."
)
RULE_NON_NEGATIVE = (
    "this claim is not infeasible (gold score {gold}); an explanation of a non-negative claim must "
    "cover every crucial aspect the expert explanation covers to be Complete."
)


def judge_messages(item: Item, pred: int, explanation: str) -> list:
    """Messages for the explanation judge.

    Args:
        item: the SFBench claim (its gold Likert score and expert explanation in ``reference``).
        pred: the system's feasibility score (-2..2).
        explanation: the system's explanation (wrapped with :func:`as_data`).

    Returns:
        ``[SystemMessage, HumanMessage]``: the same system message for every claim, then the claim, the gold score
        and its completeness rule, the expert explanation and the delimited system output.
    """
    gold = gold_likert(item)
    ref = item.reference or {}
    rule = (RULE_INFEASIBLE if gold < 0 else RULE_NON_NEGATIVE).format(gold=f"{gold:+d}")
    claim = item.metadata.get("question") or item.prompt
    human = (
        f"Claim:\n{claim}\n\nExpert feasibility score: {gold:+d}\nCompleteness rule for this claim: {rule}\n"
        f"Expert explanation:\n{ref.get('explanation', '')}\n\nSystem feasibility score: {pred:+d}\n"
        f"System explanation:\n{as_data(explanation)}"
    )
    return [SystemMessage(content=JUDGE_SYSTEM), HumanMessage(content=human)]


@metric(CORRECTNESS, COMPLETENESS, corpus=(CORRECTNESS_NORM, COMPLETENESS_NORM, EXPL_F1), scope=BENCHMARK)
class SFBenchExplanation(Metric):
    """Explanation correctness and completeness judge: the value is the mean over the judges that answered of each
    judge's level (1-5; with repeats, its mean over the repeats that parsed)."""

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        judges = ctx.judges_for(response.model)
        if not judges:
            why = ctx.no_judge_reason(response.model, "SFBench explanation correctness/completeness")
            return self.failed(item, response, "not_run", why)
        parsed = _gold_and_reply(self, item, response)
        if isinstance(parsed, list):
            return parsed
        _gold, pred, expl = parsed
        if not expl.strip():
            return self.failed(item, response, "parse_error", "the reply has no explanation to judge")
        msgs = judge_messages(item, pred, expl)
        k = judge_repeats(ctx)  # --judge-repeats: each judge asked k times (metric_pool.repeats)
        asked = await ask_repeats(judges, k, msgs, ExplanationVerdict, candidate=response.text, value=lambda p: 0.0)
        evidence, errors = asked.evidence, asked.errors
        verdicts: dict[str, ExplanationVerdict] = asked.parsed  # with repeats: each judge's last repeat that parsed
        names = ",".join(j.name for j in judges)
        if not verdicts:
            return self.failed(item, response, "judge_error", "; ".join(errors), judge=names, evidence=evidence)
        out = []
        for spec, field_ in ((CORRECTNESS, "correctness"), (COMPLETENESS, "completeness")):
            got = [
                Draw(d.judge, d.repeat, None if p is None else LEVELS[field_][getattr(p, field_)], d.error)
                for d, p in zip(asked.draws, asked.replies)
            ]
            per = judge_means(got)  # each judge's mean level over its repeats that parsed (k = 1: its level)
            labels = {n: getattr(v, field_).title() for n, v in verdicts.items()}
            value = sum(per.values()) / len(per)
            why = " | ".join(f"{n}: {labels[n]}. {v.rationale}" for n, v in verdicts.items())
            details = {"labels": labels, "levels": per, "judge_values": per, "judge_errors": errors}
            details |= repeat_details(got, k)
            fields = {"rationale": why, "judge": names, "evidence": evidence, "details": details}
            out.append(score_for(item, response, spec.name, value, **fields))
        return out

    def corpus(self, items: dict[str, Item], responses: Sequence[Response], scores: Sequence[Score]) -> list[Score]:
        """Normalised correctness C = sum / (5 k), completeness M likewise, over the k claims with both scores ok,
        and F1 = 2 C M / (C + M)."""
        models = list(dict.fromkeys([r.model for r in responses] + [s.model for s in scores]))
        by: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
        for s in scores:
            if s.metric in (CORRECTNESS.name, COMPLETENESS.name) and s.ok and s.item_id != CORPUS:
                by[(s.model, s.item_id)][s.metric] = float(s.value)  # type: ignore[arg-type]
        out: list[Score] = []
        for model in models:
            rows = [v for (m, _), v in by.items() if m == model and len(v) == 2]
            if not rows:
                out += _not_run(model, self.corpus_specs, "no judged SFBench explanations for this model")
                continue
            k = len(rows)
            c = sum(r[CORRECTNESS.name] for r in rows) / (5 * k)
            m_ = sum(r[COMPLETENESS.name] for r in rows) / (5 * k)
            f1 = 2 * c * m_ / (c + m_)
            out += [
                _corpus_score(model, CORRECTNESS_NORM, c, f"sum of correctness / (5 x {k})", {"k": k}),
                _corpus_score(model, COMPLETENESS_NORM, m_, f"sum of completeness / (5 x {k})", {"k": k}),
                _corpus_score(model, EXPL_F1, f1, "harmonic mean of normalised correctness and completeness", {"k": k}),
            ]
        return out
