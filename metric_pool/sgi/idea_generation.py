"""SGI-Bench Idea Generation metrics (METRICS.md A.2): four objective scores on 0-10, a judged win per dimension
(:func:`decide`), dim = (10 x obj + judged) / 2 on 0-100 and ``idea_final_score`` their mean (the IG term); without a
judge the judged ones are ``not_run``. ``idea_parser="code"``, ``code_text_errors`` and ``code_empty_b`` give the
published code's readings where sgieval's differ."""

from __future__ import annotations

import ast
import asyncio
import json
import re
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ...core import IDEA_GENERATION, InputError, Item, Response, Score
from ..base import Metric, ScoringContext, score_for
from ..registry import metric
from .common import BENCHMARK, spec
from .idea_judge import (  # noqa: F401 (the judge's names, read from here too)
    CONTEXT_FIELDS,
    DIMENSIONS,
    IDEA_FIELDS,
    MAX_JUDGE_ATTEMPTS,
    decide,
    judged,
    parse_votes,
    vote_injection_flags,
    vote_match,
)

if TYPE_CHECKING:
    import numpy as np

SCORED_DIMS = DIMENSIONS[:4]
ALPHA = 0.6

Encode = Callable[[list[str]], "np.ndarray"]

_A2 = "A.2"
OBJ_SPECS = {
    "effectiveness": spec(
        "idea_effectiveness_obj",
        IDEA_GENERATION,
        _A2,
        "Objective effectiveness, 0-10: clip(10 x cos(MiniLM(', '.join(keywords)), MiniLM(Idea)), 0, 10); "
        "if encoding fails (Idea not a string) 10 x fraction of keywords that are lowercase substrings of the "
        "lowercased Idea.",
        range=(0.0, 10.0),
    ),
    "novelty": spec(
        "idea_novelty_obj",
        IDEA_GENERATION,
        _A2,
        "Objective novelty, 0-10: 0.5 A + 0.5 B; A = clip(10 (1 - mean cos(Idea, v)), 0, 10) over the values v of "
        "related_work and existing_solutions (0 if none); B = the same over 'k: v' of related_work_test; any "
        "error sets A = B = 0.",
        range=(0.0, 10.0),
    ),
    "detailedness": spec(
        "idea_detailedness_obj",
        IDEA_GENERATION,
        _A2,
        "Objective detailedness, 0-10: 0.2 completeness + 0.4 (10 - repetition) + 0.4 (10 - length); "
        "completeness = 10 k/6 (non-null fields); length penalty (L-700)/100 if L > 700, (300-L)/100 if L < 300, "
        "capped at 10, 0 for an empty Idea; repetition = min(10, max(0, 10 (mean pairwise cos of sentences "
        "longer than 10 chars - 0.2))), 0 with fewer than 2 sentences.",
        range=(0.0, 10.0),
    ),
    "feasibility": spec(
        "idea_feasibility_obj",
        IDEA_GENERATION,
        _A2,
        "Objective feasibility, 0-10: 10 x (0.6 edge Jaccard + 0.4 node-text token Jaccard) between the "
        "implementation graphs (steps as nodes, the implementation order as directed edges) of the generated and "
        "reference ideas.",
        range=(0.0, 10.0),
    ),
}
WIN_SPECS = {
    d: spec(
        f"idea_{d}_win",
        IDEA_GENERATION,
        _A2,
        f"Judged {d}, 0 or 100 per item: N judges x 2 position-swapped pairwise votes (reference vs generated); "
        f"100 if the generated idea wins, i.e. g votes of 2N with "
        + ("3g > 4N (g > 4 of 6)" if d == "novelty" else "g > N (g > 3 of 6)")
        + ", else 0. Mean = win rate.",
        kind="judge",
        range=(0.0, 100.0),
    )
    for d in SCORED_DIMS
}
DIM_QUALITIES: dict[str, list[str]] = {"novelty": ["novelty", "creativity"], "feasibility": ["feasibility"]}
DIM_SPECS = {
    d: spec(
        f"idea_{d}",
        IDEA_GENERATION,
        _A2,
        f"Idea {d}, 0-100: (10 x idea_{d}_obj + idea_{d}_win) / 2.",
        kind="judge",
        range=(0.0, 100.0),
        qualities=DIM_QUALITIES.get(d, []),
    )
    for d in SCORED_DIMS
}
FINAL_SPEC = spec(
    "idea_final_score",
    IDEA_GENERATION,
    _A2,
    "Idea Generation final score, 0-100: mean of idea_effectiveness, idea_novelty, idea_detailedness and "
    "idea_feasibility. Task score = mean (no x100); the SGI-Score IG term. A reply that does not parse to a JSON "
    "object scores 0.",
    kind="judge",
    range=(0.0, 100.0),
    primary=True,
    qualities=["creativity"],
)
SPECS = [*OBJ_SPECS.values(), *WIN_SPECS.values(), *DIM_SPECS.values(), FINAL_SPEC]


