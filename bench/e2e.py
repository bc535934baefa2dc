"""End to end: ``sgieval ask`` against a bare client script on the same prompts.

For each ``--n`` (default 1,000 and 10,000) this script

1. starts the mock OpenAI server (:mod:`sgieval.bench.mock_openai`, ``--latency-ms`` 100) in a subprocess;
2. writes N unique items as a JSONL benchmark (``{"id", "prompt", "reference"}``);
3. runs (a) ``sgieval ask "" -b items.jsonl -m openai:mock --base-url <mock> --max-concurrency 64 --yes``
   as a user would: the ``sgieval`` console script (``python -m sgieval.cli`` when it is not installed)
   in a subprocess with a fresh call cache (``SGIEVAL_CACHE_DIR`` in a new temporary folder), and
   (b) a bare script: ``AsyncOpenAI`` + ``asyncio.Semaphore(64)`` over the same prompts, writing the
   replies to a JSONL file; each against a freshly reset server;
4. prints, for both: wall time (s, process start to exit), CPU time (user + system s of the process and
   its children, from ``wait4``), peak RSS (MiB), time to the first model call (s from process start to
   the mock server's first request, both on the system's monotonic clock, and the CPU s the process had
   used by then, sampled from ``/proc`` every 10 ms: on a busy machine this is the start-up cost that
   wall time cannot show) and the calls served; then the
   sgieval / bare wall ratio (targets: <= 1.2 at 1,000 items, <= 1.05 at 10,000) and each arm's wall
   over the ideal ``N x latency / concurrency``.  Both arms run ``--rounds`` times (5), alternating, and the
   runs of median wall are compared (one run's ratio moves by +-0.07 on this 2-core machine, and the same
   client's call rate by +-2% from run to run); every round's ratio is printed too.

``--startup`` (on by default; ``--no-startup`` skips it) also times, best of ``--repeat`` (3) after one
warm-up run: ``sgieval --help`` (target <= 0.3 s) and the main job ``sgieval ask "Which model is the
most creative in chemistry?" --yes`` on the stored SciAidanBench answers (target <= 1.5 s).

Usage: ``python -m sgieval.bench.e2e [--n 1000 --n 10000] [--latency-ms 100] [--concurrency 64]``
(the machine should be otherwise idle: the numbers are wall times).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .throughput import _start_server

CHEM = "Which model is the most creative in chemistry?"

BARE_SCRIPT = r'''
import asyncio, json, sys
from openai import AsyncOpenAI

async def main(items_path, out_path, base_url, concurrency):
    prompts = [json.loads(line) for line in open(items_path, encoding="utf-8") if line.strip()]
    client = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=2)
    sem = asyncio.Semaphore(concurrency)

    async def one(item):
        async with sem:
            r = await client.chat.completions.create(
                model="mock", temperature=0, messages=[{"role": "user", "content": item["prompt"]}])
        return {"id": item["id"], "text": r.choices[0].message.content}

    replies = await asyncio.gather(*(one(i) for i in prompts))
    with open(out_path, "w", encoding="utf-8") as f:
        for r in replies:
            f.write(json.dumps(r) + "\n")
    await client.close()

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
'''


@dataclass
class Measured:
    """One process: wall (s), cpu (user + system s, with its children), peak RSS (MiB),
    first call (s after start, None without a call), calls served, exit code, CPU at the first call."""

    wall_s: float
    cpu_s: float
    rss_mib: float
    first_call_s: float | None
    served: int
    returncode: int
    first_call_cpu_s: float | None = None
    """CPU s the process had used when its first call reached the server (to 10 ms; load-independent)."""


def compile_package() -> int:
    """Write the bytecode of every sgieval module into its ``__pycache__`` (as installing the package does), so a
    shell with ``PYTHONDONTWRITEBYTECODE=1`` (or a fresh checkout) does not time the compilation of sgieval's
    sources at every start (about 0.1 s of CPU per start on the reference machine).

    Returns:
        The number of modules compiled now (0 when every one was up to date).
    """
    import compileall
    import contextlib
    import io

    import sgieval

    root = Path(sgieval.__file__).parent
    before = sum(1 for _ in root.rglob("__pycache__/*.pyc"))
    with contextlib.redirect_stdout(io.StringIO()):
        compileall.compile_dir(str(root), quiet=1, rx=re.compile(r"[/\\](tests|\.venv|install)[/\\]"))
    return sum(1 for _ in root.rglob("__pycache__/*.pyc")) - before


def _sgieval_cmd() -> list[str]:
    """The ``sgieval`` console script beside this interpreter, else ``python -m sgieval.cli``."""
    script = Path(sys.executable).with_name("sgieval")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "sgieval.cli"]


def _run(
    cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, url: str | None = None
) -> Measured:
    """Run ``cmd`` to its end; wall from just before the spawn to the reaped exit, CPU and peak
    RSS from ``wait4``; first call and served calls from the mock server at ``url`` (reset first)."""
    if url:
        httpx.post(url.replace("/v1", "/reset"), timeout=10).raise_for_status()
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    samples: list[tuple[float, float]] = []  # (monotonic s, CPU s of the process so far)
    sampler = threading.Thread(target=_sample_cpu, args=(proc.pid, samples), daemon=True)
    sampler.start()
    err = proc.stderr.read()  # drained while it runs (a full pipe would stall it)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.stderr.write(err.decode("utf-8", "replace")[-3000:])
    first, first_cpu, served = None, None, 0
    if url:
        log = httpx.get(url.replace("/v1", "/log"), timeout=60).json()
        served = httpx.get(url.replace("/v1", "/stats"), timeout=10).json()["served"]
        if log:
            t_first = min(r["t"] for r in log)
            first = t_first - t0
            before = [c for t, c in samples if t <= t_first]
            first_cpu = before[-1] if before else None
    return Measured(
        wall_s=wall,
        cpu_s=ru.ru_utime + ru.ru_stime,
        rss_mib=ru.ru_maxrss / 1024.0,
        first_call_s=first,
        served=served,
        returncode=proc.returncode,
        first_call_cpu_s=first_cpu,
    )


def _sample_cpu(pid: int, out: list[tuple[float, float]]) -> None:
    """Append (monotonic time, user + system CPU s) of process ``pid`` every 10 ms until it ends
    (Linux ``/proc``; nothing elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    path = f"/proc/{pid}/stat"
    while True:
        try:
            with open(path, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            return
        if fields[0] == b"Z":
            return
        out.append((time.monotonic(), (int(fields[11]) + int(fields[12])) / tick))
        time.sleep(0.01)


def _items(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(
                json.dumps({"id": f"e{i:05d}", "prompt": f"Question {i}: what is {i} + {i}?", "reference": str(2 * i)})
                + "\n"
            )


def _row(label: str, m: Measured, ideal: float) -> str:
    first = "n/a" if m.first_call_s is None else f"{m.first_call_s:.2f}"
    first_cpu = "n/a" if m.first_call_cpu_s is None else f"{m.first_call_cpu_s:.2f}"
    return (
        f"  {label:<8} wall {m.wall_s:7.2f} s  CPU {m.cpu_s:7.2f} s  peak RSS {m.rss_mib:6.0f} MiB  "
        f"first call {first:>5} s (CPU {first_cpu} s)  served {m.served}  wall/ideal {m.wall_s / ideal:.2f}"
        + ("" if m.returncode == 0 else f"  EXIT {m.returncode}")
    )


def _median(runs: list[Measured]) -> Measured:
    """The run of median wall time (the lower middle one for an even count)."""
    return sorted(runs, key=lambda m: m.wall_s)[(len(runs) - 1) // 2]


def measure_n(n: int, url: str, latency_ms: float, concurrency: int, work: Path, rounds: int = 3) -> dict[str, Any]:
    """Both arms on ``n`` items against the server at ``url``, ``rounds`` times, alternating (sgieval, bare,
    sgieval, ...: a slow minute of the machine hits both); prints every round's ratio and the runs of median
    wall of each arm, and returns the numbers of those (the ratio is median / median)."""
    d = work / f"n{n}"
    d.mkdir()
    items = d / "items.jsonl"
    _items(items, n)
    ideal = n * latency_ms / 1000.0 / concurrency
    bare_py = d / "bare.py"
    bare_py.write_text(BARE_SCRIPT)
    arms: dict[str, list[Measured]] = {"sgieval": [], "bare": []}
    for r in range(rounds):
        env = {**os.environ, "SGIEVAL_CACHE_DIR": str(d / f"cache{r}"), "PYTHONUNBUFFERED": "0"}
        arms["sgieval"].append(
            _run(
                _sgieval_cmd()
                + [
                    "ask",
                    "",
                    "-b",
                    str(items),
                    "-m",
                    "openai:mock",
                    "--base-url",
                    url,
                    "--out",
                    str(d / f"runs{r}"),
                    "--max-concurrency",
                    str(concurrency),
                    "--yes",
                ],
                env=env,
                cwd=d,
                url=url,
            )
        )
        arms["bare"].append(
            _run(
                [sys.executable, str(bare_py), str(items), str(d / "bare_out.jsonl"), url, str(concurrency)],
                env=env,
                cwd=d,
                url=url,
            )
        )
    a, b = _median(arms["sgieval"]), _median(arms["bare"])
    rounds_text = ", ".join(f"{x.wall_s / y.wall_s:.3f}" for x, y in zip(arms["sgieval"], arms["bare"]))
    ratio = a.wall_s / b.wall_s
    print(
        f"N={n} items, latency {latency_ms:g} ms, {concurrency} in flight, ideal {ideal:.2f} s; "
        f"{rounds} round(s), sgieval/bare per round: {rounds_text}; median runs:"
    )
    print(_row("sgieval", a, ideal))
    print(_row("bare", b, ideal))
    target = 1.2 if n <= 1000 else 1.05
    served_ok = all(m.served == n for m in arms["sgieval"] + arms["bare"])
    rss_max = max(m.rss_mib for m in arms["sgieval"])
    print(
        f"  sgieval/bare median wall ratio = {ratio:.3f} (target <= {target} at {n} items), CPU ratio "
        f"{a.cpu_s / b.cpu_s:.3f}; same calls served in every round: {served_ok}; sgieval peak RSS over the "
        f"rounds {rss_max:.0f} MiB; first call target <= 1.0 s"
    )
    return {
        "n": n,
        "ratio": ratio,
        "sgieval_wall_s": a.wall_s,
        "bare_wall_s": b.wall_s,
        "sgieval_cpu_s": a.cpu_s,
        "bare_cpu_s": b.cpu_s,
        "sgieval_rss_mib": a.rss_mib,
        "bare_rss_mib": b.rss_mib,
        "sgieval_first_call_s": a.first_call_s or float("nan"),
        "bare_first_call_s": b.first_call_s or float("nan"),
        "sgieval_first_call_cpu_s": a.first_call_cpu_s or float("nan"),
        "bare_first_call_cpu_s": b.first_call_cpu_s or float("nan"),
        "sgieval_served": a.served,
        "bare_served": b.served,
        "rounds": rounds,
        "sgieval_rss_max_mib": rss_max,
        "round_ratios": [x.wall_s / y.wall_s for x, y in zip(arms["sgieval"], arms["bare"])],
    }


def measure_startup(work: Path, repeat: int) -> dict[str, float]:
    """Best-of-``repeat`` wall of ``sgieval --help`` and of the main job (after one warm-up each)."""
    out: dict[str, float] = {}
    env = {**os.environ, "SGIEVAL_CACHE_DIR": str(work / "startup-cache")}
    for name, args in (("help", ["--help"]), ("main_job", ["ask", CHEM, "--yes", "--out", str(work / "runs")])):
        runs = [_run(_sgieval_cmd() + args, env=env, cwd=work) for _ in range(repeat + 1)][1:]
        best = min(runs, key=lambda m: m.wall_s)
        out[f"{name}_wall_s"], out[f"{name}_cpu_s"] = best.wall_s, best.cpu_s
        target = 0.3 if name == "help" else 1.5
        label = "sgieval --help" if name == "help" else f"sgieval ask {CHEM!r} --yes"
        print(
            f"{label}: wall {best.wall_s:.2f} s (best of {repeat}; target <= {target} s), CPU {best.cpu_s:.2f} s, "
            f"peak RSS {best.rss_mib:.0f} MiB" + ("" if best.returncode == 0 else f", EXIT {best.returncode}")
        )
    return out


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(prog="python -m sgieval.bench.e2e")
    ap.add_argument("--n", type=int, action="append", help="items (repeatable; default 1000 and 10000)")
    ap.add_argument("--latency-ms", type=float, default=100.0)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument(
        "--startup",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time `sgieval --help` and the main job (default on)",
    )
    ap.add_argument("--repeat", type=int, default=3, help="runs per startup timing (best is shown)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating runs of both arms per N (medians are compared)")
    a = ap.parse_args(argv)
    ns = a.n or [1000, 10000]
    try:
        load = f", 1-min load average {os.getloadavg()[0]:.2f}"
    except OSError:
        load = ""
    compiled = compile_package()
    print(f"sgieval: {' '.join(_sgieval_cmd())}; {os.cpu_count()} CPUs{load}; bytecode of {compiled} modules written")
    results: dict[str, object] = {}
    work = Path(tempfile.mkdtemp(prefix="sgieval-e2e-"))
    try:
        if a.startup:
            results["startup"] = measure_startup(work, a.repeat)
        proc, url = _start_server(a.latency_ms)
        try:
            results["runs"] = [measure_n(n, url, a.latency_ms, a.concurrency, work, a.rounds) for n in ns]
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


if __name__ == "__main__":
    main()
