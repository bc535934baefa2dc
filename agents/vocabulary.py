"""The offline questioning agent's vocabulary: request words -> catalog facets.

Each concept lists the phrases that name it in a request (regular
expressions, matched case-insensitively on word boundaries) and the facet
values it stands for in the catalogs sgieval serves (SGI-Bench disciplines,
SciAidanBench domains and subdomains, task names).
"""

from __future__ import annotations

from ..core import (DEEP_RESEARCH, DRY_EXPERIMENT, EXPERIMENTAL_REASONING, FEASIBILITY, IDEA_GENERATION,
                    OPEN_CREATIVITY, WET_EXPERIMENT)

# concept -> (request patterns, facet values it stands for)
DISCIPLINES: dict[str, tuple[list[str], list[str]]] = {
    "chemistry": ([r"chemistry", r"chemical(s)?", r"chemists?", r"chem"], ["chemistry"]),
    "physics": ([r"physics", r"physicists?"], ["physics"]),
    "astronomy": ([r"astronomy", r"astrophysics?", r"astronomical", r"cosmology", r"astro"], ["astronomy", "astrophysics"]),
    "life": ([r"biology", r"biological", r"life sciences?", r"biomedical", r"bio", r"biologists?"], ["life", "biology"]),
    "neuroscience": ([r"neuroscience", r"neuro", r"brain science"], ["neuroscience"]),
    "earth": ([r"earth sciences?", r"geoscience", r"geology", r"climate", r"environmental( science)?", r"environment"],
              ["earth", "environmental science"]),
    "material": ([r"materials?( science)?", r"materials scientists?"], ["material", "materials science"]),
    "nanoscience": ([r"nano(science|technology)?"], ["nanoscience"]),
    "energy": ([r"energy"], ["energy"]),
    "information": ([r"information( science)?", r"computer science", r"informatics"], ["information"]),
    "mathematics": ([r"mathematics", r"maths?", r"mathematical"], ["mathematics"]),
    "condensed matter": ([r"condensed[- ]matter"], ["condensed matter"]),
    "synchrotron": ([r"synchrotron", r"x-ray"], ["synchrotron"]),
}

# Checked in order: more specific phrases first, so "idea generation" wins over "ideas".
TASKS: list[tuple[str, list[str]]] = [
    (IDEA_GENERATION, [r"idea generation", r"ideation", r"generat\w* (research )?ideas?", r"research ideas?",
                       r"hypothesis generation"]),
    (OPEN_CREATIVITY, [r"creative", r"creativity", r"novel ideas", r"open[- ]ended", r"divergent", r"brainstorm\w*",
                       r"originality"]),
    (DEEP_RESEARCH, [r"deep research", r"literature (search|review)", r"research questions?", r"multi-step research"]),
    (DRY_EXPERIMENT, [r"dry (lab|experiments?)", r"computational experiments?", r"scientific code", r"coding",
                      r"code completion"]),
    (WET_EXPERIMENT, [r"wet (lab|experiments?)", r"(laboratory|lab|experimental) protocols?", r"protocol design"]),
    (EXPERIMENTAL_REASONING, [r"experimental reasoning", r"multimodal reasoning", r"multiple[- ]choice",
                              r"(figures?|images?|plots?) reasoning"]),
    (FEASIBILITY, [r"feasibility", r"feasible", r"scientific claims?"]),
]

BENCHMARKS: dict[str, list[str]] = {
    "sgi-bench": [r"sgi[- ]?bench", r"sgi"],
    "sciaidanbench": [r"sci[- ]?aidan[- ]?bench", r"aidan[- ]?bench"],
    "sfbench": [r"sf[- ]?bench", r"scify"],
}

# Qualities a request may ask about that map to predefined metrics of a task.
QUALITY_WORDS: dict[str, list[str]] = {
    "creativity": [r"creative", r"creativity", r"novel", r"original(ity)?", r"divergent"],
    "rigor": [r"rigou?r(ous)?", r"rigorously"],
    "feasibility": [r"feasib(le|ility)", r"practical(ity)?"],
    "novelty": [r"novelty", r"innovative"],
    "clarity": [r"clarity", r"clear(ly|er|est)?", r"well[- ]written"],
    "safety": [r"safety", r"safe(r|st)?", r"hazard\w*", r"risks?"],
    "reproducibility": [r"reproducib(le|ility)", r"replicab(le|ility)"],
    "cost awareness": [r"cost[- ]aware(ness)?", r"budget", r"cheap(er)?"],
    "accuracy": [r"accura(te|cy)", r"correct(ness)?", r"exact"],
}
