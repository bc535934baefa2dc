"""Prompt templates: what the target model sees for each SGI-Bench task (METRICS.md A.1-A.5 "Prompt") and SFBench
(DATASETS.md). The structure (the format the scorer parses) is the benchmark's, the wording sgieval's."""

from __future__ import annotations

import json

DEEP_RESEARCH_INSTRUCTIONS = """

Reason step by step before you give the final answer, numbering the steps (Step 1. ..., Step 2. ...).
Put only the final answer inside <answer> and </answer> tags, as short as possible, with no units unless the question asks for them.

Example:
Step 1. ...
Step 2. ...
<answer>0.25</answer>
"""
"""Appended to the deep-research question (METRICS.md A.1 "Prompt")."""


def deep_research_prompt(question: str) -> str:
    """The raw question and :data:`DEEP_RESEARCH_INSTRUCTIONS` (METRICS.md A.1)."""
    return question + DEEP_RESEARCH_INSTRUCTIONS


IDEA_GENERATION_EXAMPLE: dict = {
    "Idea": (
        "We propose a closed-loop screening framework for single-atom catalysts that couples "
        "operando X-ray absorption spectroscopy with a Bayesian optimiser, so that the coordination "
        "environment that maximises CO2-to-CO selectivity is found in tens rather than hundreds of syntheses."
    ),
    "ImplementationSteps": {
        "1": "Synthesise an initial library of 12 Ni-N-C catalysts with varied pyrolysis temperature and nitrogen precursor.",
        "2": "Record operando Ni K-edge XANES/EXAFS during CO2 electroreduction at three potentials.",
        "3": "Fit coordination numbers and oxidation states and store them with the measured Faradaic efficiencies.",
        "4": "Train a Gaussian-process surrogate mapping synthesis parameters to CO selectivity.",
        "5": "Select the next batch of syntheses by expected improvement and repeat steps 1-4 for five rounds.",
        "6": "Validate the best catalyst in a 100-hour flow-cell stability test.",
    },
    "ImplementationOrder": ["1-2", "2-3", "3-4", "4-5", "5-1", "5-6"],
    "Dataset": (
        "Operando XAS spectra and gas-chromatography product analyses for about 60 catalysts "
        "(12 initial plus 5 rounds of 10), with the synthesis parameters of each."
    ),
    "EvaluationMetrics": {
        "Faradaic efficiency": "Fraction of charge that produces CO at -0.8 V vs RHE.",
        "Partial current density": "CO partial current density in mA cm^-2 at the same potential.",
        "Sample efficiency": "Number of syntheses needed to reach 95% of the best observed selectivity.",
        "Stability": "Selectivity retained after 100 h of operation.",
    },
    "ExpectedOutcome": (
        "A catalyst with above 95% CO Faradaic efficiency at industrially relevant current density, found "
        "with about half the syntheses of a grid search, and a spectroscopic descriptor linking Ni-N "
        "coordination to selectivity."
    ),
}
"""The six-key example idea shown to the target (METRICS.md A.2 "Generation and parsing"); content sgieval's own."""

IDEA_GENERATION_INSTRUCTIONS = (
    "\n\nAnswer with one JSON object with exactly these six keys, in a ```json code block:\n"
    "\"Idea\" (string), \"ImplementationSteps\" (object: step id -> step text), "
    "\"ImplementationOrder\" (list of \"a-b\" edges between step ids), \"Dataset\" (string), "
    "\"EvaluationMetrics\" (object: metric name -> description), \"ExpectedOutcome\" (string).\n\n"
    "### Example:\n```json\n" + json.dumps(IDEA_GENERATION_EXAMPLE, indent=4, ensure_ascii=False) + "\n```"
)
"""Appended to the idea-generation question (METRICS.md A.2)."""


def idea_generation_prompt(question: str) -> str:
    """The raw question (with its research context) and :data:`IDEA_GENERATION_INSTRUCTIONS` (METRICS.md A.2)."""
    return question + IDEA_GENERATION_INSTRUCTIONS


