"""Throughput of model calls through :func:`sgieval.models.calls.ainvoke` ("Done when").

Starts the mock OpenAI server (:mod:`sgieval.bench.mock_openai`) in a
subprocess (so the server does not share this process's CPU/GIL), then makes
``--calls`` (default 2,000) calls with ``--latency-ms`` (100) mock latency at
``--concurrency`` (64) through ``ainvoke`` with the client sgieval builds for
an ``openai:`` model string (:func:`sgieval.models.registry.resolve_model`;
``max_retries=0`` so ainvoke's retries apply) and a :class:`Ledger`, once per
transport: ``direct`` (:class:`~sgieval.models.openai_direct.ChatOpenAIDirect`,
the default) and ``sdk`` (``ChatOpenAI`` through the openai SDK), each against
a fresh server.

Prints:

* ``achieved/ideal`` = wall time / (calls x latency / concurrency); target <= 1.15.
* CPU time per call of this process (``time.process_time``), in ms:
  - ``client total``: everything in this process (the chat client, its HTTP
    library, response parsing, and sgieval's orchestration);
  - ``orchestration``: sgieval's own part, measured by running the same number
    of calls through ``ainvoke`` with a runnable that only sleeps the latency
    (semaphore, retry loop, cache decision, ledger, annotation); target < 2 ms.

Usage: ``python -m sgieval.bench.throughput [--calls 2000 --latency-ms 100 --concurrency 64 --transport both]``
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import subprocess
import sys
import time

from langchain_core.messages import AIMessage


def _start_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sgieval.bench.mock_openai", "--port", "0", "--latency-ms", str(latency_ms)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
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


def _http_model(url: str, transport: str):
    """The ``openai:`` target sgieval builds for ``url`` with ``transport``
    (``direct`` = ChatOpenAIDirect, the default; ``sdk`` = ChatOpenAI)."""
    from sgieval.models.registry import resolve_model

    old = os.environ.get("SGIEVAL_OPENAI_TRANSPORT")
    os.environ["SGIEVAL_OPENAI_TRANSPORT"] = transport
    try:
        model = resolve_model("openai:gpt-4o-mini", "target", base_url=url)
    finally:
        if old is None:
            os.environ.pop("SGIEVAL_OPENAI_TRANSPORT", None)
        else:
            os.environ["SGIEVAL_OPENAI_TRANSPORT"] = old
    return dataclasses.replace(model, provider="mock")


def _measure_http(transport: str, calls: int, latency_ms: float, concurrency: int) -> dict[str, float]:
    """One fresh mock server, a warm-up of ``concurrency`` calls, then ``calls`` timed calls."""
    proc, url = _start_server(latency_ms)
    try:
        model = _http_model(url, transport)

        async def both():
            await _run(model, min(concurrency, calls))  # warm-up: imports, connections
            return await _run(model, calls)

        wall, cpu, ok = asyncio.run(both())
        server_cpu = _proc_cpu(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    out = {"wall_s": wall, "ok": ok, "client_cpu_ms_per_call": 1000 * cpu / calls}
    if server_cpu is not None:
        out["server_cpu_ms_per_call"] = 1000 * server_cpu / (calls + min(concurrency, calls))
    return out


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(prog="python -m sgieval.bench.throughput")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--latency-ms", type=float, default=100.0)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument(
        "--transport",
        choices=["direct", "sdk", "both"],
        default="both",
        help="openai: client to time: direct (sgieval's default), sdk (ChatOpenAI), or both",
    )
    a = ap.parse_args(argv)

    from sgieval.models.base import NamedModel
    from sgieval.models.calls import set_max_concurrency

    set_max_concurrency("mock", a.concurrency)
    ideal = a.calls * (a.latency_ms / 1000.0) / a.concurrency
    print(
        f"calls={a.calls} latency={a.latency_ms:g} ms concurrency={a.concurrency} cpus={os.cpu_count()} "
        f"ideal={ideal:.2f} s"
    )
    out: dict[str, float] = {"calls": a.calls, "ideal_s": ideal}
    transports = ["direct", "sdk"] if a.transport == "both" else [a.transport]
    for transport in transports:
        m = _measure_http(transport, a.calls, a.latency_ms, a.concurrency)
        label = {
            "direct": "openai: default (ChatOpenAIDirect, aiohttp)",
            "sdk": "openai: with SGIEVAL_OPENAI_TRANSPORT=sdk (ChatOpenAI, openai SDK)",
        }[transport]
        ratio = m["wall_s"] / ideal
        print(f"{label} -> mock: wall {m['wall_s']:.2f} s, ok={m['ok']}, achieved/ideal = {ratio:.3f} (target <= 1.15)")
        print(f"  client CPU per call (chat client + sgieval) = {m['client_cpu_ms_per_call']:.2f} ms")
        if "server_cpu_ms_per_call" in m:
            print(f"  mock server CPU per call = {m['server_cpu_ms_per_call']:.2f} ms")
        out.update({f"{transport}_{k}": v for k, v in m.items()})
        out[f"{transport}_ratio"] = ratio
    try:
        print(
            f"1-min load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs "
            "(the mock server and other processes share the CPUs)"
        )
    except OSError:
        pass

    sleeper_model = NamedModel(name="sleeper", role="target", chat=_Sleeper(a.latency_ms / 1000.0), provider="mock")
    o_wall, o_cpu, o_ok = asyncio.run(_run(sleeper_model, a.calls))
    out.update({"orchestration_cpu_ms_per_call": 1000 * o_cpu / a.calls, "orchestration_ratio": o_wall / ideal})
    print(
        f"orchestration only (ainvoke over a sleeping runnable): wall {o_wall:.2f} s, "
        f"achieved/ideal = {o_wall / ideal:.3f}, ok={o_ok}"
    )
    print(f"  orchestration CPU per call = {out['orchestration_cpu_ms_per_call']:.3f} ms (target < 2 ms)")
    return out


if __name__ == "__main__":
    main()