_FENCE = re.compile(r"```(?:json)?\s*([\s\S]*?)```")
_FLAGS = re.DOTALL | re.IGNORECASE
_Q = "[\"']"
_FIELD_PATTERNS: dict[str, tuple[str, str]] = {
    "Idea": (rf"{_Q}?Idea{_Q}?\s*:\s*{_Q}(.*?){_Q}", r"1\.\s*Idea[:\s-]+(.*?)(?=\n\s*(?:2\.|Implementation))"),
    "ImplementationSteps": (
        rf"{_Q}?ImplementationSteps{_Q}?\s*:\s*\{{(.*?)\}}",
        r"2\.\s*Implementation Steps[:\s-]+(.*?)(?=\n\s*(?:3\.|Implementation Order))",
    ),
    "ImplementationOrder": (
        rf"{_Q}?ImplementationOrder{_Q}?\s*:\s*\[(.*?)\]",
        r"3\.\s*Implementation Order[:\s-]+(.*?)(?=\n\s*(?:4\.|Dataset))",
    ),
    "Dataset": (
        rf"{_Q}?Dataset{_Q}?\s*:\s*{_Q}(.*?){_Q}(?=\s*,\s*{_Q})",
        r"4\.\s*Dataset[:\s-]+(.*?)(?=\n\s*(?:5\.|Evaluation))",
    ),
    "EvaluationMetrics": (
        rf"{_Q}?EvaluationMetrics{_Q}?\s*:\s*\{{(.*?)\}}(?=\s*,\s*{_Q})",
        r"5\.\s*Evaluation Metrics[:\s-]+(.*?)(?=\n\s*(?:6\.|Expected))",
    ),
    "ExpectedOutcome": (rf"{_Q}?ExpectedOutcome{_Q}?\s*:\s*{_Q}(.*?){_Q}", r"6\.\s*Expected Outcome[:\s-]+(.*?)$"),
}


_PAIRS = {  # The quoted key-value pairs the regex fallback reads inside the braces of these fields.
    "ImplementationSteps": r"[\"'](\d+)[\"']\s*:\s*[\"'](.*?)[\"']",
    "EvaluationMetrics": r"[\"']([^\"']+)[\"']\s*:\s*[\"'](.*?)[\"']",
}


