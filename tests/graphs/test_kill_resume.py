"""Kill a run with SIGKILL five times at random points, resume each time.

The run is the real CLI (`sgieval ask` / `sgieval resume`) in a subprocess on
an SFBench-format file of 40 generated claims (test data, not SFBench), with
the target `openai:mock` served by the in-process mock OpenAI server.

Kill points: five random numbers of served calls k_1 < ... < k_5 < 40.  The
server closes its own gate once k_j calls have passed it (``hold_at``: new
requests wait, so a test scheduled late on a loaded machine never finds the
run already finished), the test waits until every answered call has reached the client (the
client's call cache holds as many replies as the server served), then sends
SIGKILL while requests are held in flight and records are being written.  So
"served exactly the calls needed" is exact: a reply the killed process
received but had not yet written is served from the call cache on resume.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sgieval.bench.mock_openai import MockOpenAI, last_user
from sgieval.core import RunStore

pytestmark = pytest.mark.slow

N = 40
SUBDOMAINS = ["superconductors", "batteries", "catalysis", "thermoelectrics"]
SGIEVAL = [str(Path(sys.executable).with_name("sgieval"))]


def _reply(body, index):
    n = int(re.search(r"Claim number (\d+)", last_user(body["messages"])).group(1))
    return json.dumps({"score": (n * 7) % 5 - 2, "explanation": f"because {n}"})


def _data(tmp: Path) -> Path:
    d = tmp / "data" / "sfbench"
    d.mkdir(parents=True)
    with (d / "claims.jsonl").open("w") as f:
        for n in range(N):
            f.write(
                json.dumps(
                    {
                        "id": f"K-{n:03d}",
                        "claim": f"Claim number {n} about material {n}.",
                        "score": n % 5 - 2,
                        "explanation": f"- reason {n}",
                        "subdomain": SUBDOMAINS[n % 4],
                        "assessment_date": "2024-01-01",
                    }
                )
                + "\n"
            )
    return tmp / "data"


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "SGIEVAL_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"}


def _ask(data: Path, url: str, out: Path, cache: Path) -> subprocess.Popen:
    return subprocess.Popen(
        SGIEVAL
        + [
            "ask",
            "",
            "-b",
            "sfbench",
            "--data-dir",
            str(data),
            "-m",
            "openai:mock",
            "--base-url",
            url,
            "--out",
            str(out),
            "--yes",
        ],
        env=_env(cache),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _resume(run_id: str, out: Path, cache: Path) -> subprocess.Popen:
    return subprocess.Popen(
        SGIEVAL + ["resume", run_id, "--out", str(out), "--yes"],
        env=_env(cache),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _cached(cache: Path) -> int:
    db = cache / "calls.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return int(c.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _wait(cond, what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _run_id(out: Path) -> str:
    runs = [p for p in out.iterdir() if (p / "config.json").is_file()]
    assert len(runs) == 1, runs
    return runs[0].name


def _records(root: Path):
    store = RunStore(root)
    items = sorted(i.model_dump_json() for i in store.read("items"))
    # each record names the invocation that made it (a killed run's are several): compared without it
    resp = sorted(r.model_dump_json(exclude={"latency_s", "invocation"}) for r in store.read("responses"))
    scores = sorted(s.model_dump_json(exclude={"invocation"}) for s in store.read("scores"))
    return items, resp, scores


def test_sigkill_five_times_then_resume_equals_uninterrupted(tmp_path):
    data = _data(tmp_path)
    rng = random.Random(int(os.environ.get("SGIEVAL_KILL_SEED", "6")))
    kill_at = sorted(rng.sample(range(1, N), 5))

    # uninterrupted reference run
    with MockOpenAI(replies=_reply, latency_ms=20) as mock:
        p = _ask(data, mock.url, tmp_path / "ref", tmp_path / "cache-ref")
        assert p.wait(timeout=300) == 0
        assert mock.stats()["served"] == N
    ref = _records(tmp_path / "ref" / _run_id(tmp_path / "ref"))

    out, cache = tmp_path / "out", tmp_path / "cache"
    kills = 0
    with MockOpenAI(replies=_reply, latency_ms=20) as mock:
        proc = _ask(data, mock.url, out, cache)
        run_id = None
        for k in kill_at:
            mock.hold_at(k)  # the server closes its gate at exactly k calls: the run cannot finish meanwhile
            _wait(lambda: mock.stats()["served"] >= k or proc.poll() is not None, f"{k} served calls")
            assert proc.poll() is None, f"run exited (rc {proc.returncode}) before the kill at {k} served calls"
            mock.hold()
            # quiescent: every request past the gate answered, every answer in the client's cache
            _wait(lambda: mock.passed() == mock.stats()["served"] == _cached(cache), "in-flight replies to land")
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(timeout=30) == -signal.SIGKILL
            kills += 1
            mock.release()
            run_id = run_id or _run_id(out)
            proc = _resume(run_id, out, cache)
        assert proc.wait(timeout=300) == 0
        served = mock.stats()["served"]
        # rerunning the completed run makes zero model calls
        again = _resume(run_id, out, cache)
        assert again.wait(timeout=300) == 0
        assert mock.stats()["served"] == served
        log = mock.log()

    assert kills == 5
    # the server served exactly the calls needed: one per claim, none twice
    assert served == N
    assert sorted(r["last_user"] for r in log if r["outcome"] == "200") == sorted(
        {r["last_user"] for r in log if r["outcome"] == "200"}
    )
    got = _records(out / run_id)
    assert got[0] == ref[0]  # items
    assert got[1] == ref[1]  # responses (latency excluded)
    assert got[2] == ref[2]  # scores
    assert len(got[1]) == N and (out / run_id / "report.md").is_file()
    # the accounts survive the kills: ledger.jsonl holds each served call once (recorded before the
    # reply is cached, and every kill came after the cache had every served reply)
    rows = RunStore(out / run_id).read_rows("ledger")
    paid = [r for r in rows if not r["cached"] and r["error"] is None]
    assert len(paid) == N and all(r["model"] == "openai:mock" and r["role"] == "target" for r in paid)
    # and every request the server received is one call of the ledger: the ones held at the gate when the
    # process was killed are counted as interrupted (their outcome never recorded), not lost
    assert len([r for r in rows if not r["cached"]]) == len(log)
    assert sum(bool(r.get("interrupted")) for r in rows) == len(log) - N
