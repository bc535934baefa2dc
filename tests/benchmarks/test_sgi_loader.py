"""SGI-Bench loader on the schema fixtures (tests/fixtures/sgi, marked FIXTURE in its README)."""

from __future__ import annotations

import ast
import base64
import io
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from sgieval.benchmarks import prompts
from sgieval.benchmarks.sgi import HubUnavailableError, load_sgi_bench, task_of_name
from sgieval.core import DataNotFoundError, InputError, OfflineError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "sgi"
PNG = b"\x89PNG\r\n\x1a\n"


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIX / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def items():
    return load_sgi_bench(FIX)


def by_task(items, task):
    return [i for i in items if i.task == task]


# ------------------------------------------------------------------ whole folder
def test_folder_counts_ids_and_facets(items):
    assert Counter(i.task for i in items) == {
        "deep_research": 4,
        "idea_generation": 2,
        "dry_experiment": 2,
        "wet_experiment": 2,
        "experimental_reasoning": 3,
    }
    # SGI_TASKS order, then file order
    assert [i.id for i in items] == [
        "sgi-bench/SGI_DeepResearch_9001",
        "sgi-bench/SGI_DeepResearch_9002",
        "sgi-bench/SGI_DeepResearch_9003",
        "sgi-bench/SGI_DeepResearch_9004",
        "sgi-bench/SGI_IdeaGeneration_9001",
        "sgi-bench/SGI_IdeaGeneration_9002",
        "sgi-bench/SGI_DryExperiment_9001",
        "sgi-bench/SGI_DryExperiment_9002",
        "sgi-bench/SGI_WetExperiment_9001",
        "sgi-bench/SGI_WetExperiment_9002",
        "sgi-bench/SGI_Reasoning_9001",
        "sgi-bench/SGI_Reasoning_9002",
        "sgi-bench/SGI_Reasoning_9003",
    ]
    assert {i.benchmark for i in items} == {"sgi-bench"}
    assert [i.discipline for i in items] == [
        "physics",
        "chemistry",
        "life",
        "astronomy",
        "chemistry",
        "physics",
        "chemistry",
        "physics",
        "life",
        "chemistry",
        "physics",
        "chemistry",
        "astronomy",
    ]
    assert [i.type for i in items] == [
        "Properties",
        "Micro-Experiments",
        "Data",
        "Data",
        "",
        "",
        "Numerical Calculation",
        "Simulation",
        "",
        "",
        "comparative reasoning",
        "signal perception",
        "causal reasoning",
    ]
    assert items[0].direction == "gravitational_wave_detection"
    for it in items:
        assert it.metadata["question"] and it.metadata["question"] in it.prompt
        assert it.metadata["source"] == str(FIX / f"{it.task}.jsonl")


def test_deep_research_items(items):
    dr = by_task(items, "deep_research")
    assert dr[1].reference == {"answer": "0.19", "steps": _rows("deep_research.jsonl")[1]["steps"]}
    assert len(dr[1].reference["steps"]) == 4
    assert dr[2].reference["answer"] == "T cell, B cell"
    for it in dr:
        assert it.prompt == it.metadata["question"] + prompts.DEEP_RESEARCH_INSTRUCTIONS
        assert "step by step" in it.prompt and "<answer>0.25</answer>" in it.prompt
        assert "inside <answer> and </answer> tags" in it.prompt


def test_idea_generation_items(items):
    ig = by_task(items, "idea_generation")
    ref = ig[0].reference
    assert set(ref) == {
        "core_idea",
        "keywords",
        "implementation_steps",
        "implementation_order",
        "data",
        "evaluation_metrics",
        "expected_outcome",
        "related_work",
        "existing_solutions",
        "related_work_test",
        "challenge",
        "limitation",
        "motivation",
        "task_objective",
    }
    assert ref["keywords"] == [
        "CO2 electroreduction",
        "copper restructuring",
        "ethylene selectivity",
        "pulsed electrolysis",
    ]
    assert ref["implementation_order"] == ["1-2", "2-3", "3-4", "4-5"]
    for it in ig:
        r = it.reference
        # raw Python-literal dict strings, kept unparsed but parseable (DATASETS.md)
        for key in (
            "related_work",
            "existing_solutions",
            "implementation_steps",
            "evaluation_metrics",
            "related_work_test",
        ):
            assert isinstance(r[key], str) and isinstance(ast.literal_eval(r[key]), dict), key
        assert list(ast.literal_eval(r["implementation_steps"])) == ["1", "2", "3", "4", "5"]
        assert it.prompt.startswith(it.metadata["question"])
        m = re.search(r"### Example:\n```json\n(.*?)\n```", it.prompt, re.S)
        assert m and list(json.loads(m.group(1))) == [
            "Idea",
            "ImplementationSteps",
            "ImplementationOrder",
            "Dataset",
            "EvaluationMetrics",
            "ExpectedOutcome",
        ]


