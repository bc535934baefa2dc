"""The sandbox's memory limit holds for the whole sandbox, not per process.

The probe that found it: three children of one sandboxed program held 4.6 GiB under the 2 GiB limit
(RLIMIT_AS is per process), 64 processes were allowed, and the reported peak said 1544 MB (one process).
Real sandboxes, real programs; each touches every page it allocates, so the memory is resident.
"""

from __future__ import annotations

import os

import pytest

from sgieval.tests.tools.sandboxes import checked_run, needs_bwrap
from sgieval.tools.sandbox import BubblewrapSandbox, UnsafeLocalSandbox

UID = 3_901_236

THREE_CHILDREN = """
import os, time
kids = []
for k in range({n}):
    pid = os.fork()
    if pid == 0:
        b = b"x" * ({mib} * 2**20)  # written, so resident
        time.sleep({hold})
        os._exit(0)
    kids.append(pid)
for p in kids:
    os.waitpid(p, 0)
print("all children done")
"""

CHAIN = """
import os, time
# a chain parent -> child -> grandchild, each holding 800 MiB: no process over the limit, 2.4 GiB together
for depth in range(3):
    block = b"y" * (800 * 2**20)
    if depth < 2 and os.fork() != 0:
        os.wait()
        os._exit(0)
time.sleep(20)
print("chain done")
"""


def _bwrap() -> BubblewrapSandbox:
    return BubblewrapSandbox(uids=[UID], timeout_s=60)


BACKENDS = [
    pytest.param(_bwrap, id="bubblewrap", marks=needs_bwrap),
    pytest.param(lambda: UnsafeLocalSandbox(timeout_s=60), id="unsafe-local"),
]


@pytest.mark.parametrize("make", BACKENDS)
def test_three_one_and_a_half_gib_children_are_stopped_at_two_gib(make):
    sb = make()
    assert sb.limits.memory_mb == 2048
    res = checked_run(sb, THREE_CHILDREN.format(n=3, mib=1536, hold=30))
    assert res.killed_reason == "memory"
    assert res.outcome == "killed: memory limit"
    assert res.exit_code == -9 and "all children done" not in res.stdout
    # the tree's peak, not one process's 1.5 GiB: past the limit, and stopped before a third child's worth more
    assert 2048 < res.peak_memory_mb < 2048 + 1024
    assert res.wall_time_s < 30  # stopped, not waited out


@pytest.mark.parametrize("make", BACKENDS)
def test_a_chain_of_processes_is_summed_too(make):
    """Variant: no process is a child of the program's first process for long (each parent waits on its
    own child), and none is over the limit on its own."""
    res = checked_run(make(), CHAIN)
    assert (res.killed_reason, res.outcome) == ("memory", "killed: memory limit")
    assert "chain done" not in res.stdout


@needs_bwrap
def test_under_the_limit_the_peak_is_the_trees():
    """Two children of 512 MiB held together: not stopped, and the peak is their sum (> 1 GiB), where
    the program's own high-water mark says ~512 MiB."""
    res = checked_run(_bwrap(), THREE_CHILDREN.format(n=2, mib=512, hold=1.5))
    assert res.killed_reason is None and res.exit_code == 0 and res.stdout == "all children done\n"
    assert 1024 < res.peak_memory_mb < 2048


@needs_bwrap
def test_a_smaller_limit_is_the_whole_sandboxs_too():
    res = checked_run(
        BubblewrapSandbox(uids=[UID], timeout_s=60, memory_mb=512), THREE_CHILDREN.format(n=3, mib=300, hold=30)
    )
    assert res.outcome == "killed: memory limit" and 512 < res.peak_memory_mb < 1024


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="without root the caller's own processes share the count")
def test_process_count_is_limited_to_sixteen_by_default():
    code = """
    import os, time
    n = 0
    try:
        for _ in range(40):
            if os.fork() == 0:
                time.sleep(5)
                os._exit(0)
            n += 1
    except OSError as e:
        print("refused after", n, type(e).__name__)
    """
    sb = _bwrap()
    assert sb.limits.max_processes == 16
    res = checked_run(sb, code)
    # as root the sandbox uid's processes are counted alone: the driver and the program are 2 of its 16 + 1
    assert res.stdout == "refused after 15 BlockingIOError\n", res.stdout
    res = checked_run(BubblewrapSandbox(uids=[UID], max_processes=64), code)
    assert res.stdout == ""  # all 40 started: the limit is what stopped them above


