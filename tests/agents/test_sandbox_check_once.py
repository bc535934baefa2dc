"""A run that needs the sandbox checks it once before the first program; a sandbox that
cannot start its interpreter makes every dry-experiment item infra_error with the reason, never a failed test."""

from __future__ import annotations

from sgieval.agents.evaluation import run_evaluation
from sgieval.core import Item, RunStore, SandboxUnavailableError
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.sgi import dry_experiment as de
from sgieval.tests.conftest import scripted
from sgieval.tools.base import ExecResult


class BrokenInterpreter:
    """A sandbox whose interpreter cannot start: every program exits 127 (what bwrap gave for a venv under /tmp)."""

    name = "bubblewrap"

    def __init__(self) -> None:
        self.checks = 0
        self.runs = 0

    def check(self) -> None:
        self.checks += 1
        raise SandboxUnavailableError(
            "the bubblewrap sandbox cannot run a trivial program (exit code 127: prlimit: "
            "failed to execute /tmp/venv/bin/python)",
            what="sandbox backend 'bubblewrap'",
        )

    def run(self, code: str, **kw) -> ExecResult:
        self.runs += 1
        return ExecResult(exit_code=127, stderr="prlimit: failed to execute /tmp/venv/bin/python", backend=self.name)


def dry_item(n: int) -> Item:
    return Item(
        id=f"sgi-bench/dry{n}",
        benchmark="sgi-bench",
        task="dry_experiment",
        prompt="p",
        reference={
            "data_code": "",
            "main_code": "",
            "incomplete_main_code": "def f():\n    return 0\n\nprint(f())\n",
            "incomplete_functions": ["f"],
            "unit_tests": [{"data": "", "output": "1"}] * 5,
            "runtime": None,
        },
    )


async def test_broken_sandbox_is_checked_once_and_every_item_is_infra_error(tmp_path):
    sandbox = BrokenInterpreter()
    ctx = ScoringContext(sandbox=sandbox)
    items = [dry_item(1), dry_item(2), dry_item(3)]
    target = scripted("t", ["<answer>\ndef f():\n    return 1\n</answer>"], role="target")
    store = RunStore(tmp_path / "run")
    await run_evaluation(store, items, [target], [de.DryExperimentMetric()], ctx, max_parallel=2)
    assert (sandbox.checks, sandbox.runs) == (1, 0)
    scores = store.read("scores")
    assert len(scores) == 3 * len(de.DryExperimentMetric().specs) and {s.status for s in scores} == {"infra_error"}
    assert {s.error for s in scores} == {
        "sandbox bubblewrap failed: sandbox backend 'bubblewrap': the bubblewrap sandbox cannot run a trivial program "
        "(exit code 127: prlimit: failed to execute /tmp/venv/bin/python)"
    }
    # a second evaluation in the same run (resume in-process) does not start programs either
    await run_evaluation(store, [dry_item(4)], [target], [de.DryExperimentMetric()], ctx)
    assert sandbox.runs == 0


async def test_no_dry_experiment_item_no_check(tmp_path):
    sandbox = BrokenInterpreter()
    ctx = ScoringContext(sandbox=sandbox)
    item = Item(id="jsonl:qa/q1", benchmark="jsonl:qa", task="short_answer", prompt="p", reference="a")
    await run_evaluation(RunStore(tmp_path / "run"), [item], [scripted("t", ["a"], role="target")], [], ctx)
    assert (sandbox.checks, sandbox.runs) == (0, 0)
