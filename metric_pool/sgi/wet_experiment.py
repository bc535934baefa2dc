"""SGI-Bench Wet Experiment metrics (METRICS.md A.4, A.4b, C.2, D.2): Sequence Similarity (SS), Parameter Accuracy (PA)
and the final score (the SGI-Score WE term), 0-1 per item, on protocols of steps ``out = <Action>(key=value, ...)``.
Variants: ``*_perm`` (the paper's permutation-equivalent reading), ``*_code`` (the published code's parser) and
``wet_soft_*`` (the upstream soft scores)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations
from typing import Callable

from ...core import WET_EXPERIMENT, Item, Response
from ..base import FunctionMetric, MetricResult
from ..registry import metric
from .common import BENCHMARK, model_answer, reference_field, spec


@dataclass(frozen=True)
class Step:
    """One protocol step: ``action`` (stripped), ``params`` (key -> value, one pair of double quotes removed),
    ``output``."""

    action: str
    params: dict[str, str] = field(default_factory=dict)
    output: str = ""


_PARAM_RE = re.compile(r"^\s*(\w+)\s*=\s*(.*?)\s*(?:,)?\s*$")
_CODE_STEP_RE = re.compile(r"(\w+)\s*=\s*<([^>]+)>\(\s*([\s\S]*?)(?=\n\s*\)\s*$)", re.MULTILINE)
_HEADER_RE = re.compile(r"(\w+)\s*=\s*<([^>]+)>\((.*)$")


_PAIR_START = re.compile(r"\s*\w+\s*=")
_OPEN, _CLOSE = "([{", ")]}"


def split_pairs(line: str) -> list[str]:
    """Split one parameter line into ``key = value`` pieces (METRICS.md D.2 as amended): at commas outside quotes and
    brackets that start a ``key =`` pair, so a value holding a comma stays whole."""
    pieces: list[str] = []
    depth, quote, start = 0, "", 0
    for k, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0 and _PAIR_START.match(line, k + 1):
            pieces.append(line[start:k])
            start = k + 1
    pieces.append(line[start:])
    return pieces


def parse_params(block: str, *, split_commas: bool = False) -> dict[str, str]:
    """Parameter block -> dict (A.4): ``key = value`` lines with an optional trailing comma, other lines ignored, one
    pair of double quotes removed, a repeated key keeps its last value. ``split_commas``: split each line with
    :func:`split_pairs` (D.2 as amended); else ``a=1, b=2`` is one key ``a`` with value ``1, b=2`` (the published
    code)."""
    params: dict[str, str] = {}
    lines = block.split("\n")
    if split_commas:
        lines = [piece for raw in lines for piece in split_pairs(raw)]
    for m in filter(None, (_PARAM_RE.match(raw.strip()) for raw in lines)):
        value = m.group(2).strip()
        if value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        params[m.group(1)] = value
    return params


@lru_cache(maxsize=4096)
def parse_protocol_code(text: str) -> tuple[Step, ...]:
    """The published code's parser (A.4), the ``*_code`` variant: a lazy regex whose parameter block runs to the first
    line holding only ``)``, so a one-line or empty call swallows the following step (A.4 edge cases)."""
    return tuple(
        Step(action=m.group(2).strip(), params=parse_params(m.group(3).strip()), output=m.group(1).strip())
        for m in _CODE_STEP_RE.finditer(text)
    )


def _close_paren(segment: str, depth: int) -> tuple[int | None, int]:
    """(index where depth reaches 0 or None, depth), scanning from ``depth``; parentheses in double quotes ignored."""
    in_quote = False
    for k, ch in enumerate(segment):
        if ch == '"':
            in_quote = not in_quote
        elif not in_quote:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    return k, 0
    return None, depth


@lru_cache(maxsize=4096)
def parse_protocol(text: str) -> tuple[Step, ...]:
    """The default protocol parser (A.4 with the D.2 decisions): a step starts at an ``output = <Action>(`` line and
    ends at its balanced closing parenthesis, a line holding only ``)``, the next step's header or the end; several
    pairs on one line are split (:func:`parse_params` with ``split_commas``)."""
    lines = text.split("\n")
    steps: list[Step] = []
    i = 0
    while i < len(lines):
        m = _HEADER_RE.search(lines[i])
        i += 1
        if not m:
            continue
        segment, depth, block = m.group(3), 1, []
        while True:  # the header's rest, then the following lines up to the step's end
            pos, depth = _close_paren(segment, depth)
            block.append(segment[:pos])
            if pos is not None or i == len(lines) or _HEADER_RE.search(lines[i]):
                break
            segment = lines[i]
            i += 1
            if segment.strip() == ")":
                break
        params = parse_params("\n".join(block), split_commas=True)
        steps.append(Step(action=m.group(2).strip(), params=params, output=m.group(1)))
    return tuple(steps)


def _names(steps: tuple[Step, ...]) -> list[str]:
    return [s.action for s in steps]


def sequence_similarity(gt: list[str], pred: list[str], exempt: Callable[[int, int], bool] | None = None) -> float:
    """Action-sequence similarity SS (A.4), 0-1: 0 if the lengths differ, 1 if n <= 1, else 1 - inversions / (n(n-1)/2),
    a pair i < j being an inversion when the lists order their names oppositely (string comparison) and ``exempt(i,
    j)`` does not hold."""
    n = len(gt)
    if n != len(pred):
        return 0.0
    if n <= 1:
        return 1.0
    inv = sum(
        1
        for i, j in combinations(range(n), 2)
        if not (exempt and exempt(i, j))
        and ((gt[i] < gt[j] and pred[i] > pred[j]) or (gt[i] > gt[j] and pred[i] < pred[j]))
    )
    return 1.0 - inv / (n * (n - 1) / 2)


def independent_groups(steps: tuple[Step, ...] | list[Step]) -> list[tuple[int, int]]:
    """Permutation-equivalent step groups of a reference protocol (sgieval's definition, C.2): maximal runs of
    consecutive steps none of which uses an output of an earlier step of the run. Half-open ranges covering all
    steps."""
    groups: list[tuple[int, int]] = []
    start = 0
    outs: set[str] = set()
    for k, s in enumerate(steps):
        if k > start and any(v in outs for v in s.params.values()):
            groups.append((start, k))
            start, outs = k, set()
        outs.add(s.output)
    if steps:
        groups.append((start, len(steps)))
    return groups


def sequence_similarity_perm(gt_steps: tuple[Step, ...], pred_steps: tuple[Step, ...]) -> float:
    """Permutation-equivalent SS: as :func:`sequence_similarity`, but pairs inside one reference group
    (:func:`independent_groups`) never count as inversions (same denominator, so SS_perm >= SS)."""
    group_of = {k: g for g, (a, b) in enumerate(independent_groups(gt_steps)) for k in range(a, b)}
    return sequence_similarity(_names(gt_steps), _names(pred_steps), lambda i, j: group_of[i] == group_of[j])


def _outputs(steps: tuple[Step, ...]) -> set[str]:
    return {s.output for s in steps}


def step_error(g: Step, p: Step, gen_gt: set[str], gen_pred: set[str], mapping: dict[str, str]) -> str | None:
    """Why the aligned pair (reference ``g``, predicted ``p``) is an error, or None (A.4 PA step 1): actions differ, key
    sets differ, or a key's wiring is wrong (generated values must map through ``mapping``, pred -> ref output)."""
    if g.action != p.action:
        return f"action mismatch: expected {g.action!r}, got {p.action!r}"
    if set(g.params) != set(p.params):
        return f"parameter keys mismatch: expected {sorted(g.params)}, got {sorted(p.params)}"
    bad = []
    for key in g.params:
        vg, vp = g.params[key], p.params[key]
        g_gen, p_gen = vg in gen_gt, vp in gen_pred
        if g_gen and p_gen:
            if mapping.get(vp) != vg:
                bad.append(f"{key}: expected output of {vg!r}, got {vp!r} (maps to {mapping.get(vp)!r})")
        elif g_gen != p_gen:
            bad.append(
                f"{key}: expected {'generated variable' if g_gen else 'literal'}, got "
                f"{'generated variable' if p_gen else 'literal'}"
            )
    return "; ".join(bad) if bad else None


def _check_nonempty(gt_steps: tuple[Step, ...], pred_steps: tuple[Step, ...]) -> None:
    if not gt_steps and not pred_steps:
        raise ValueError(
            "parameter accuracy is undefined: the reference and the prediction both parse to "
            "0 protocol steps (METRICS.md D.2)"
        )


def _matching(errs: list[list[str | None]]) -> list[tuple[int, int]]:
    """(row, column) pairs of the matching with the fewest errors (Hungarian algorithm, ties positional)."""
    if len(errs) == 1:
        return [(0, 0)]
    from scipy.optimize import linear_sum_assignment  # scipy: loaded on first use, not at start-up

    cost = [[(e is not None) + (1e-6 if r != c else 0.0) for c, e in enumerate(row)] for r, row in enumerate(errs)]
    return list(zip(*linear_sum_assignment(cost)))


def _accuracy(gt_steps: tuple[Step, ...], pred_steps: tuple[Step, ...], perm: bool) -> tuple[float, list[str]]:
    """(PA, errors): each aligned step alone, or (``perm``) each reference group's steps matched by
    :func:`_matching`; the |len gt - len pred| unmatched steps are errors too."""
    _check_nonempty(gt_steps, pred_steps)
    gen_gt, gen_pred = _outputs(gt_steps), _outputs(pred_steps)
    m = min(len(gt_steps), len(pred_steps))
    mapping: dict[str, str] = {}
    errors: list[str] = []
    for a, b in independent_groups(gt_steps) if perm else [(i, i + 1) for i in range(m)]:
        idx = list(range(a, min(b, m)))
        if not idx:
            break
        errs = [[step_error(gt_steps[r], pred_steps[c], gen_gt, gen_pred, mapping) for c in idx] for r in idx]
        updates = {}
        for r, c in _matching(errs):
            if errs[r][c] is None:
                updates[pred_steps[idx[c]].output] = gt_steps[idx[r]].output
            else:
                at = f" (matched to predicted step {idx[c] + 1})" if perm else ""
                errors.append(f"step {idx[r] + 1}{at}: {errs[r][c]}")
        mapping.update(updates)
    gap = abs(len(gt_steps) - len(pred_steps))
    n_err = len(errors) + gap
    if gap:
        errors.append(f"{gap} {'extra' if len(pred_steps) > len(gt_steps) else 'missing'} step(s)")
    return 1.0 - n_err / max(len(gt_steps), len(pred_steps)), errors


def parameter_accuracy(gt_steps: tuple[Step, ...], pred_steps: tuple[Step, ...]) -> tuple[float, list[str]]:
    """Parameter accuracy PA (A.4), 0-1, positional: at most one error per aligned step (:func:`step_error`), plus |len
    gt - len pred|; PA = 1 - errors / max(len gt, len pred). Returns (PA, error messages); ValueError when both have 0
    steps (D.2)."""
    return _accuracy(gt_steps, pred_steps, perm=False)


def parameter_accuracy_perm(gt_steps: tuple[Step, ...], pred_steps: tuple[Step, ...]) -> tuple[float, list[str]]:
    """Permutation-equivalent PA (the paper's reading, C.2): inside each reference group the steps are matched to
    minimise errors (Hungarian algorithm, ties positional), else as :func:`parameter_accuracy`."""
    return _accuracy(gt_steps, pred_steps, perm=True)


def _norm_action(a: str) -> str:
    return re.sub(r"\s+", " ", a.strip().lower())


def align_actions(gt_steps: tuple[Step, ...], pred_steps: tuple[Step, ...]) -> list[tuple[int, int]]:
    """LCS alignment of normalised action names (A.4b: stripped, lower-cased, whitespace collapsed) with the upstream
    tie-break (move up when dp[i-1][j] >= dp[i][j-1]). Returns (gt index, pred index) pairs in order."""
    g = [_norm_action(s.action) for s in gt_steps]
    p = [_norm_action(s.action) for s in pred_steps]
    n, m = len(g), len(p)
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n):
        for j in range(m):
            dp[i + 1][j + 1] = max(dp[i][j] + 1 if g[i] == p[j] else 0, dp[i][j + 1], dp[i + 1][j])
    pairs = []
    i, j = n, m
    while i > 0 and j > 0:
        if g[i - 1] == p[j - 1] and dp[i][j] == dp[i - 1][j - 1] + 1:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif dp[i - 1][j] >= dp[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


def soft_scores(gt_steps: tuple[Step, ...], pred_steps: tuple[Step, ...]) -> tuple[float, float, dict]:
    """A.4b soft SS and soft PA, 0-1: soft SS = (M/len gt) x (M/len pred) over the M aligned pairs; soft PA = (sum of
    key_score x value_score)^2 / (len gt x len pred). One side empty: both 0; both empty: soft SS 1 and soft PA NaN
    (undefined, D.2). Returns (soft SS, soft PA, details)."""
    if not gt_steps and not pred_steps:
        return 1.0, float("nan"), {"aligned": []}
    if not gt_steps or not pred_steps:
        return 0.0, 0.0, {"aligned": []}
    pairs = align_actions(gt_steps, pred_steps)
    gen_gt, gen_pred = _outputs(gt_steps), _outputs(pred_steps)
    mapping: dict[str, str] = {}
    total = 0.0
    for gi, pi in pairs:
        g, p = gt_steps[gi], pred_steps[pi]
        kg, kp = set(g.params), set(p.params)
        shared = kg & kp
        if not kg and not kp:
            total += 1.0
        elif shared:
            ok = sum(
                mapping.get(p.params[k]) == g.params[k]
                if g.params[k] in gen_gt and p.params[k] in gen_pred
                else (g.params[k] in gen_gt) == (p.params[k] in gen_pred)
                for k in shared
            )
            total += 2 * len(shared) / (len(kg) + len(kp)) * (ok / len(shared))
        mapping[p.output] = g.output
    n, m = len(gt_steps), len(pred_steps)
    return (len(pairs) / n) * (len(pairs) / m), total * total / (n * m), {"aligned": pairs, "pair_score_sum": total}


def protocols(
    item: Item, response: Response, parser: Callable[[str], tuple[Step, ...]] = parse_protocol
) -> tuple[tuple[Step, ...], tuple[Step, ...]]:
    """(reference steps, predicted steps of ``model_answer(response.text)``) parsed with ``parser`` (A.4 Inputs)."""
    ref = reference_field(item, "answer")
    return parser(str(ref)), parser(model_answer(response.text))


_SS_DESC = (
    "SS = 0 if the reference and predicted action lists differ in length, 1 if n <= 1, else "
    "1 - inversions / (n(n-1)/2), an inversion being a pair i<j the two lists order oppositely under "
    "string comparison (a prediction repeating one name n times scores 1)."
)
_PA_DESC = (
    "PA = 1 - errors / max(len gt, len pred): at each aligned position at most one error (action "
    "differs, key sets differ, or wrong wiring of generated variables), plus |len gt - len pred|; "
    "zero steps on both sides -> parse_error (D.2)."
)
_DEFAULT_PARSER = " Protocols parsed with the D.2 reading (one-line calls are complete steps)."
_CODE_PARSER = (
    " Protocols parsed with the published code's regex (a one-line call swallows the next step); "
    "reproduces published numbers."
)
_PERM = (
    " Permutation-equivalent (paper): consecutive reference steps with no data dependency through "
    "generated variables form a group whose order does not matter."
)

SS = spec(
    "wet_sequence_similarity", WET_EXPERIMENT, "A.4", "Action-sequence similarity, 0-1. " + _SS_DESC + _DEFAULT_PARSER
)
PA = spec(
    "wet_parameter_accuracy",
    WET_EXPERIMENT,
    "A.4",
    "Parameter accuracy, 0-1, positional alignment (what the benchmark defines). " + _PA_DESC + _DEFAULT_PARSER,
)
FINAL = spec(
    "wet_final_score",
    WET_EXPERIMENT,
    "A.4",
    "Wet-experiment final score, 0-1: (SS + PA) / 2 with "
    "wet_sequence_similarity and wet_parameter_accuracy. Task score = mean x 100; the SGI-Score WE term.",
    primary=True,
    qualities=["accuracy"],
)
SS_PERM = spec(
    "wet_sequence_similarity_perm",
    WET_EXPERIMENT,
    "A.4, C.2",
    "SS, 0-1, where pairs of positions inside one reference group never count as inversions. " + _SS_DESC + _PERM,
    variant_of=SS.name,
)
PA_PERM = spec(
    "wet_parameter_accuracy_perm",
    WET_EXPERIMENT,
    "A.4, C.2",
    "PA, 0-1, where steps inside one reference group are matched in any order (minimum errors). " + _PA_DESC + _PERM,
    variant_of=PA.name,
)
FINAL_PERM = spec(
    "wet_final_score_perm",
    WET_EXPERIMENT,
    "A.4, C.2",
    "(wet_sequence_similarity_perm + wet_parameter_accuracy_perm) / 2, 0-1." + _PERM,
    variant_of=FINAL.name,
)
SS_CODE = spec(
    "wet_sequence_similarity_code", WET_EXPERIMENT, "A.4", "SS, 0-1. " + _SS_DESC + _CODE_PARSER, variant_of=SS.name
)
PA_CODE = spec(
    "wet_parameter_accuracy_code",
    WET_EXPERIMENT,
    "A.4",
    "PA, 0-1, positional. " + _PA_DESC + _CODE_PARSER,
    variant_of=PA.name,
)
FINAL_CODE = spec(
    "wet_final_score_code",
    WET_EXPERIMENT,
    "A.4",
    "(SS + PA) / 2, 0-1, as the published code computes final_score." + _CODE_PARSER,
    variant_of=FINAL.name,
)
SOFT_SS = spec(
    "wet_soft_sequence_similarity",
    WET_EXPERIMENT,
    "A.4b",
    "Soft SS, 0-1 (later upstream): actions normalised (strip, lower case, collapse whitespace) and "
    "aligned by LCS; soft SS = (matches/len gt) x (matches/len pred)." + _DEFAULT_PARSER,
    variant_of=SS.name,
)
SOFT_PA = spec(
    "wet_soft_parameter_accuracy",
    WET_EXPERIMENT,
    "A.4b",
    "Soft PA, 0-1 (later upstream): each LCS-aligned pair scores key score x value score (key score = "
    "2 x shared keys / (gt keys + pred keys), value score = fraction of shared keys wired "
    "consistently); soft PA = (sum of pair scores)^2 / (len gt x len pred); zero steps on both "
    "sides -> parse_error (D.2)." + _DEFAULT_PARSER,
    variant_of=PA.name,
)


def _ss(parser):
    def fn(item: Item, response: Response):
        g, p = protocols(item, response, parser)
        v = _ss_plain(g, p)
        return MetricResult(
            v,
            f"{len(g)} reference vs {len(p)} predicted steps: SS {v:.4f}",
            {"gt_actions": _names(g), "pred_actions": _names(p)},
        )

    return fn


def _pa(parser, pa_fn):
    def fn(item: Item, response: Response):
        g, p = protocols(item, response, parser)
        v, errors = pa_fn(g, p)
        return MetricResult(
            v,
            f"{len(g)} reference vs {len(p)} predicted steps: PA {v:.4f}"
            + (f"; errors: {' | '.join(errors)}" if errors else ""),
            {"errors": errors},
        )

    return fn


def _final(parser, ss_fn, pa_fn):
    def fn(item: Item, response: Response):
        g, p = protocols(item, response, parser)
        ss = ss_fn(g, p)
        pa, errors = pa_fn(g, p)
        return MetricResult((ss + pa) / 2, f"(SS {ss:.4f} + PA {pa:.4f}) / 2", {"ss": ss, "pa": pa, "errors": errors})

    return fn


def _ss_plain(g, p):
    return sequence_similarity(_names(g), _names(p))


def _soft_ss(item: Item, response: Response):
    g, p = protocols(item, response)
    ss, _, d = soft_scores(g, p)
    return MetricResult(
        ss, f"{len(d['aligned'])} LCS-aligned actions of {len(g)} reference / {len(p)} predicted: soft SS {ss:.4f}", d
    )


def _soft_pa(item: Item, response: Response):
    g, p = protocols(item, response)
    _check_nonempty(g, p)
    _, pa, d = soft_scores(g, p)
    return MetricResult(pa, f"soft PA {pa:.4f} over {len(d['aligned'])} aligned pairs", d)


def _perm_ss(item: Item, response: Response):
    g, p = protocols(item, response)
    v, groups = sequence_similarity_perm(g, p), independent_groups(g)
    return MetricResult(
        v, f"{len(g)} reference vs {len(p)} predicted steps, groups {groups}: SS_perm {v:.4f}", {"groups": groups}
    )


@metric(SS, PA, FINAL, SS_PERM, PA_PERM, FINAL_PERM, SS_CODE, PA_CODE, FINAL_CODE, SOFT_SS, SOFT_PA, scope=BENCHMARK)
class WetExperimentMetric(FunctionMetric):
    """All wet-experiment metrics of one item, each spec computed on its own (an undefined PA does not hide SS)."""

    def __init__(self) -> None:
        super().__init__(
            self.specs,
            [
                _ss(parse_protocol),
                _pa(parse_protocol, parameter_accuracy),
                _final(parse_protocol, _ss_plain, parameter_accuracy),
                _perm_ss,
                _pa(parse_protocol, parameter_accuracy_perm),
                _final(parse_protocol, sequence_similarity_perm, parameter_accuracy_perm),
                _ss(parse_protocol_code),
                _pa(parse_protocol_code, parameter_accuracy),
                _final(parse_protocol_code, _ss_plain, parameter_accuracy),
                _soft_ss,
                _soft_pa,
            ],
        )