def _splice(incomplete: str, complete: str, names: list[str]) -> str:
    """Replace top-level functions of ``incomplete`` by the same-named ones of ``complete`` (A.3 assembly)."""
    src_lines = complete.splitlines(keepends=True)
    defs = {
        n.name: "".join(src_lines[n.lineno - 1 : n.end_lineno])
        for n in ast.parse(complete).body
        if isinstance(n, ast.FunctionDef)
    }
    out = incomplete
    for name in names:
        lines = out.splitlines(keepends=True)
        node = next(n for n in ast.parse(out).body if isinstance(n, ast.FunctionDef) and n.name == name)
        out = "".join(lines[: node.lineno - 1]) + defs[name] + "".join(lines[node.end_lineno :])
    return out


def test_dry_experiment_items_and_runnable_fixture(items, tmp_path):
    dry = by_task(items, "dry_experiment")
    assert [i.reference["incomplete_functions"] for i in dry] == [
        ["arrhenius_rate", "half_life"],
        ["simulate_oscillator"],
    ]
    assert [i.reference["runtime"] for i in dry] == [0.05, 0.08]
    for it in dry:
        ref = it.reference
        assert set(ref) == {
            "data_code",
            "main_code",
            "incomplete_main_code",
            "incomplete_functions",
            "unit_tests",
            "runtime",
        }
        assert len(ref["unit_tests"]) == 5 and all(set(u) == {"data", "output"} for u in ref["unit_tests"])
        assert "Return the completed function(s) inside <answer> and </answer> tags" in it.prompt
        assert "def add(a, b):" in it.prompt and it.prompt.startswith(it.metadata["question"])
        # main_code completes incomplete_main_code: splicing its functions in gives main_code back
        assert "pass" in ref["incomplete_main_code"]
        assert _splice(ref["incomplete_main_code"], ref["main_code"], ref["incomplete_functions"]) == ref["main_code"]
    # the reference program prints each unit test's expected output
    for it in dry:
        for i, ut in enumerate(it.reference["unit_tests"]):
            d = tmp_path / f"{it.metadata['idx']}_{i}"
            d.mkdir()
            (d / "data_en.py").write_text(ut["data"], encoding="utf-8")
            (d / "main_en.py").write_text(it.reference["main_code"], encoding="utf-8")
            subprocess.run([sys.executable, "data_en.py"], cwd=d, check=True)
            run = subprocess.run([sys.executable, "main_en.py"], cwd=d, capture_output=True, text=True)
            assert run.returncode == 0 and (run.stderr + "\n" + run.stdout).strip() == ut["output"]
    # hand check of unit test 0 of the Arrhenius item: k(350 K) = 1e13 exp(-75000/(8.314462618*350)) = 6.4133e+01
    assert (
        dry[0].reference["unit_tests"][0]["output"].splitlines()[2]
        == "T=350.0 K  k=6.4133e+01 s^-1  t_half=1.0808e-02 s"
    )


def test_wet_experiment_items(items):
    wet = by_task(items, "wet_experiment")
    step = re.compile(r"^(\w+) = <([^>]+)>\($", re.M)
    assert [len(step.findall(i.reference["answer"])) for i in wet] == [5, 4]
    assert [a for _, a in step.findall(wet[1].reference["answer"])] == [
        "Dissolve precursor",
        "Add base dropwise",
        "Age suspension",
        "Wash and dry",
    ]
    for it in wet:
        assert set(it.reference) == {"answer", "action_pool"}
        for _, action in step.findall(it.reference["answer"]):
            assert f"<{action}>(" in it.reference["action_pool"]
        q = it.metadata["question"]
        assert "<research direction>" in q and f"<action>\n{it.reference['action_pool']}\n</action>" in q
        assert it.prompt == q + prompts.WET_EXPERIMENT_INSTRUCTIONS
        assert "The final answer should be enclosed by <answer> and </answer>." in it.prompt