def _regex_fallback(text: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for field, patterns in _FIELD_PATTERNS.items():
        for pattern in patterns:
            m = re.search(pattern, text, _FLAGS)
            if not m:
                continue
            body = m.group(1).strip()
            pairs = _PAIRS.get(field)
            if field == "ImplementationOrder":
                value: Any = re.findall(r"[\"']([^\"']+)[\"']", body)
            else:
                value = {k.strip(): v.strip() for k, v in re.findall(pairs, body)} if pairs else body
            if value or pairs is None and field != "ImplementationOrder":
                result[field] = value
                break
    return result


def parse_idea(text: str, *, tolerant: bool = True) -> Any:
    """Parse a generated idea (METRICS.md A.2 "Generation and parsing"): ``json.loads`` of the first fenced block,
    then of the whole text; (``tolerant``, sgieval extension) the first JSON value from the first "{" of each, ignoring
    trailing text; then the per-field regex fallback; else ``{"full_text": text}``. Returns whatever JSON decodes to (a
    non-dict is an evaluator error for the caller, as in the code)."""
    text = text if isinstance(text, str) else str(text)
    m = _FENCE.search(text)
    candidates = ([m.group(1).strip()] if m else []) + [text]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
    for candidate in candidates if tolerant else []:
        try:
            return json.JSONDecoder().raw_decode(candidate[candidate.index("{") :])[0]
        except ValueError:
            pass
    result = _regex_fallback(text)
    return result if result else {"full_text": text}


def _literal(item_id: str, ref: dict, key: str) -> Any:
    raw = ref.get(key, "{}")
    if not isinstance(raw, str):
        return raw
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
        raise InputError(
            f"reference field {key!r} is not a Python literal ({type(e).__name__}: {e})",
            what=f"item {item_id}",
            fix="load SGI-IdeaGeneration records unchanged (raw dataset strings)",
        ) from e


def reference_idea(item: Item) -> dict[str, Any]:
    """The reference idea in the generated idea's keys, plus the context fields, ``related_work_test`` (raw),
    ``keywords``, ``RelatedWork`` and ``ExistingSolutions`` (METRICS.md A.2 "Inputs"); InputError naming item and
    field."""
    ref = item.reference
    if not isinstance(ref, dict):
        raise InputError(
            "reference is not a dict of SGI-IdeaGeneration fields",
            what=f"item {item.id}",
            fix="load the item with the SGI item contract (SGI_ITEMS.md)",
        )
    out: dict[str, Any] = {k: ref.get(k, "") for k in CONTEXT_FIELDS}
    out["related_work_test"] = ref.get("related_work_test", "")
    out["keywords"] = ref.get("keywords", []) or []
    out["Idea"] = ref.get("core_idea", "")
    out["RelatedWork"] = _literal(item.id, ref, "related_work")
    out["ExistingSolutions"] = _literal(item.id, ref, "existing_solutions")
    out["ImplementationSteps"] = _literal(item.id, ref, "implementation_steps")
    out["ImplementationOrder"] = list(ref.get("implementation_order", "[]"))
    out["EvaluationMetrics"] = _literal(item.id, ref, "evaluation_metrics")
    out["Dataset"] = ref.get("data", "")
    out["ExpectedOutcome"] = ref.get("expected_outcome", "")
    return out


def generated_fields(parsed: dict[str, Any]) -> dict[str, Any]:
    """The six idea fields of a parsed reply, defaulting as the code does ({} for steps and order, else "")."""
    return {f: parsed.get(f, {} if f in ("ImplementationSteps", "ImplementationOrder") else "") for f in IDEA_FIELDS}


def _clip10(x: float) -> float:
    # Python max/min, as the code: min(10, nan) -> 10
    return float(max(0, min(10, x)))


def effectiveness_obj(idea: Any, keywords: Sequence[Any], encode: Encode) -> tuple[float, dict[str, Any]]:
    """Effectiveness_obj, 0-10 (A.2, C.1): clip(10 x cos(", ".join(keywords), idea), 0, 10); when encoding
    raises, 10 x the fraction of keywords found (lower-cased) in the idea. Returns (value, details)."""
    from ..embeddings import cosine_matrix  # numpy: loaded on first use, not at start-up

    terms = ", ".join(str(t) for t in keywords)
    try:
        v = encode([terms, idea])
        sim = float(cosine_matrix(v[0], v[1])[0, 0])
        return _clip10(sim * 10), {"path": "embedding", "cosine": sim}
    except Exception as e:  # noqa: BLE001 - the code's fallback on any encoding error
        low = idea.lower() if isinstance(idea, str) else ""
        hits = [t for t in keywords if str(t).lower() in low]
        rate = len(hits) / len(keywords) if keywords else 0
        return float(rate * 10), {
            "path": "keyword_fallback",
            "hits": [str(h) for h in hits],
            "error": f"{type(e).__name__}: {e}",
        }


def _distance_score(idea: Any, texts: list[str], encode: Encode, empty: float) -> float:
    """clip(10 (1 - mean cos(idea, t)), 0, 10) over ``texts`` (A.2 novelty); ``empty`` without texts."""
    if not texts:
        return empty
    import numpy as np

    from ..embeddings import cosine_matrix

    v = encode([idea, *texts])
    with np.errstate(all="ignore"):
        return _clip10((1 - float(np.mean(cosine_matrix(v[0], v[1:])[0]))) * 10)


def novelty_obj(
    idea: Any, ref: dict[str, Any], encode: Encode, *, code_empty_b: bool = False
) -> tuple[float, dict[str, Any]]:
    """Novelty_obj, 0-10 = 0.5 A + 0.5 B (A.2): A = clip(10 (1 - mean cos(idea, v)), 0, 10) over the values of
    RelatedWork and ExistingSolutions (0 if none); B the same over "k: v" of ``related_work_test`` (0 if empty;
    ``code_empty_b``: 10, the code's NaN reading). Any error sets A = B = 0. Returns (value, {"A", "B", ...})."""
    try:
        existing = list(ref["RelatedWork"].values()) + list(ref["ExistingSolutions"].values())
        a = _distance_score(idea, existing, encode, 0.0)
        rwt = ast.literal_eval(ref["related_work_test"])
        snippets = [f"{k}: {val}" for k, val in rwt.items()]
        b = _distance_score(idea, snippets, encode, 10.0 if code_empty_b else 0.0)
    except Exception as e:  # noqa: BLE001 - the code zeroes both parts on any error
        return 0.0, {"A": 0.0, "B": 0.0, "error": f"{type(e).__name__}: {e}"}
    return 0.5 * a + 0.5 * b, {"A": a, "B": b}


def completeness(gen: dict[str, Any]) -> float:
    """10 x k / 6, k = number of the six idea fields that are not None (A.2)."""
    k = sum(gen.get(f) is not None for f in IDEA_FIELDS)
    return 10 * k / 6


def length_penalty(idea: Any) -> float:
    """Length penalty, 0-10 (A.2), L = len(idea): (L-700)/100 above 700, (300-L)/100 below 300, capped at 10; 0
    for a falsy idea. TypeError when a truthy idea has no length."""
    if not idea:
        return 0.0
    n = len(idea)
    p = (n - 700) / 100 if n > 700 else (300 - n) / 100 if n < 300 else 0.0
    return float(min(p, 10.0))


_SENT_SPLIT = re.compile(r"[.!?。！？]")


def repetition_penalty(idea: Any, encode: Encode) -> float:
    """Repetition penalty, 0-10 (A.2): sentences (split on . ! ? 。 ！ ？) longer than 10 characters; 0 with fewer
    than 2, a non-string idea or an encoding error; else min(10, max(0, 10 x (mean pairwise cos - 0.2)))."""
    if not isinstance(idea, str):
        return 0.0
    sents = [s.strip() for s in _SENT_SPLIT.split(idea) if len(s.strip()) > 10]
    if len(sents) < 2:
        return 0.0
    import numpy as np

    from ..embeddings import cosine_matrix

    try:
        v = encode(sents)
        sim = cosine_matrix(v, v)
        iu = np.triu_indices(len(sents), k=1)
        avg = float(np.mean(sim[iu]))
    except Exception:  # noqa: BLE001 - the code returns 0 on errors
        return 0.0
    return float(min(max(0, (avg - 0.2) * 10), 10.0))


def detailedness_obj(gen: dict[str, Any], encode: Encode) -> tuple[float, dict[str, Any]]:
    """Detailedness_obj, 0-10 = 0.2 completeness + 0.4 (10 - repetition) + 0.4 (10 - length) (A.2); TypeError for
    an idea without a length."""
    idea = gen.get("Idea", "")
    comp = completeness(gen)
    lp = length_penalty(idea)
    rp = repetition_penalty(idea, encode)
    len(idea)  # the code records len(idea) in its details: None/int ideas error out here
    value = 0.2 * comp + 0.4 * (10 - rp) + 0.4 * (10 - lp)
    return value, {"completeness": comp, "length_penalty": lp, "repetition_penalty": rp, "length": len(idea)}


Graph = tuple[dict[str, Any], set[tuple[str, str]]]
"""An implementation graph: step key -> step text, and the directed edges between step keys."""


def _node_text_similarity(g1: Graph, g2: Graph, code_text_errors: bool) -> float:
    try:
        j1, j2 = " ".join(g1[0].values()), " ".join(g2[0].values())
    except TypeError:  # non-string step texts: A.2 step 7 -> the whole similarity is 0 (raised to the caller)
        if code_text_errors:
            return 0.0  # the published code's reading: only the text part is 0
        raise
    if len(j1.strip()) < 3 or len(j2.strip()) < 3:
        return 0.0
    w1, w2 = set(j1.lower().split()), set(j2.lower().split())
    return len(w1 & w2) / len(w1 | w2)


def _order_edges(order: Any, keys: list[str]) -> set[tuple[str, str]]:
    """Edges of an ImplementationOrder: digit keys chained in string order, else valid "a-b" items."""
    if all(o.isdigit() for o in order):
        nodes = sorted(o for o in order if o in keys)
        return set(zip(nodes, nodes[1:]))
    pairs = [o.split("-") for o in order if "-" in o]
    return {(p[0], p[1]) for p in pairs if len(p) == 2 and p[0] in keys and p[1] in keys}


def graph_similarity(
    gen: dict[str, Any], ref: dict[str, Any], alpha: float = ALPHA, *, code_text_errors: bool = False
) -> tuple[float, dict[str, Any]]:
    """Implementation-graph similarity, 0-1 (METRICS.md A.2 Feasibility_obj steps 1-7): alpha x edge Jaccard +
    (1 - alpha) x token Jaccard of the joined node texts; a graph without edges gets its nodes chained in string order,
    and a single-node graph gives the text similarity alone. Missing or empty steps/order and any error give 0
    (``code_text_errors``: a text-join error zeroes only the text part, as the code). Returns (value, {"edge", "text",
    ...})."""
    for d in (gen, ref):
        if not all(k in d for k in ("ImplementationSteps", "ImplementationOrder")):
            return 0.0, {"reason": "missing ImplementationSteps or ImplementationOrder"}
        if not d["ImplementationSteps"] or not d["ImplementationOrder"]:
            return 0.0, {"reason": "empty ImplementationSteps or ImplementationOrder"}
    try:
        graphs: list[Graph] = []
        for d in (gen, ref):
            nodes = {str(k): v for k, v in d["ImplementationSteps"].items()}
            edges = _order_edges(d["ImplementationOrder"], list(nodes))
            chain = sorted(nodes)
            graphs.append((nodes, edges or set(zip(chain, chain[1:]))))
        g1, g2 = graphs
        text = _node_text_similarity(g1, g2, code_text_errors)
        if not g1[1] or not g2[1]:
            return text, {"edge": None, "text": text, "reason": "a graph has no edges: text similarity only"}
        edge = len(g1[1] & g2[1]) / len(g1[1] | g2[1])
        return alpha * edge + (1 - alpha) * text, {"edge": edge, "text": text}
    except Exception as e:  # noqa: BLE001 - the code returns 0 on any error
        return 0.0, {"reason": f"{type(e).__name__}: {e}"}


def feasibility_obj(gen: dict[str, Any], ref: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """Feasibility_obj, 0-10 = 10 x :func:`graph_similarity` (alpha 0.6) (A.2)."""
    sim, det = graph_similarity(gen, ref)
    return 10 * sim, det


class _EncodeCache:
    """Text -> embedding LRU cache around an embedder (reference texts repeat across target models)."""

    maxsize = 50_000

    def __init__(self, embed: Callable[[list[str]], Any]):
        self.embed = embed
        self.cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"text {i} is {type(t).__name__}, not str")
        import numpy as np

        with self.lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
            if missing:
                vecs = np.asarray(self.embed(missing), dtype=np.float32)
                for t, v in zip(missing, vecs):
                    self.cache[t] = v
            out = np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)
            for t in texts:
                self.cache.move_to_end(t)
            while len(self.cache) > self.maxsize:
                self.cache.popitem(last=False)
            return out


