"""A run killed between a step's saved writes and the step's own checkpoint resumes to the report.

LangGraph (``durability="async"``, the default) writes a step's checkpoint in the
background while the next step runs, and each task's writes as the task
finishes.  A SIGKILL can therefore leave ``state.sqlite`` with a latest
checkpoint whose task already has its writes saved, and later writes whose
checkpoints were never committed.  ``aget_state`` then shows ``next == ()``
(tasks with saved writes are not listed there) although the graph never
reached END: ``sgieval resume`` must continue to the report, not take the run
for complete (exit 3, "stopped before the report").  This was the flaky
failure of tests/graphs/test_kill_resume.py under load.

Each case is the state of a finished run with every checkpoint after step
``last`` removed (their writes kept, as the kill left them): step 1 is the
checkpoint before ``customisation`` (its writes saved), step 2 before
``confirm``, step 3 before ``evaluation``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3

import pytest

from sgieval.core import RunConfig, RunStore
from sgieval.graphs.evaluate import execute, make_runtime

CHEM = "Which model is the most creative in chemistry?"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("torn")
    cfg = RunConfig(run_id="t", request=CHEM, out_dir=str(root / "done"), bootstrap_resamples=99, yes=True, k=3)
    state = asyncio.run(execute(make_runtime(cfg)))
    assert state["report"].endswith("report.md")
    return root


def _tear(run_dir, last: int) -> list[str]:
    """Delete the checkpoints of steps after ``last`` (keeping every write); return the steps left."""
    with sqlite3.connect(run_dir / "state.sqlite") as c:
        rows = c.execute("SELECT checkpoint_id, metadata FROM checkpoints ORDER BY checkpoint_id").fetchall()
        for cid, meta in rows:
            if json.loads(meta)["step"] > last:
                c.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", (cid,))
        left = [
            json.loads(m)["step"]
            for _, m in c.execute("SELECT checkpoint_id, metadata FROM checkpoints ORDER BY checkpoint_id").fetchall()
        ]
        n_writes = c.execute("SELECT COUNT(*) FROM writes").fetchone()[0]
    # the run's writes: 1 input; questioning, customisation: 2 each (their value, the next node); confirm: 3
    # (confirmed, the estimate made under --yes for the report, the next node); evaluation: 3 (targets,
    # evaluated, the next node); 1 report write
    assert n_writes == 12
    return left


@pytest.mark.parametrize("last", [1, 2, 3])
def test_resume_after_torn_checkpoint_reaches_the_report(finished, tmp_path, last):
    run_dir = tmp_path / "t"
    shutil.copytree(finished / "done" / "t", run_dir)
    (run_dir / "report.md").unlink()
    assert _tear(run_dir, last) == list(range(-1, last + 1))
    store = RunStore(run_dir)
    n_responses = len(store.read("responses"))
    assert n_responses == 18  # 3 chemistry questions x 6 stored models

    config = store.read_config().model_copy(update={"out_dir": str(tmp_path)})  # the copy, not the finished run
    state = asyncio.run(execute(make_runtime(config), resume=True))

    assert state["report"] == str(run_dir / "report.md") and (run_dir / "report.md").is_file()
    assert state["confirmed"] is True and len(state["targets"]) == 6
    assert len(RunStore(run_dir).read("responses")) == 18  # nothing evaluated twice
    # now complete: a second resume does nothing and returns the same state
    again = asyncio.run(execute(make_runtime(config.model_copy()), resume=True))
    assert again["report"] == state["report"]
