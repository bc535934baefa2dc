"""Sandbox benchmark.

Prints:
1. the overhead of one bubblewrap-sandboxed run of ``pass`` against a plain
   ``python -c pass`` (medians over --repeat runs; target: < 50 ms more);
2. the throughput of --items items x --tests unit tests (each unit test one
   sandboxed run importing the item's solution file), with --workers threads;
3. how long offline detection takes (the real network probe, uncached).

Run: ``.venv/bin/python -m sgieval.bench.sandbox`` (or ``python bench/sandbox.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def _interleaved_ms(fns: dict, n: int) -> dict[str, list[float]]:
    """Run the candidates alternately n times (so machine load hits all alike)."""
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(n):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            out[k].append((time.perf_counter() - t0) * 1000)
    return out


def main(argv: list[str] | None = None) -> None:
    from sgieval.tools.sandbox import get_sandbox
    from sgieval.tools.search import network_status

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="bubblewrap")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--items", type=int, default=100)
    ap.add_argument("--tests", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)

    sbx = get_sandbox(args.backend, timeout_s=30)
    sbx.run("pass")  # warm caches
    t = _interleaved_ms(
        {
            "plain": lambda: subprocess.run([sys.executable, "-c", "pass"], check=True),
            "boxed": lambda: sbx.run("pass"),
        },
        args.repeat,
    )
    diffs = [b - p for p, b in zip(t["plain"], t["boxed"])]
    med = {k: statistics.median(v) for k, v in t.items()}
    best = {k: min(v) for k, v in t.items()}
    print(f"[overhead] load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print(
        f"[overhead] plain `python -c pass`: median {med['plain']:.1f} ms, best {best['plain']:.1f} ms ({args.repeat} runs)"
    )
    print(f"[overhead] {sbx.name} run of `pass`: median {med['boxed']:.1f} ms, best {best['boxed']:.1f} ms")
    over = statistics.median(diffs)
    print(
        f"[overhead] sandbox overhead: median of paired differences {over:+.1f} ms, best-vs-best "
        f"{best['boxed'] - best['plain']:+.1f} ms, ratio of medians {med['boxed'] / med['plain']:.2f}x "
        f"(target < 50 ms: {'MET' if over < 50 else 'NOT MET'})"
    )

    jobs = []
    for i in range(args.items):
        solution = f"def scale(x):\n    return x * {i}\n"
        for n in range(args.tests):
            test = f"from solution import scale\nassert scale({n}) == {n * i}\nprint('ok')\n"
            jobs.append((solution, test))

    def one(job):
        solution, test = job
        r = sbx.run(test, files={"solution.py": solution})
        return r.exit_code == 0 and r.stdout == "ok\n"

    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.workers) as ex:
        ok = sum(ex.map(one, jobs))
    dt = time.perf_counter() - t0
    n = len(jobs)
    print(
        f"[throughput] {args.items} items x {args.tests} unit tests = {n} sandboxed runs, {args.workers} workers: "
        f"{dt:.1f} s, {n / dt:.1f} runs/s, {args.items / dt:.2f} items/s; passed {ok}/{n}"
    )

    t0 = time.perf_counter()
    online, why = network_status(refresh=True)
    print(f"[offline detection] online={online} in {(time.perf_counter() - t0) * 1000:.1f} ms ({why})")


if __name__ == "__main__":
    main()