@metric(*SPECS, scope=BENCHMARK)
class IdeaGenerationMetric(Metric):
    """All SGI Idea Generation metrics of one item (:data:`SPECS`). Options: ``embedding_model`` ("minilm" or
    "openai:<model>"; ``ctx.embedder`` wins), ``idea_parser`` ("tolerant" | "code"), ``idea_judge_attempts`` (5)."""

    @classmethod
    def from_options(cls, options: dict) -> "IdeaGenerationMetric":
        return cls(options)

    def __init__(self, options: dict | None = None):
        opts = dict(options or {})
        self.embedding_model = opts.get("embedding_model", "minilm")
        parser = opts.get("idea_parser", "tolerant")
        if parser not in ("tolerant", "code"):
            raise InputError(
                f"unknown idea_parser {parser!r}", what="option idea_parser", fix="use 'tolerant' or 'code'"
            )
        self.tolerant = parser == "tolerant"
        self.judge_attempts = int(opts.get("idea_judge_attempts", MAX_JUDGE_ATTEMPTS))
        self._encoders: dict[int, _EncodeCache] = {}

    def _encoder(self, ctx: ScoringContext) -> _EncodeCache:
        from ..embeddings import get_embedder

        embed = ctx.embedder if ctx.embedder is not None else get_embedder(self.embedding_model)
        return self._encoders.setdefault(id(embed), _EncodeCache(embed))

    def objective(self, gen: dict[str, Any], ref: dict[str, Any], encode: Encode) -> dict[str, tuple[float, dict]]:
        """The four objective parts (0-10) with details; TypeError when the evaluator would error."""
        idea = gen["Idea"]
        return {
            "effectiveness": effectiveness_obj(idea, ref["keywords"], encode),
            "novelty": novelty_obj(idea, ref, encode),
            "detailedness": detailedness_obj(gen, encode),
            "feasibility": feasibility_obj(gen, ref),  # reads only the steps and the order
        }

    def _evaluator_error(self, item: Item, response: Response, reason: str) -> list[Score]:
        why, details = f"evaluator error, final_score 0 (A.2): {reason}", {"evaluator_error": reason}
        return [
            score_for(item, response, s.name, 0.0, rationale=why, details=details)
            if s.name == FINAL_SPEC.name
            else score_for(item, response, s.name, None, status="parse_error", error=reason)
            for s in self.specs
        ]

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        if not response.ok:
            return self.failed(item, response, response.status, f"no response: {response.error}")
        try:
            ref = reference_idea(item)
        except InputError as e:
            return self.failed(item, response, "input_error", str(e))
        parsed = parse_idea(response.text, tolerant=self.tolerant)
        if not isinstance(parsed, dict):
            return self._evaluator_error(
                item, response, f"the reply parses to a {type(parsed).__name__}, not a JSON object"
            )
        gen = generated_fields(parsed)
        try:
            obj = await asyncio.to_thread(self.objective, gen, ref, self._encoder(ctx))
        except TypeError as e:
            return self._evaluator_error(item, response, f"{type(e).__name__}: {e}")
        note = {"parse": "full_text only (no field parsed)"} if set(parsed) == {"full_text"} else {}
        scores = {
            OBJ_SPECS[d].name: score_for(
                item,
                response,
                OBJ_SPECS[d].name,
                float(v),
                rationale=f"{d}_obj = {v:.4g} / 10",
                details={**det, **note},
            )
            for d, (v, det) in obj.items()
        }
        judges = ctx.judges_for(response.model)
        results, evidence, reason = await judged(ref, gen, judges, self.judge_attempts)
        jname = ",".join(j.name for j in judges)
        if not judges:  # none configured, or the only judges are the target itself: say which
            what = "the judged votes, the dims and idea_final_score"
            reason = f"{ctx.no_judge_reason(response.model, what)}; the objective parts are reported as idea_*_obj"
        if results is None:
            status = "not_run" if not judges else "judge_error"
            for s in [*WIN_SPECS.values(), *DIM_SPECS.values(), FINAL_SPEC]:
                scores[s.name] = score_for(
                    item, response, s.name, None, status=status, error=reason, judge=jname or "none", evidence=evidence
                )
        else:
            scores |= _judged_scores(item, response, obj, results, jname, evidence)
        return [scores[s.name] for s in self.specs]


