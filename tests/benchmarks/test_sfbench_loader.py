"""SFBench loader on the fixture claims (tests/fixtures/sfbench, marked FIXTURE in its README)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from sgieval.benchmarks import prompts
from sgieval.benchmarks.sfbench import load_sfbench
from sgieval.core import DataNotFoundError, InputError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "sfbench" / "claims.jsonl"
PAPER_CLAIM = (
    "V-Fe-Co-Ni-Pt high-entropy alloys with an A15 phase have been synthesized, exhibiting "
    "superconductivity with critical temperatures up to 5.18 K."
)


def _rows() -> list[dict]:
    return [json.loads(line) for line in FIX.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_fixture_claims():
    items = load_sfbench(FIX)
    assert [i.id for i in items] == [f"sfbench/SFB-FIX-{n:03d}" for n in range(1, 11)]
    assert Counter(i.reference["score"] for i in items) == {-2: 2, -1: 2, 0: 2, 1: 2, 2: 2}  # balanced labels
    assert Counter(i.direction for i in items) == {
        "superconductors": 3,
        "batteries": 3,
        "catalysis": 2,
        "thermoelectrics": 2,
    }
    assert {(i.benchmark, i.task, i.discipline, i.type) for i in items} == {
        ("sfbench", "feasibility", "materials science", "")
    }
    first = items[0]
    assert first.metadata == {
        "question": PAPER_CLAIM,
        "assessment_date": "2024-06-01",
        "source": str(FIX),
        "native_id": "SFB-FIX-001",
    }
    assert first.reference["score"] == -2 and first.reference["explanation"].startswith("- Fe, Co and Ni are magnetic")
    assert first.prompt == prompts.sfbench_prompt(PAPER_CLAIM, "2024-06-01")
    assert f"Claim: {PAPER_CLAIM}" in first.prompt
    assert "Use only information available before 2024-06-01" in first.prompt
    assert "-2 = infeasible" in first.prompt and "2 = feasible" in first.prompt
    assert '{"score": <integer from -2 to 2>, "explanation": "<your explanation>"}' in first.prompt


def test_json_list_and_repository_field_names(tmp_path):
    # JSON list with alternative spellings: claim_id / statement / feasibility_score / rationale (list) /
    # Sub-Domain / date, and scores given as "+2" and 1.0
    rows = [
        {
            "claim_id": 7,
            "statement": "Claim seven.",
            "feasibility_score": "+2",
            "rationale": ["- a", "- b"],
            "Sub-Domain": "batteries",
            "date": "2024-01-01",
        },
        {
            "claim_id": "x8",
            "statement": "Claim eight.",
            "feasibility_score": 1.0,
            "rationale": "ok",
            "Sub-Domain": "catalysis",
            "date": "2023-05-05",
        },
    ]
    f = tmp_path / "sfbench.json"
    f.write_text(json.dumps(rows), encoding="utf-8")
    items = load_sfbench(f)
    assert [i.id for i in items] == ["sfbench/7", "sfbench/x8"]
    assert [i.reference for i in items] == [{"score": 2, "explanation": "- a\n- b"}, {"score": 1, "explanation": "ok"}]
    assert [i.direction for i in items] == ["batteries", "catalysis"]
    assert items[1].metadata["assessment_date"] == "2023-05-05"


def test_score_outside_likert_is_input_error(tmp_path):
    rows = _rows()
    rows[4]["score"] = 3
    f = _write(tmp_path / "claims.jsonl", rows)
    with pytest.raises(InputError) as e:
        load_sfbench(f)
    assert str(e.value) == (
        f"{f} line 5: SFBench claim 'SFB-FIX-005': field 'score' = 3 is outside the Likert scale "
        "-2..2. Fix: set 'score' to an integer from -2 (infeasible) to 2 (feasible) (METRICS.md D.5)"
    )


def test_non_integer_score(tmp_path):
    rows = _rows()
    rows[0]["score"] = 1.5
    f = tmp_path / "claims.json"
    f.write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_sfbench(f)
    assert str(e.value) == (
        f"{f} record 1: SFBench claim 'SFB-FIX-001': field 'score' is not an integer (got 1.5). "
        "Fix: set 'score' to an integer from -2 (infeasible) to 2 (feasible) (METRICS.md D.5)"
    )


def test_missing_field_duplicate_and_bad_json(tmp_path):
    rows = _rows()
    del rows[2]["assessment_date"]
    f = _write(tmp_path / "claims.jsonl", rows)
    with pytest.raises(InputError) as e:
        load_sfbench(f)
    assert str(e.value) == (
        f"{f} line 3: SFBench claim: field 'assessment_date' is missing. Fix: give every record "
        "its 'assessment_date' (a string such as \"2024-06-01\")"
    )
    rows = _rows()
    rows[1]["id"] = "SFB-FIX-001"
    _write(f, rows)
    with pytest.raises(InputError) as e:
        load_sfbench(f)
    assert str(e.value) == (
        f"{f} line 2: SFBench claim 'SFB-FIX-001': duplicate id (first at {f} line 1). "
        "Fix: give every claim a unique 'id' (string or integer)"
    )
    f.write_text('{"id": 1, "claim": "x"\n', encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_sfbench(f)
    assert str(e.value).startswith(f"{f} line 1: is not valid JSON: ")
    f.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_sfbench(f)
    assert str(e.value) == (
        f"{f}: contains no claims. Fix: write a JSON list of claim objects or one claim object per line (JSONL)"
    )
    with pytest.raises(DataNotFoundError) as e:
        load_sfbench(tmp_path / "missing.jsonl")
    assert str(e.value) == (
        f"{tmp_path / 'missing.jsonl'}: no such SFBench claim file. Fix: check the path, or pass "
        "--data-dir <folder holding the files>"
    )
