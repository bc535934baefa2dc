"""SFBench loader ("SFBench: The SciFy Scientific Feasibility Benchmark", JHU APL, 2026; DATASETS.md "SFBench"): claim
records (fields or the spellings of :data:`FIELD_ALIASES`) as Items ``sfbench/<id>``, task ``feasibility``, direction =
subdomain."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core import FEASIBILITY, InputError, Item
from . import prompts
from .base import Benchmark, Vocabulary
from .jsonl import iter_records


BENCHMARK = "sfbench"
DISCIPLINE = "materials science"
LIKERT_LEVELS = (-2, -1, 0, 1, 2)  # The five feasibility labels, -2 infeasible .. 2 feasible (DATASETS.md).

FIELD_ALIASES: dict[str, tuple[str, ...]] = {  # Canonical field -> accepted spellings (module docstring).
    "id": ("id", "claim_id", "idx", "claim_idx"),
    "claim": ("claim", "claim_text", "statement", "text"),
    "score": ("score", "feasibility", "feasibility_score", "likert", "likert_score", "label", "rating", "gold_score"),
    "explanation": ("explanation", "rationale", "justification", "gold_explanation"),
    "subdomain": ("subdomain", "sub_domain", "domain", "category"),
    "assessment_date": ("assessment_date", "date", "assessed_on", "cutoff_date", "knowledge_cutoff"),
}

_FIX = {
    "id": "give every claim a unique 'id' (string or integer)",
    "claim": "give every record the claim text in 'claim' (a non-empty string)",
    "score": "set 'score' to an integer from -2 (infeasible) to 2 (feasible) (METRICS.md D.5)",
    "explanation": "give every record the gold explanation in 'explanation' (a string or a list of strings)",
    "subdomain": "give every record its materials-science 'subdomain' (a string)",
    "assessment_date": "give every record its 'assessment_date' (a string such as \"2024-06-01\")",
}


def _norm(key: str) -> str:
    return re.sub(r"[\s_\-]", "", str(key).lower())


def _pick(rec: dict, field: str) -> tuple[bool, Any, str]:
    """(found, value, key used) for a canonical field, trying its aliases."""
    by_norm = {_norm(k): k for k in rec}
    for alias in FIELD_ALIASES[field]:
        k = by_norm.get(_norm(alias))
        if k is not None:
            return True, rec[k], k
    return False, None, field


def _likert(value: Any) -> int:
    """Integer Likert value of an int, an integral float or a string like "+2"; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError("is a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+(\.0+)?\s*", value):
        return int(float(value))
    raise ValueError("is not an integer")


def _claim(where: str, rec: dict) -> tuple[str, dict[str, Any], int, str]:
    """A record's id, fields by canonical name, Likert score and explanation; InputError naming the field."""
    vals: dict[str, Any] = {}
    keys: dict[str, str] = {}

    def bad(field: str, problem: str, label: str = "SFBench claim") -> InputError:
        return InputError(f"{label}: field '{keys.get(field, field)}' {problem}", what=where, fix=_FIX[field])

    for field in FIELD_ALIASES:
        found, value, key = _pick(rec, field)
        if not found or value is None:
            raise bad(field, "is missing")
        vals[field], keys[field] = value, key
    cid = vals["id"]
    if isinstance(cid, bool) or not isinstance(cid, (str, int)) or not str(cid).strip():
        raise bad("id", f"must be a non-empty string or integer (got {cid!r})")
    cid = str(cid).strip()
    label = f"SFBench claim {cid!r}"
    try:
        score = _likert(vals["score"])
    except ValueError as e:
        raise bad("score", f"{e} (got {vals['score']!r})", label) from None
    if score not in LIKERT_LEVELS:
        raise bad("score", f"= {score} is outside the Likert scale -2..2", label)
    expl = vals["explanation"]
    if isinstance(expl, list) and all(isinstance(x, str) for x in expl):
        expl = "\n".join(expl)
    for field in ("claim", "subdomain", "assessment_date"):
        v = vals[field]
        if not isinstance(v, str) or not v.strip():
            raise bad(field, f"must be a non-empty string (got {v!r})", label)
    if not isinstance(expl, str):
        raise bad("explanation", f"must be a string or a list of strings (got {type(expl).__name__})", label)
    return cid, vals, score, expl


def load_sfbench(path: str | Path) -> list[Item]:
    """Claims of a JSON list (``.json``) or JSONL file as Items, in file order. DataNotFoundError for a missing file;
    InputError naming file, record, field and fix for a missing or ill-typed field, a score outside -2..2 (METRICS.md
    D.5), a duplicate id or an empty file."""
    p = Path(path)
    items: list[Item] = []
    seen: dict[str, str] = {}
    for where, rec in iter_records(p, kind="SFBench claim"):
        cid, vals, score, expl = _claim(where, rec)
        label = f"SFBench claim {cid!r}"
        if cid in seen:
            raise InputError(f"{label}: duplicate id (first at {seen[cid]})", what=where, fix=_FIX["id"])
        seen[cid] = where
        claim, date = vals["claim"].strip(), vals["assessment_date"].strip()
        items.append(
            Item(
                id=f"{BENCHMARK}/{cid}",
                benchmark=BENCHMARK,
                task=FEASIBILITY,
                discipline=DISCIPLINE,
                direction=vals["subdomain"].strip(),
                type="",
                prompt=prompts.sfbench_prompt(claim, date),
                reference={"score": score, "explanation": expl},
                metadata={"question": claim, "assessment_date": date, "source": str(p), "native_id": cid},
            )
        )
    if not items:
        raise InputError(
            "contains no claims",
            what=str(p),
            fix="write a JSON list of claim objects or one claim object per line (JSONL)",
        )
    return items


def load_sfbench_folder(folder: str | Path) -> list[Item]:
    """Every claim of the ``.json``/``.jsonl`` files of ``folder``, sorted by name."""
    files = sorted(p for p in Path(folder).iterdir() if p.suffix in (".json", ".jsonl"))
    return [item for f in files for item in load_sfbench(f)]


DEFINITION = Benchmark(
    name=BENCHMARK,
    description="SFBench: materials-science feasibility claims rated -2..2 with an explanation (JHU APL, 2026).",
    loader=load_sfbench_folder,
    pull=None,  # no public download: the files are placed by hand (README "Data")
    source="SFBench: The SciFy Scientific Feasibility Benchmark (JHU APL, 2026); no public download",
    tasks=(FEASIBILITY,),
    facets={"discipline": DISCIPLINE, "direction": "materials-science subdomain"},
    vocabulary=Vocabulary(
        disciplines={"material": (DISCIPLINE,)},
        tasks=((FEASIBILITY, (r"feasibility", r"feasible", r"scientific claims?")),),
        names=(r"sf[- ]?bench", r"scify"),
    ),
    prompts={FEASIBILITY: prompts.SFBENCH_TEMPLATE},
    metrics=("sfbench_abs_error", "sfbench_expl_correctness"),
    primary={FEASIBILITY: "sfbench_qwk"},
    prefer={"feasibility": ("sfbench_qwk",), "accuracy": ("sfbench_qwk",)},
)
