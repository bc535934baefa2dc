"""Quality words: what a request asks about, for the metric customisation agent.

The request words that name catalog facets (disciplines, tasks, benchmark names) belong to each benchmark's definition
(``Benchmark.vocabulary``, joined by :func:`sgieval.benchmarks.registry.vocabulary`); which metric measures a quality is
declared by the metric (``MetricSpec.qualities``).
"""

from __future__ import annotations

# Qualities a request may ask about (regular expressions, matched case-insensitively on word boundaries).
QUALITY_WORDS: dict[str, list[str]] = {
    "creativity": [r"creative", r"creativity", r"original(ity)?", r"divergent"],
    "rigor": [r"rigou?r(ous)?", r"rigorously"],
    "feasibility": [r"feasib(le|ility)", r"practical(ity)?"],
    "novelty": [r"novel(ty)?", r"innovative", r"new(est)? ideas"],  # ranked by a novelty metric, not by counts
    "clarity": [r"clarity", r"clear(ly|er|est)?", r"well[- ]written"],
    "safety": [r"safety", r"safe(r|st)?", r"hazard\w*", r"risks?"],
    "reproducibility": [r"reproducib(le|ility)", r"replicab(le|ility)"],
    "cost awareness": [r"cost[- ]aware(ness)?", r"budget", r"cheap(er)?"],
    "accuracy": [r"accura(te|cy)", r"correct(ness)?", r"exact"],
}

REQUEST_WORDS: frozenset[str] = frozenset(
    """
    a about above across after against all also am an and any anything are as at be been being best better between
    both but by can could did do does doing done each either else ever every for from get gets give gives good great
    had has have having he her here high higher highest his how however i if in into is it its itself just least less
    let like likely low lower lowest many may me more most much must my neither no nor not of on one only or other
    our out over overall per please rather really show shows so some still such than that the their them then there
    these they this those through to too under up us very was we well were what whatever when where whereas whether
    which while who whom whose why will with within without would you your
    answer answers answered areas ask asked benchmark benchmarks best-performing case cases category categories choose
    compare compared compares comparing comparison comparisons differ differed difference differences different
    differs disagree disagreement disagreements disagrees discipline disciplines domain domains do does evaluate
    evaluated evaluating evaluation field fields find first generate generates good item items lead leader leads llm
    llms model models outperform outperforms perform performance performed performs question questions rank ranked
    ranking ranks rate rated result results score scored scores scoring strongest stronger subfield subfields
    subject subjects task tasks tell top topic topics weaker weakest win wins winner worse worst write writes
    writing written produce produces idea ideas response responses output outputs science sciences scientific
    research judge judges judged assess assesses predict predicts estimate estimates grade grades propose proposes
    make makes get gets ability abilities capable capability ahead behind beat beats versus vs favour favours favor
    favors prefer prefers smallest largest fewest greatest biggest know knows understand understands handle handles solve solves experiment experiments lab
    """.split()
)
"""Words of a request that ask about the evaluation itself (which, best, compare, model, where, topics, ...) or only
join the sentence: they name no facet, quality, metric or model and never make a request unclear.  Every other word
of a request must be understood (a facet value, a quality, a metric, a model, a number of items) or it is
questioned (:func:`sgieval.agents.questioning.understand_request`)."""

MIN_FUZZY_LENGTH = 4
"""Words shorter than this are never corrected ("bio", "x")."""


def max_edits(word: str) -> int:
    """How many edits (optimal string alignment distance: insertions, deletions, substitutions and transpositions of
    adjacent letters, casefolded) a word may be from a known term and still be read as a typo of it: 1 for words of 4-6
    letters ("phisics" -> "physics" is 1 edit away), 2 for longer ones ("chemsitry", "biollogy"); 0 below
    :data:`MIN_FUZZY_LENGTH` letters."""
    n = len(word)
    if n < MIN_FUZZY_LENGTH:
        return 0
    return 1 if n <= 6 else 2


QUALITY_TERMS: dict[str, str] = {
    "creative": "creativity",
    "creativity": "creativity",
    "original": "creativity",
    "originality": "creativity",
    "divergent": "creativity",
    "rigor": "rigor",
    "rigour": "rigor",
    "rigorous": "rigor",
    "feasible": "feasibility",
    "feasibility": "feasibility",
    "practical": "feasibility",
    "novel": "novelty",
    "novelty": "novelty",
    "innovative": "novelty",
    "clarity": "clarity",
    "safety": "safety",
    "hazard": "safety",
    "reproducible": "reproducibility",
    "reproducibility": "reproducibility",
    "replicable": "reproducibility",
    "accurate": "accuracy",
    "accuracy": "accuracy",
    "correct": "accuracy",
    "correctness": "accuracy",
}
"""The plain words of :data:`QUALITY_WORDS` (each matches one of its quality's patterns), the terms a misspelt quality
word is compared with ("creatve" -> "creative")."""
