"""The documented examples run as written: README command (1), the Python API page's doctests (docs/api.md),
offline on the real SciAidanBench data, and the YAML benchmark definition of the data page (docs/data.md)."""

from __future__ import annotations

import doctest
import json
import re

import pytest

from sgieval.benchmarks import registry
from sgieval.benchmarks.user import load_yaml_benchmark
from sgieval.metric_pool import registry as metric_registry
from sgieval.tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _section(title: str, page: str) -> str:
    """The ``### title`` section of ``docs/<page>`` (up to the next heading)."""
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    start = text.index(f"### {title}\n")
    ends = [x for x in (text.find("\n## ", start), text.find("\n### ", start + 1)) if x != -1]
    return text[start : min(ends, default=len(text))]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_python_api_examples_run(tmp_path, monkeypatch):
    blocks = _blocks(_section("Python API", "api.md"), "python")
    assert len(blocks) == 3 and all(">>> " in b for b in blocks)
    monkeypatch.chdir(tmp_path)
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    test = parser.get_doctest("\n".join(blocks), {}, "README Python API", "README.md", 0)
    try:
        runner.run(test, out=lambda s: pytest.fail(s), clear_globs=False)
    finally:
        registry.unregister("sums")
    assert runner.summarize(verbose=False) == (0, len(test.examples))
    assert (tmp_path / test.globs["run"].run_dir / "report.md").is_file()


def test_yaml_benchmark_example_loads(tmp_path):
    (yaml_text,) = _blocks(_section("Data", "data.md"), "yaml")
    (tmp_path / "capitals.yaml").write_text(yaml_text)
    (tmp_path / "capitals.jsonl").write_text(
        json.dumps({"id": "fr", "prompt": "Capital of France?", "reference": "Paris"}) + "\n"
    )
    defn = load_yaml_benchmark(tmp_path / "capitals.yaml")
    (item,) = defn.loader(None)
    assert item.id == "capitals/fr" and (item.task, item.discipline) == ("capitals", "geography")
    assert item.prompt == "Answer with the city only, inside <answer></answer>.\nCapital of France?"
    assert [s.name for e in metric_registry.entries() if e.scope == defn.name for s in e.build().specs] == [
        "exact_match"
    ]
    assert defn.vocabulary.tasks == (("capitals", ("capital cities",)),)


# ------------------------------------------------------------- README command (1): data step, then the main job
def _command_1() -> list[list[str]]:
    """The commands of README command (1) after ``./install.sh``, each as argv."""
    import shlex

    (block,) = _blocks(README[: README.index("\n## ")], "bash")
    (line,) = [ln for ln in block.splitlines() if "# (1)" in ln]
    steps = [shlex.split(s) for s in line.split("#", 1)[0].split("&&")]
    assert steps[0] == ["./install.sh"]
    return steps[1:]


def _sgieval(argv: list[str], cwd, **env: str):
    import os
    import subprocess
    import sys

    assert argv[0] == ".venv/bin/sgieval"
    full = {k: v for k, v in os.environ.items() if k != "SGIEVAL_DATA"} | env
    return subprocess.run(
        [sys.executable, "-m", "sgieval.cli", *argv[1:]],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_readme_command_1_pulls_then_ranks(tmp_path):
    import os

    from sgieval.benchmarks.data import find_benchmark_dir

    pull, ask = _command_1()
    assert pull == [".venv/bin/sgieval", "data", "pull", "sciaidanbench"]
    assert ask[:2] == [".venv/bin/sgieval", "ask"] and "--yes" in ask
    found = find_benchmark_dir("sciaidanbench", required=False)
    if found is None and not os.environ.get("CI"):
        pytest.skip(
            "no SciAidanBench data here (../shared/data, the user cache) and CI is unset: README command (1) "
            "would download it with `sgieval data pull sciaidanbench` (network)"
        )
    res = _sgieval(pull, tmp_path)
    assert res.returncode == 0, res.stderr
    if found is not None:  # already there: only says where, with no network
        assert (
            res.stdout == f"sciaidanbench: already present in {found} (nothing downloaded; --force downloads again)\n"
        )
    res = _sgieval(ask, tmp_path)
    assert res.returncode == 0, res.stderr
    (report,) = (tmp_path / "runs").glob("*/report.md")
    assert res.stdout == f"report: runs/{report.parent.name}/report.md\n"
    rows = re.findall(r"^\| \d \| (replay:\S+) \| [\d.]+ \| [^|]+ \| (\d+) \|", report.read_text(), flags=re.M)
    assert [n for _, n in rows[:6]] == ["296", "274", "200", "194", "180", "107"]
    # the README quotes the start of this Answer: the quote is the real output
    start = README.index("Command (1)'s Answer begins:")
    begin = README.index("```text\n", start) + len("```text\n")
    quoted = README[begin : README.index("\n```", begin)]
    assert quoted.startswith("- **Verdict:** ") and quoted in report.read_text()


def test_readme_data_step_offline(tmp_path):
    """The data step with the data present is a no-op offline; without the data and without network it fails
    with one line saying where to put the files (exit 2)."""
    from sgieval.benchmarks.data import find_benchmark_dir

    pull, _ = _command_1()
    empty = tmp_path / "empty"
    empty.mkdir()
    res = _sgieval(pull, tmp_path, SGIEVAL_NETWORK="offline", SGIEVAL_DATA=str(empty), XDG_CACHE_HOME=str(tmp_path))
    assert res.returncode == 2 and res.stdout == ""
    (line,) = res.stderr.splitlines()
    assert line.startswith(
        "error: data pull sciaidanbench: cannot reach codeload.github.com (the files come from "
        "github.com/CFN-softbio/SciAidanBench (commit aaa03c4, results/per_model/*.json)). Fix: retry when online, "
        f"or copy questions.json and responses/<model>.json to {tmp_path / 'sgieval' / 'data' / 'sciaidanbench'} "
    )
    found = find_benchmark_dir("sciaidanbench", required=False)
    if found is not None:
        res = _sgieval(pull, tmp_path, SGIEVAL_NETWORK="offline")
        assert res.returncode == 0 and "already present in" in res.stdout
        res = _sgieval([*pull, "--force"], tmp_path, SGIEVAL_NETWORK="offline")  # --force asks the network
        assert res.returncode == 2 and res.stderr.startswith("error: data pull sciaidanbench: cannot reach")
