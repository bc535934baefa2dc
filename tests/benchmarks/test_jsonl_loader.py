"""Generic JSONL loader on tests/fixtures/jsonl/sample_qa.jsonl (a FIXTURE, see its README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sgieval.benchmarks.jsonl import load_jsonl
from sgieval.core import InputError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "jsonl" / "sample_qa.jsonl"


def _write(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_fixture_items():
    items = load_jsonl(FIX)
    assert [i.id for i in items] == ["jsonl:sample_qa/q1", "jsonl:sample_qa/q2", "jsonl:sample_qa/3"]
    assert {i.benchmark for i in items} == {"jsonl:sample_qa"}
    assert [i.task for i in items] == ["short_answer", "short_answer", "generic"]
    assert [i.discipline for i in items] == ["physics", "chemistry", "material"]
    assert [i.direction for i in items] == ["electromagnetism", "stoichiometry", ""]
    assert [i.type for i in items] == ["recall", "calculation", ""]
    assert [i.reference for i in items] == [{"answer": "tesla"}, {"answer": "2, 1, 2"}, None]
    assert items[0].prompt == "What is the SI unit of magnetic flux density? Answer with the unit name only."
    assert items[1].metadata == {
        "question": items[1].prompt,
        "difficulty": "easy",
        "source": str(FIX),
        "native_id": "q2",
    }


def test_benchmark_name_override():
    items = load_jsonl(FIX, benchmark="my-bench")
    assert [i.id for i in items][:1] == ["my-bench/q1"] and items[0].benchmark == "my-bench"


def test_missing_prompt(tmp_path):
    f = _write(tmp_path / "qa.jsonl", [{"id": "a", "prompt": "p"}, {"id": "b", "reference": "x"}])
    with pytest.raises(InputError) as e:
        load_jsonl(f)
    assert str(e.value) == (
        f"{f} line 2: JSONL record 'b': field 'prompt' is missing. Fix: give every record the "
        "field 'prompt' as a non-empty string (the text the target model sees) "
        "(generic JSONL format: id, prompt required)"
    )


def test_missing_id_and_wrong_type(tmp_path):
    f = _write(tmp_path / "qa.jsonl", [{"prompt": "p"}])
    with pytest.raises(InputError) as e:
        load_jsonl(f)
    assert str(e.value) == (
        f"{f} line 1: JSONL record: field 'id' is missing. Fix: give every record the field 'id' "
        "as a string or integer, unique in the file (generic JSONL format: id, prompt required)"
    )
    _write(f, [{"id": "a", "prompt": "p", "metadata": ["not", "a", "dict"]}])
    with pytest.raises(InputError) as e:
        load_jsonl(f)
    assert str(e.value) == (
        f"{f} line 1: JSONL record 'a': field 'metadata': input should be a valid dictionary "
        "(got ['not', 'a', 'dict']). Fix: give every record the field 'metadata' as a JSON object "
        "(generic JSONL format: id, prompt required)"
    )


def test_unknown_field(tmp_path):
    f = _write(tmp_path / "qa.jsonl", [{"id": "a", "prompt": "p", "refrence": "typo"}])
    with pytest.raises(InputError) as e:
        load_jsonl(f)
    assert str(e.value) == (
        f"{f} line 1: JSONL record 'a': unknown field 'refrence'. Fix: remove the field "
        "'refrence' or move it under 'metadata' (generic JSONL format: id, prompt required)"
    )


def test_duplicate_id_bad_json_non_object_empty(tmp_path):
    f = _write(tmp_path / "qa.jsonl", [{"id": 1, "prompt": "p"}, {"id": "1", "prompt": "q"}])
    with pytest.raises(InputError) as e:
        load_jsonl(f)
    assert str(e.value) == f"{f} line 2: duplicate id '1' (first at {f} line 1). Fix: give every record a unique 'id'"
    f.write_text('{"id": "a", "prompt": "p"}\n\n{"id": "b", "prompt": }\n', encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_jsonl(f)
    assert str(e.value) == (
        f"{f} line 3: is not valid JSON: Expecting value (column 23). "  # the "}" after "prompt": is character 23
        "Fix: write exactly one complete JSON object per line (JSONL)"
    )
    f.write_text('["id", "prompt"]\n', encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_jsonl(f)
    assert str(e.value) == (
        f"{f} line 1: JSONL record is a list, expected a JSON object. "
        "Fix: write exactly one JSON object {...} per line (JSONL)"
    )
    f.write_text("", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_jsonl(f)
    assert str(e.value) == (
        f"{f}: contains no records. Fix: write one JSON object per line with at least 'id' and 'prompt'"
    )


def test_byte_order_mark_is_accepted_and_every_problem_is_named(tmp_path):
    p = tmp_path / "bom.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"id": 1, "prompt": "p", "reference": "x"}\n')
    (item,) = load_jsonl(p)
    assert (item.id, item.reference) == ("jsonl:bom/1", {"answer": "x"})
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "prompt": "p", "answer": "x", "foo": 2}\n')
    with pytest.raises(InputError) as ei:
        load_jsonl(bad)
    assert "unknown field 'answer' (and 1 more problem(s) in this record: 'foo' extra_forbidden)" in ei.value.one_line()


MCQ_TAIL = "\n\nA. Oxygen\nB. Carbon dioxide\nC. Nitrogen\n\n" + (
    "Answer with the letter of the correct option as \\boxed{X} or on a final line 'ANSWER: X'."
)


def test_options_the_prompt_does_not_show_are_shown_to_the_model(tmp_path):
    """A model cannot pick a letter it never saw: options missing from the prompt are listed after it with the
    answer format the generic metrics read; a prompt that lists them already is kept as written."""
    p = _write(
        tmp_path / "mcq.jsonl",
        [
            {
                "id": "q1",
                "prompt": "Which gas do plants absorb?",
                "options": ["Oxygen", "Carbon dioxide", "Nitrogen"],
                "reference": "B",
            },
            {
                "id": "q2",
                "prompt": "Which gas do plants absorb?  ",
                "options": {"c": "Nitrogen", "a": "Oxygen", "b": "Carbon dioxide"},
                "reference": "b",
            },
            {
                "id": "q3",
                "prompt": "Which gas? A. Oxygen B. Carbon dioxide C. Nitrogen. Reply ANSWER: X",
                "options": ["Oxygen", "Carbon dioxide", "Nitrogen"],
                "reference": 1,
            },
            {
                "id": "q4",
                "prompt": "Which gas? Oxygen or carbon dioxide?",
                "options": ["Oxygen", "Carbon dioxide"],
                "reference": "B",
            },
        ],
    )
    items = load_jsonl(p)
    assert items[0].prompt == "Which gas do plants absorb?" + MCQ_TAIL
    assert items[1].prompt == "Which gas do plants absorb?" + MCQ_TAIL  # object: letters sorted, upper case
    assert items[2].prompt == "Which gas? A. Oxygen B. Carbon dioxide C. Nitrogen. Reply ANSWER: X"
    # "Carbon dioxide" is not in the prompt as written (lower-case c): the options are shown
    assert items[3].prompt == (
        "Which gas? Oxygen or carbon dioxide?\n\nA. Oxygen\nB. Carbon dioxide\n\n"
        "Answer with the letter of the correct option as \\boxed{X} or on a final line "
        "'ANSWER: X'."
    )
    assert items[0].metadata["question"] == "Which gas do plants absorb?"  # the record's own text
    assert items[0].reference == {"answer": "B", "options": ["Oxygen", "Carbon dioxide", "Nitrogen"]}


def test_the_target_model_receives_the_options(tmp_path):
    from sgieval.api import evaluate
    from sgieval.bench.mock_openai import MockOpenAI

    p = _write(
        tmp_path / "mcq.jsonl",
        [
            {
                "id": "q1",
                "prompt": "Which gas do plants absorb?",
                "options": ["Oxygen", "Carbon dioxide", "Nitrogen"],
                "reference": "B",
            }
        ],
    )
    with MockOpenAI(replies=lambda body, i: "\\boxed{B}", log_bodies=True) as mock:
        run = evaluate(
            "", models="openai:mock", benchmark=str(p), base_url=mock.url, out_dir=tmp_path / "runs", use_cache=False
        )
        (req,) = mock.log()
    assert req["last_user"] == "Which gas do plants absorb?" + MCQ_TAIL
    assert run.totals("exact_match") == {"openai:mock": 1.0}