def test_experimental_reasoning_items(items):
    er = by_task(items, "experimental_reasoning")
    assert [i.reference["answer"] for i in er] == [2, 1, 1]
    assert [len(i.reference["options"]) for i in er] == [8, 9, 10]
    assert [i.metadata["image_type"] for i in er] == ["visualization", "experiment", "observation"]
    assert [len(i.metadata["images"]) for i in er] == [1, 1, 2]
    assert [i.metadata["n_step_images"] for i in er] == [1, 1, 0]
    for it in er:
        assert set(it.reference) == {"answer", "options", "steps"}
        for b64 in it.metadata["images"]:
            raw = base64.b64decode(b64, validate=True)
            assert raw.startswith(PNG)
            assert Image.open(io.BytesIO(raw)).size == (48, 32)
        p = it.prompt
        assert p.startswith(prompts.EXPERIMENTAL_REASONING_INSTRUCTIONS)
        assert "\\boxed{}" in p and "Example: \\boxed{C}" in p
        assert p.index("Question:\n" + it.metadata["question"]) < p.index("Options:\nA. ")
    assert er[0].prompt.endswith(
        "Options:\nA. Intensity increases monotonically with synthesis temperature.\n"
        "B. Intensity decreases monotonically with synthesis temperature.\n"
        "C. Intensity peaks at 200 C.\nD. Intensity is lowest at 200 C.\n"
        "E. All three samples have the same intensity.\nF. The 220 C sample is the brightest.\n"
        "G. The 180 C sample is brighter than the 220 C sample.\n"
        "H. Intensity cannot be compared from a bar chart.\n"
    )


def test_prompt_templates_cite_metrics():
    assert "METRICS.md" in prompts.__doc__
    for name in (
        "deep_research_prompt",
        "idea_generation_prompt",
        "dry_experiment_prompt",
        "wet_experiment_prompt",
        "experimental_reasoning_prompt",
    ):
        assert "METRICS.md A." in getattr(prompts, name).__doc__


# ------------------------------------------------------------ replay fixtures
def test_replay_fixtures_match_items(items):
    ids = {i.id: i for i in items}
    texts = {}
    for model in ("fixture-model-a", "fixture-model-b"):
        rows = _rows(f"responses/{model}.jsonl")
        assert [r["item_id"] for r in rows] == [
            "sgi-bench/SGI_DeepResearch_9001",
            "sgi-bench/SGI_DeepResearch_9002",
            "sgi-bench/SGI_DeepResearch_9003",
            "sgi-bench/SGI_DeepResearch_9004",
            "sgi-bench/SGI_IdeaGeneration_9001",
            "sgi-bench/SGI_IdeaGeneration_9002",
        ]
        assert {r["model"] for r in rows} == {model}
        assert all(r["item_id"] in ids and set(r) == {"item_id", "model", "text"} for r in rows)
        texts[model] = {r["item_id"]: r["text"] for r in rows}

    def tag(t):  # A.0 tag extraction: last <answer>, first </answer> after it
        i = t.rfind("<answer>")
        j = t.find("</answer>", i)
        return t[i + 8 : j].strip() if i >= 0 and j >= 0 else None

    dr_ids = [i.id for i in by_task(items, "deep_research")]
    assert [tag(texts["fixture-model-a"][i]) == ids[i].reference["answer"] for i in dr_ids] == [True] * 4
    assert [tag(texts["fixture-model-b"][i]) for i in dr_ids] == ["0.004", "0.37", "B cell, T cell", None]
    for iid in ("sgi-bench/SGI_IdeaGeneration_9001", "sgi-bench/SGI_IdeaGeneration_9002"):
        good = json.loads(re.search(r"```json\n(.*?)\n```", texts["fixture-model-a"][iid], re.S).group(1))
        weak = json.loads(texts["fixture-model-b"][iid])
        keys = ["Idea", "ImplementationSteps", "ImplementationOrder", "Dataset", "EvaluationMetrics", "ExpectedOutcome"]
        assert list(good) == keys and list(weak) == keys
        assert len(good["ImplementationSteps"]) == 5 and len(weak["ImplementationSteps"]) == 2
        assert len(good["Idea"]) > 200 > len(weak["Idea"])