# --------------------------------------------------------------- the outcome in a dry-experiment score and report
DRY_MAIN = "import json\n\ndef compute(x):\n    return 0\n\nprint(compute(json.load(open('input.json'))['x']))\n"
DRY_ANSWER = """<answer>
def compute(x):
    import os, time
    if x == "fork":
        for _ in range(3):
            if os.fork() == 0:
                block = b"z" * (1536 * 2**20)
                time.sleep(30)
                os._exit(0)
        time.sleep(30)
    return x * 2
</answer>"""


def _dry_item():
    import json

    from sgieval.core import Item

    xs = [1, 2, "fork", 3, 4]
    tests = [
        {"data": f"import json\njson.dump({{'x': {json.dumps(x)}}}, open('input.json', 'w'))\n", "output": str(o)}
        for x, o in zip(xs, ["2", "4", "never", "6", "8"])
    ]
    return Item(
        id="sgi-bench/mem",
        benchmark="sgi-bench",
        task="dry_experiment",
        prompt="p",
        reference={"incomplete_main_code": DRY_MAIN, "incomplete_functions": ["compute"], "unit_tests": tests},
    )


@needs_bwrap
def test_a_memory_kill_reads_killed_memory_limit_in_the_scores_and_the_report(tmp_path):
    """A unit test whose program starts three 1.5 GiB children: its row says "killed: memory limit" (not
    "return code -9"), the AET rationale lists which runs it averages, and the report states how AET is
    aggregated (METRICS.md A.3, C.4)."""
    import asyncio

    from sgieval.agents.reporting import build_report

    from sgieval.reports import ReportContext
    from sgieval.core import Response
    from sgieval.metric_pool.base import ScoringContext
    from sgieval.metric_pool.sgi import dry_experiment as de

    sb = BubblewrapSandbox(uids=range(3_901_240, 3_901_245), timeout_s=60)
    item = _dry_item()
    resp = Response(item_id=item.id, model="target-a", text=DRY_ANSWER)
    scores = asyncio.run(de.DryExperimentMetric({"dry_timeout_s": 60}).score(item, resp, ScoringContext(sandbox=sb)))
    by = {s.metric: s for s in scores}
    rows = by["dry_passall_5"].details["tests"]
    assert [r["passed"] for r in rows] == [True, True, False, True, True]
    assert rows[2]["how"] == "killed: memory limit" and rows[2]["killed"] == "killed: memory limit"
    assert "#2 fail (killed: memory limit)" in by["dry_passall_5"].rationale
    assert by["dry_passall_1"].evidence[2].details["killed_reason"] == "memory"
    aet = by["dry_average_execution_time"]
    assert aet.rationale.startswith("mean runtime over 5 test(s) with runtime > 0: #0 ")
    assert ", killed: memory limit)" in aet.rationale.split("#2 ", 1)[1].split(";", 1)[0]
    assert aet.value == pytest.approx(sum(r["runtime"] for r in rows) / 5)
    header = {
        "run_id": "r1",
        "request": "Which model runs its code best?",
        "selection_reason": "test",
        "filters": "none",
        "k": "all matches",
        "n_items": 1,
        "sampling": "all",
        "seed": 0,
        "models": "target-a",
        "judges": "none",
        "agent": "none",
        "metrics": "test",
        "primary": "dry_passall_5",
        "primary_reason": "asked",
        "data_source": "test",
        "tools": "python",
        "scope": "whole catalog",
        "extra": {},
    }
    path = asyncio.run(
        build_report(
            ReportContext(
                tmp_path,
                header=header,
                items=[item],
                responses=[resp],
                scores=scores,
                specs=de.SPECS,
                primary="dry_passall_5",
                models=["target-a"],
                n_resamples=99,
                seed=0,
                judges=[],
            ),
            agent=None,
        )
    )
    text = path.read_text(encoding="utf-8")
    assert (
        "dry_average_execution_time: the per-model value is the mean over every scored item, items with AET -1 "
        "(no unit test with runtime > 0) included, as sgi_score.py averages (step_4_score.py leaves them out; "
        "METRICS.md C.4)."
    ) in text
    assert "a program killed at the memory or output limit as its time until the kill" in text