def _judged_scores(
    item: Item, response: Response, obj: dict, results: dict, jname: str, evidence: list
) -> dict[str, Score]:
    """The win, dim and final Scores from the objective parts and the judges' results (A.2)."""
    out: dict[str, Score] = {}
    dims = []
    for d in SCORED_DIMS:
        r, win = results[d], 100.0 if results[d]["result"] == "win" else 0.0
        why = f"{r['result']}: generated idea got {r['generated_votes']} of {r['total_votes']} votes"
        out[WIN_SPECS[d].name] = score_for(
            item, response, WIN_SPECS[d].name, win, judge=jname, evidence=evidence, details=r, rationale=why
        )
        dims.append((10 * obj[d][0] + win) / 2)
        out[DIM_SPECS[d].name] = score_for(
            item, response, DIM_SPECS[d].name, dims[-1], judge=jname, rationale=f"(10 x {obj[d][0]:.4g} + {win:g}) / 2",
            details={"obj": obj[d][0], "judged": win},
        )  # fmt: skip
    out[FINAL_SPEC.name] = score_for(
        item, response, FINAL_SPEC.name, sum(dims) / 4, judge=jname, evidence=evidence,
        rationale="mean of dims " + ", ".join(f"{d}={v:.4g}" for d, v in zip(SCORED_DIMS, dims)),
        details={"dims": dict(zip(SCORED_DIMS, dims)), "overall": results["overall"]},
    )  # fmt: skip
    return out