# ---------------------------------------------------------------- sources
def test_task_filter_single_file_and_names(tmp_path):
    assert [i.id for i in load_sgi_bench(FIX, tasks=["wet_experiment"])] == [
        "sgi-bench/SGI_WetExperiment_9001",
        "sgi-bench/SGI_WetExperiment_9002",
    ]
    assert len(load_sgi_bench(FIX, tasks=["SGI-Reasoning", "deep_research"])) == 3 + 4
    assert len(load_sgi_bench(FIX / "idea_generation.jsonl")) == 2
    assert task_of_name("SGI-DeepResearch") == task_of_name("deep_research") == "deep_research"
    assert task_of_name("SGI_Reasoning") == "experimental_reasoning"
    assert task_of_name("responses") is None
    # HF dataset names as file names give the same items
    for task, hf in (
        ("deep_research", "SGI-DeepResearch"),
        ("idea_generation", "SGI-IdeaGeneration"),
        ("dry_experiment", "SGI-DryExperiment"),
        ("wet_experiment", "SGI-WetExperiment"),
        ("experimental_reasoning", "SGI-Reasoning"),
    ):
        shutil.copy(FIX / f"{task}.jsonl", tmp_path / f"{hf}.jsonl")
    assert [i.id for i in load_sgi_bench(tmp_path)] == [i.id for i in load_sgi_bench(FIX)]
    # a file named after nothing: task from the idx prefix of its first record
    shutil.copy(FIX / "deep_research.jsonl", tmp_path / "my_subset.jsonl")
    got = load_sgi_bench(tmp_path / "my_subset.jsonl")
    assert [i.task for i in got] == ["deep_research"] * 4
    # a sgi-bench/ sub-folder is found
    sub = tmp_path / "root" / "sgi-bench"
    sub.mkdir(parents=True)
    shutil.copy(FIX / "wet_experiment.jsonl", sub / "wet_experiment.jsonl")
    assert len(load_sgi_bench(tmp_path / "root")) == 2


def _to_parquet(rows: list[dict], path: Path, schema: pa.Schema | None = None) -> Path:
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def test_parquet_with_image_dicts_and_float16(tmp_path):
    # images as HF parquet stores them: {"bytes", "path"} structs; one image re-encoded as JPEG
    rows = _rows("experimental_reasoning.jsonl")
    jpeg = io.BytesIO()
    Image.open(io.BytesIO(base64.b64decode(rows[0]["images"][0]))).convert("RGB").save(jpeg, format="JPEG")
    for r in rows:
        r["images"] = [{"bytes": base64.b64decode(b), "path": None} for b in r["images"]]
        r["step_images"] = [{"bytes": base64.b64decode(b), "path": None} for b in r["step_images"]]
    rows[0]["images"][0]["bytes"] = jpeg.getvalue()
    img = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema(
        [
            ("idx", pa.string()),
            ("question", pa.string()),
            ("images", pa.list_(img)),
            ("options", pa.list_(pa.string())),
            ("steps", pa.list_(pa.string())),
            ("step_images", pa.list_(img)),
            ("answer", pa.int32()),
            ("image_type", pa.string()),
            ("discipline", pa.string()),
            ("direction", pa.string()),
            ("type", pa.string()),
        ]
    )
    _to_parquet(rows, tmp_path / "SGI-Reasoning.parquet", schema)
    got = load_sgi_bench(tmp_path / "SGI-Reasoning.parquet")
    want = load_sgi_bench(FIX / "experimental_reasoning.jsonl")
    assert [i.id for i in got] == [i.id for i in want]
    assert [i.reference for i in got] == [i.reference for i in want]
    assert got[1].metadata["images"] == want[1].metadata["images"]  # PNG bytes kept byte-exact
    assert base64.b64decode(got[0].metadata["images"][0]).startswith(PNG)  # JPEG re-encoded as PNG
    assert [i.metadata["n_step_images"] for i in got] == [1, 1, 0]

    # dry experiment with runtime stored as float16 (DATASETS.md)
    drows = _rows("dry_experiment.jsonl")
    fields = [
        (k, pa.list_(pa.string()) if k == "incomplete_functions" else pa.string()) for k in drows[0] if k != "runtime"
    ]
    dschema = pa.schema(fields + [("runtime", pa.float16())])
    import numpy as np

    for r in drows:
        r["runtime"] = np.float16(r["runtime"])
    _to_parquet(drows, tmp_path / "dry_experiment.parquet", dschema)
    dry = load_sgi_bench(tmp_path, tasks=["dry_experiment"])
    # nearest float16: 0.05 -> 1638/32768 = 0.04998779296875, 0.08 -> 1311/16384 = 0.08001708984375
    assert [i.reference["runtime"] for i in dry] == [0.04998779296875, 0.08001708984375]
    assert [len(i.reference["unit_tests"]) for i in dry] == [5, 5]