DRY_EXPERIMENT_INSTRUCTIONS = """

Return the completed function(s) inside <answer> and </answer> tags: full top-level `def` blocks with the same names and signatures as in the incomplete code.
Only the function definitions are used: imports, decorators and other code outside them are dropped, while the imports already in the incomplete code stay available.

Example 1:
<answer>
def hello():
    print("Hello")
</answer>

Example 2:
<answer>
def add(a, b):
    return a + b

def minus(a, b):
    return a - b
</answer>
"""
"""Appended to the dry-experiment question (METRICS.md A.3 "Assembly")."""


def dry_experiment_prompt(question: str) -> str:
    """The raw question (background and incomplete code) and :data:`DRY_EXPERIMENT_INSTRUCTIONS` (METRICS.md A.3)."""
    return question + DRY_EXPERIMENT_INSTRUCTIONS


WET_EXPERIMENT_INSTRUCTIONS = """

Write the protocol using only actions from the action pool. Write every step as an assignment whose right-hand side is the action name in angle brackets, one parameter per line as key=value, and a closing parenthesis on its own line; reuse earlier output variables as parameter values to wire steps together.
The final answer should be enclosed by <answer> and </answer>.

Example:
<answer>
sample = <Load sample>(
    source="plasma",
    volume_ml=2
)

extract = <Extract analyte>(
    sample=sample,
    solvent="acetonitrile"
)

result = <Measure signal>(
    analyte=extract,
    instrument="LC-MS"
)
</answer>
"""
"""Appended to the wet-experiment question, which holds the action pool (METRICS.md A.4 "Protocol parsing")."""


def wet_experiment_prompt(question: str) -> str:
    """The raw question (with the action pool) and :data:`WET_EXPERIMENT_INSTRUCTIONS` (METRICS.md A.4)."""
    return question + WET_EXPERIMENT_INSTRUCTIONS


EXPERIMENTAL_REASONING_INSTRUCTIONS = (
    "Solve the following multiple-choice question about the experimental image(s) step by step. "
    "The options are labelled A, B, C, ... Analyse the image(s), the question and every option, "
    "then choose the single best option.\n\n"
    "Your reply must contain your reasoning and, at the end, the final answer: only the letter of the "
    "chosen option, inside \\boxed{}. Example: \\boxed{C}"
)
"""Placed before the question (METRICS.md A.5 "Prompt")."""


def experimental_reasoning_prompt(question: str, options: list[str]) -> str:
    """The instruction, ``Question:`` and ``Options:`` with one "A. ..." line per option (METRICS.md A.5); the images,
    in ``Item.metadata["images"]``, are sent before this text."""
    lines = [EXPERIMENTAL_REASONING_INSTRUCTIONS, "", "Question:", question, "", "Options:"]
    lines += [f"{chr(ord('A') + i)}. {opt}" for i, opt in enumerate(options)]  # A.5: option i is letter chr(65 + i)
    return "\n".join(lines) + "\n"


SFBENCH_TEMPLATE = """Assess the scientific feasibility of the following materials-science claim.

Claim: {claim}

Use only information available before {assessment_date}; do not rely on results published on or after that date.

Rate the claim on this 5-level Likert scale:
-2 = infeasible (contradicts established science or is practically impossible)
-1 = probably infeasible
 0 = uncertain (the evidence is balanced or insufficient)
 1 = probably feasible
 2 = feasible (consistent with established science and demonstrated or clearly achievable)

Then explain the rating: for an infeasible claim give the decisive reason; for a feasible or uncertain claim cover every crucial aspect. Use short bullet points and cite the evidence you rely on.

Reply with one JSON object and nothing else:
{{"score": <integer from -2 to 2>, "explanation": "<your explanation>"}}
"""
"""SFBench prompt (DATASETS.md "SFBench"), over ``{claim}`` and ``{assessment_date}``."""


def sfbench_prompt(claim: str, assessment_date: str) -> str:
    """SFBench prompt for one claim (:data:`SFBENCH_TEMPLATE` filled in)."""
    return SFBENCH_TEMPLATE.format(claim=claim, assessment_date=assessment_date)
