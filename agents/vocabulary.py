"""Quality words (what a request asks about) and request grammar words; facet words belong to each benchmark's
``Benchmark.vocabulary``, and which metric measures a quality to ``MetricSpec.qualities``."""

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
# REQUEST_WORDS ask about the evaluation itself or join the sentence: they never make a request unclear
MIN_FUZZY_LENGTH = 4  # shorter words are never corrected


def max_edits(word: str) -> int:
    """How many OSA edits (casefolded) a word may be from a known term and still be its typo: 0 below 4 letters, 1 up
    to 6 ("phisics"), else 2 ("chemsitry")."""
    n = len(word)
    return 0 if n < MIN_FUZZY_LENGTH else 1 if n <= 6 else 2


# the plain words of QUALITY_WORDS, which a misspelt quality word is compared with ("creatve" -> "creative")
QUALITY_TERMS: dict[str, str] = {
    "creative": "creativity", "creativity": "creativity", "original": "creativity", "originality": "creativity",
    "divergent": "creativity", "rigor": "rigor", "rigour": "rigor", "rigorous": "rigor", "feasible": "feasibility",
    "feasibility": "feasibility", "practical": "feasibility", "novel": "novelty", "novelty": "novelty",
    "innovative": "novelty", "clarity": "clarity", "safety": "safety", "hazard": "safety",
    "reproducible": "reproducibility", "reproducibility": "reproducibility", "replicable": "reproducibility",
    "accurate": "accuracy", "accuracy": "accuracy", "correct": "accuracy", "correctness": "accuracy",
}  # fmt: skip