def test_hub_snapshot_layout(tmp_path):
    d = tmp_path / "SGI-WetExperiment" / "data"
    d.mkdir(parents=True)
    _to_parquet(_rows("wet_experiment.jsonl"), d / "test-00000-of-00001.parquet")
    got = load_sgi_bench(tmp_path)
    assert [i.id for i in got] == ["sgi-bench/SGI_WetExperiment_9001", "sgi-bench/SGI_WetExperiment_9002"]


# ------------------------------------------------------------- bad inputs
def test_missing_field_names_file_line_field_fix(tmp_path):
    rows = _rows("deep_research.jsonl")
    del rows[1]["answer"]
    f = _write_jsonl(tmp_path / "deep_research.jsonl", rows)
    with pytest.raises(InputError) as e:
        load_sgi_bench(tmp_path)
    assert str(e.value) == (
        f"{f} line 2: SGI-Bench deep_research record 'SGI_DeepResearch_9002': field 'answer' is missing. "
        "Fix: give every record the field 'answer' as a string (numeric answers stored as strings, e.g. \"0.25\") "
        "(fields of the SGI-Bench deep_research dataset card on HuggingFace)"
    )


def test_wrong_type_names_value(tmp_path):
    rows = _rows("deep_research.jsonl")
    rows[3]["answer"] = 10
    f = _write_jsonl(tmp_path / "deep_research.jsonl", rows)
    with pytest.raises(InputError) as e:
        load_sgi_bench(f)
    assert str(e.value) == (
        f"{f} line 4: SGI-Bench deep_research record 'SGI_DeepResearch_9004': field 'answer': input should be a "
        "valid string (got 10). Fix: give every record the field 'answer' as a string (numeric answers stored as "
        "strings, e.g. \"0.25\") (fields of the SGI-Bench deep_research dataset card on HuggingFace)"
    )


