"""Throughput of model calls through :func:`sgieval.models.calls.ainvoke` (issue 6, "Done when").

Starts the mock OpenAI server (:mod:`sgieval.bench.mock_openai`) in a
subprocess (so the server does not share this process's CPU/GIL), then makes
``--calls`` (default 2,000) calls with ``--latency-ms`` (100) mock latency at
``--concurrency`` (64) through ``ainvoke`` with ``langchain_openai.ChatOpenAI``
(``max_retries=0`` so ainvoke's retries apply) and a :class:`Ledger`.

Prints:

* ``achieved/ideal`` = wall time / (calls x latency / concurrency); target <= 1.15.
* CPU time per call of this process (``time.process_time``), in ms:
  - ``client total``: everything in this process (ChatOpenAI, the openai SDK,
    httpx, pydantic parsing, and sgieval's orchestration);
  - ``orchestration``: sgieval's own part, measured by running the same number
    of calls through ``ainvoke`` with a runnable that only sleeps the latency
    (semaphore, retry loop, cache decision, ledger, annotation); target < 2 ms.

Usage: ``python -m sgieval.bench.throughput [--calls 2000 --latency-ms 100 --concurrency 64]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time

from langchain_core.messages import AIMessage


def _start_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sgieval.bench.mock_openai", "--port", "0", "--latency-ms", str(latency_ms)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    line = proc.stdout.readline().strip() if proc.stdout else ""
    if not line.startswith("MOCK_OPENAI_URL="):
        proc.kill()
        raise RuntimeError(f"mock server did not start: {line!r}")
    url = line.split("=", 1)[1]
    import httpx

    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.get(url.replace("/v1", "/stats"), timeout=1).raise_for_status()
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)
    return proc, url


def _proc_cpu(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (None without psutil)."""
    try:
        import psutil
    except ImportError:
        return None
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


class _Sleeper:
    """A runnable that answers after ``latency_s`` (no HTTP, no SDK)."""

    def __init__(self, latency_s: float):
        self.latency_s = latency_s

    async def ainvoke(self, messages):
        await asyncio.sleep(self.latency_s)
        return AIMessage("ok", usage_metadata={"input_tokens": 3, "output_tokens": 1, "total_tokens": 4})


async def _run(model, calls: int, runnable=None) -> tuple[float, float, int]:
    from sgieval.core import ModelCallError
    from sgieval.models.accounting import Ledger
    from sgieval.models.calls import ainvoke

    ledger = Ledger()

    async def one(i: int) -> bool:
        try:
            await ainvoke(model, f"item {i}", runnable=runnable, use_cache=False, timeout_s=30)
            return True
        except ModelCallError:
            return False

    with ledger.activate():
        cpu0, t0 = time.process_time(), time.perf_counter()
        oks = await asyncio.gather(*(one(i) for i in range(calls)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return wall, cpu, sum(oks)


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(prog="python -m sgieval.bench.throughput")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--latency-ms", type=float, default=100.0)
    ap.add_argument("--concurrency", type=int, default=64)
    a = ap.parse_args(argv)

    from langchain_openai import ChatOpenAI

    from sgieval.models.base import NamedModel
    from sgieval.models.calls import set_max_concurrency

    set_max_concurrency("mock", a.concurrency)
    ideal = a.calls * (a.latency_ms / 1000.0) / a.concurrency
    proc, url = _start_server(a.latency_ms)
    try:
        chat = ChatOpenAI(base_url=url, api_key="test", model="gpt-4o-mini", max_retries=0)
        model = NamedModel(name="openai:gpt-4o-mini", role="target", chat=chat, provider="mock")

        async def both():
            await _run(model, min(a.concurrency, a.calls))  # warm-up: imports, connections
            return await _run(model, a.calls)

        wall, cpu, ok = asyncio.run(both())
        server_cpu = _proc_cpu(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()

    sleeper_model = NamedModel(name="sleeper", role="target", chat=_Sleeper(a.latency_ms / 1000.0), provider="mock")
    o_wall, o_cpu, o_ok = asyncio.run(_run(sleeper_model, a.calls))

    out = {
        "calls": a.calls, "ok": ok, "wall_s": wall, "ideal_s": ideal, "ratio": wall / ideal,
        "client_cpu_ms_per_call": 1000 * cpu / a.calls,
        "orchestration_cpu_ms_per_call": 1000 * o_cpu / a.calls,
        "orchestration_ratio": o_wall / ideal,
    }
    print(f"calls={a.calls} ok={ok} latency={a.latency_ms:g} ms concurrency={a.concurrency} cpus={os.cpu_count()}")
    print(f"HTTP (ChatOpenAI -> mock): wall {wall:.2f} s, ideal {ideal:.2f} s, "
          f"achieved/ideal = {wall / ideal:.3f} (target <= 1.15)")
    print(f"  client CPU per call (SDK + httpx + sgieval) = {out['client_cpu_ms_per_call']:.2f} ms")
    if server_cpu is not None:
        out["server_cpu_ms_per_call"] = 1000 * server_cpu / (a.calls + min(a.concurrency, a.calls))
        print(f"  mock server CPU per call = {out['server_cpu_ms_per_call']:.2f} ms")
    try:
        load = os.getloadavg()[0]
        print(f"  1-min load average {load:.2f} on {os.cpu_count()} CPUs (other processes share the CPUs)")
    except OSError:
        pass
    print(f"orchestration only (ainvoke over a sleeping runnable): wall {o_wall:.2f} s, "
          f"achieved/ideal = {o_wall / ideal:.3f}, ok={o_ok}")
    print(f"  orchestration CPU per call = {out['orchestration_cpu_ms_per_call']:.3f} ms (target < 2 ms)")
    return out


if __name__ == "__main__":
    main()