def test_bad_json_line(tmp_path):
    f = tmp_path / "wet_experiment.jsonl"
    f.write_text(
        (FIX / "wet_experiment.jsonl").read_text(encoding="utf-8") + '{"idx": "SGI_WetExperiment_9003",\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as e:
        load_sgi_bench(f)
    assert str(e.value).startswith(f"{f} line 3: is not valid JSON: ")
    assert str(e.value).endswith("Fix: write exactly one complete JSON object per line (JSONL)")


def test_reasoning_answer_out_of_range_and_bad_image(tmp_path):
    rows = _rows("experimental_reasoning.jsonl")
    rows[0]["answer"] = 8
    f = _write_jsonl(tmp_path / "experimental_reasoning.jsonl", rows)
    with pytest.raises(InputError) as e:
        load_sgi_bench(f)
    assert str(e.value) == (
        f"{f} line 1: SGI-Bench experimental_reasoning record 'SGI_Reasoning_9001': answer index 8 is outside the "
        "8 options (0..7). Fix: set 'answer' to the 0-based index of the correct option (0 = A) "
        "(fields of the SGI-Bench experimental_reasoning dataset card on HuggingFace)"
    )
    rows = _rows("experimental_reasoning.jsonl")
    rows[2]["images"][1] = "not base64!"
    _write_jsonl(f, rows)
    with pytest.raises(InputError) as e:
        load_sgi_bench(f)
    assert str(e.value).startswith(
        f"{f} line 3: SGI-Bench experimental_reasoning record 'SGI_Reasoning_9003': field 'images': element 1 is "
        "not valid base64 (got "
    )
    assert str(e.value).endswith(
        "Fix: give every record the field 'images' as a non-empty list of images (base64 "
        "PNG strings or {'bytes','path'} dicts) (fields of the SGI-Bench experimental_reasoning dataset card on HuggingFace)"
    )


def test_parquet_bad_row_names_row(tmp_path):
    rows = _rows("wet_experiment.jsonl")
    rows[1]["action_pool"] = ""
    f = _to_parquet(rows, tmp_path / "SGI-WetExperiment.parquet")
    with pytest.raises(InputError) as e:
        load_sgi_bench(tmp_path)
    assert str(e.value) == (
        f"{f} row 2: SGI-Bench wet_experiment record 'SGI_WetExperiment_9002': field 'action_pool': string should "
        "have at least 1 character (got ''). Fix: give every record the field 'action_pool' as a non-empty string "
        "(the atomic actions) (fields of the SGI-Bench wet_experiment dataset card on HuggingFace)"
    )


def test_duplicate_idx_and_ambiguous_files(tmp_path):
    rows = _rows("deep_research.jsonl")
    rows[2]["idx"] = rows[0]["idx"]
    f = _write_jsonl(tmp_path / "deep_research.jsonl", rows)
    with pytest.raises(InputError) as e:
        load_sgi_bench(tmp_path)
    assert str(e.value) == (
        f"{f} line 3: duplicate idx 'SGI_DeepResearch_9001' (first at {f} line 1). "
        "Fix: give every SGI-Bench record a unique 'idx'"
    )
    shutil.copy(FIX / "deep_research.jsonl", tmp_path / "SGI-DeepResearch.jsonl")
    with pytest.raises(InputError) as e:
        load_sgi_bench(tmp_path)
    assert str(e.value) == (
        f"{tmp_path}: several files for SGI-Bench task deep_research: SGI-DeepResearch.jsonl, "
        "deep_research.jsonl. Fix: keep exactly one file per task in the folder"
    )


FIX_DATA_DIR = (
    "run `sgieval data pull sgi-bench` when online, or put the SGI-Bench files in one folder "
    "(deep_research.jsonl, idea_generation.jsonl, dry_experiment.jsonl, wet_experiment.jsonl, "
    "experimental_reasoning.jsonl, or .parquet; fields of the HuggingFace datasets) and pass "
    "--data-dir <folder with deep_research.jsonl ...> (or set SGIEVAL_DATA)"
)


def test_missing_sources(tmp_path):
    with pytest.raises(DataNotFoundError) as e:
        load_sgi_bench(tmp_path / "nowhere")
    assert str(e.value) == f"{tmp_path / 'nowhere'}: no such file or folder. Fix: {FIX_DATA_DIR}"
    with pytest.raises(DataNotFoundError) as e:
        load_sgi_bench(tmp_path)
    assert str(e.value) == f"{tmp_path}: folder holds no SGI-Bench task file. Fix: {FIX_DATA_DIR}"
    shutil.copy(FIX / "deep_research.jsonl", tmp_path / "deep_research.jsonl")
    with pytest.raises(DataNotFoundError) as e:
        load_sgi_bench(tmp_path, tasks=["deep_research", "wet_experiment"])
    assert str(e.value) == (
        f"{tmp_path}: no file for SGI-Bench task wet_experiment (expected wet_experiment.jsonl, "
        f"wet_experiment.parquet or SGI-WetExperiment.parquet). Fix: {FIX_DATA_DIR}"
    )
    with pytest.raises(InputError) as e:
        load_sgi_bench(tmp_path, tasks=["alchemy"])
    assert str(e.value) == (
        "tasks: unknown SGI-Bench task 'alchemy'. Fix: use some of ['deep_research', "
        "'idea_generation', 'dry_experiment', 'wet_experiment', 'experimental_reasoning']"
    )
    odd = _write_jsonl(tmp_path / "odd.jsonl", [{"idx": "X_1", "question": "q"}])
    with pytest.raises(InputError) as e:
        load_sgi_bench(odd)
    assert str(e.value) == (
        f"{odd}: cannot tell which SGI-Bench task this file holds (neither the file name nor the "
        "'idx' prefix names a task). Fix: name the file after its task, e.g. deep_research.jsonl "
        "or SGI-Reasoning.parquet"
    )


# -------------------------------------------------------------------- hub
def test_hub_offline_env_fails_with_local_files_hint(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnavailableError) as e:
        load_sgi_bench(None, tasks=["deep_research"])
    assert isinstance(e.value, OfflineError) and isinstance(e.value, DataNotFoundError)
    assert e.value.exit_code == 2
    assert str(e.value) == (
        "HuggingFace dataset InternScience/SGI-DeepResearch: cannot download SGI-Bench from the "
        f"HuggingFace hub: HF_HUB_OFFLINE is set. Fix: {FIX_DATA_DIR}"
    )


def test_hub_unreachable_endpoint(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: nothing listens, connection refused
    with pytest.raises(HubUnavailableError) as e:
        load_sgi_bench(None, hub_timeout_s=2.0)
    assert str(e.value) == (
        "HuggingFace dataset InternScience/SGI-DeepResearch: cannot download SGI-Bench from the "
        "HuggingFace hub: http://127.0.0.1:9 is unreachable (ConnectError). "
        f"Fix: {FIX_DATA_DIR}"
    )


@pytest.fixture()
def local_hub(monkeypatch):
    """A local HTTP endpoint standing in for huggingface.co, so the reachability probe passes."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class H(BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{srv.server_port}")
    yield
    srv.shutdown()
    srv.server_close()


def test_hub_rows_with_pil_images(local_hub, monkeypatch):
    # `datasets` is a dependency, replaced by a stand-in returning rows as `datasets` yields them (PIL images)
    import datasets

    rows = _rows("experimental_reasoning.jsonl")
    for r in rows:
        r["images"] = [Image.open(io.BytesIO(base64.b64decode(b))) for b in r["images"]]
        r["step_images"] = [Image.open(io.BytesIO(base64.b64decode(b))) for b in r["step_images"]]
    calls = []

    def fake_load_dataset(name, split=None):
        calls.append((name, split))
        return rows

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    got = load_sgi_bench(None, tasks=["experimental_reasoning"])
    assert calls == [("InternScience/SGI-Reasoning", "test")]
    want = load_sgi_bench(FIX / "experimental_reasoning.jsonl")
    assert [i.id for i in got] == [i.id for i in want]
    assert [i.metadata["source"] for i in got] == ["hf:InternScience/SGI-Reasoning"] * 3
    for g, w in zip(got, want, strict=True):
        # re-encoded PNGs decode to the same pixels
        for a, b in zip(g.metadata["images"], w.metadata["images"], strict=True):
            assert (
                Image.open(io.BytesIO(base64.b64decode(a))).convert("RGB").tobytes()
                == Image.open(io.BytesIO(base64.b64decode(b))).convert("RGB").tobytes()
            )

    def failing_load_dataset(name, split=None):
        raise ConnectionError("Couldn't reach 'InternScience/SGI-Reasoning' on the Hub")

    monkeypatch.setattr(datasets, "load_dataset", failing_load_dataset)
    with pytest.raises(HubUnavailableError) as e:
        load_sgi_bench(None, tasks=["experimental_reasoning"])
    assert str(e.value) == (
        "HuggingFace dataset InternScience/SGI-Reasoning: downloading from the HuggingFace hub "
        "failed: ConnectionError: Couldn't reach 'InternScience/SGI-Reasoning' on the Hub. "
        f"Fix: {FIX_DATA_DIR}"
    )


def test_pull_writes_parquet_that_loads_back(local_hub, monkeypatch, tmp_path):
    import datasets

    from sgieval.benchmarks.sgi import pull_sgi_bench

    def fake_load_dataset(name, split=None):  # stand-in for the hub download: a real datasets.Dataset
        task = {"InternScience/SGI-DeepResearch": "deep_research", "InternScience/SGI-WetExperiment": "wet_experiment"}[
            name
        ]
        return datasets.Dataset.from_list(_rows(f"{task}.jsonl"))

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    out = pull_sgi_bench(tmp_path / "sgi-bench", tasks=["deep_research", "wet_experiment"])
    assert sorted(p.name for p in out.iterdir()) == ["deep_research.parquet", "wet_experiment.parquet"]
    got = load_sgi_bench(out)
    want = load_sgi_bench(FIX, tasks=["deep_research", "wet_experiment"])
    assert [(i.id, i.prompt, i.reference) for i in got] == [(i.id, i.prompt, i.reference) for i in want]


def test_pull_offline(monkeypatch, tmp_path):
    from sgieval.benchmarks.sgi import pull_sgi_bench

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnavailableError) as e:
        pull_sgi_bench(tmp_path / "sgi-bench")
    assert str(e.value) == (
        f"data pull sgi-bench -> {tmp_path / 'sgi-bench'}: cannot download SGI-Bench from the "
        f"HuggingFace hub: HF_HUB_OFFLINE is set. Fix: {FIX_DATA_DIR}"
    )
    assert not (tmp_path / "sgi-bench").exists()
