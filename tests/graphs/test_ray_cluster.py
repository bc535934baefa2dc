"""A real Ray cluster through the documented path: ``RAY_ADDRESS=ray://<head>:10001``.

The test starts a Ray head (``ray start --head --block``, bound to 127.0.0.1, with its Ray Client server) and a
worker node as separate processes, runs ``sgieval ask --executor ray`` with ``RAY_ADDRESS=ray://127.0.0.1:<port>``
against the mock OpenAI server, checks the records equal those of a local run, and stops both processes (their
own process groups: no ``ray stop``, which would end every Ray instance of the machine).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import RunStore

pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.ray]

N = 6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_bin() -> str:
    exe = Path(sys.executable).with_name("ray")
    return str(exe) if exe.is_file() else (shutil.which("ray") or "ray")


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the ``ray start --block`` process (it shuts its node down), then SIGKILL what is left of
    its process group (the group this test created for it)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(timeout=10)


WORKER_BOOT = """
import sys
import ray._private.services as services
# `ray start` replaces a loopback --node-ip-address with the host's outward address for a node joining a
# cluster (services.resolve_ip_for_localhost); keep 127.0.0.1 so the worker's raylet listens on loopback only
services.get_node_ip_address = lambda address=None: "127.0.0.1"
from ray.scripts.scripts import main
sys.exit(main())
"""


@pytest.fixture
def cluster(tmp_path):
    """(ray:// address, head process, worker process, auth env, head temp dir), once both nodes are alive; every
    Ray process listens on 127.0.0.1 only.

    Head: ``ray start --head`` with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (Ray's switch that keeps a node on the
    loopback address) and its Ray Client server; worker: ``ray start --address`` (see WORKER_BOOT).  Token
    authentication (``RAY_AUTH_MODE=token``, a fresh ``RAY_AUTH_TOKEN``) is set explicitly for the cluster and
    its clients, so a token left in ~/.ray by another Ray session changes nothing."""
    try:
        import grpc  # noqa: F401
        import ray.util.client  # noqa: F401
    except ImportError:
        pytest.fail("Ray Client needs `ray[client]` (the [ray] extra installs it): pip install 'sgieval[ray]'")
    gcs, client = _free_port(), _free_port()
    temp = tempfile.mkdtemp(prefix="sgr", dir="/tmp")  # short: Ray's unix socket paths must stay < 108 chars
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": uuid.uuid4().hex}
    env = {**os.environ, **auth, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    common = ["--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats"]
    logs = tmp_path / "ray-logs"
    logs.mkdir()
    head = subprocess.Popen(
        [
            _ray_bin(),
            "start",
            "--head",
            f"--port={gcs}",
            f"--ray-client-server-port={client}",
            "--include-dashboard=false",
            f"--temp-dir={temp}",
            *common,
        ],
        # the head waits up to 120 s (Ray's default: 30 s) for the server-side driver it starts per client
        env={**env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": "120"},
        stdout=(logs / "head.out").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    procs = [head]
    try:
        _wait_port(client, head, logs / "head.out", timeout_s=180)
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER_BOOT, "start", f"--address=127.0.0.1:{gcs}", *common],
            env=env,
            stdout=(logs / "worker.out").open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        procs.append(worker)
        address = f"ray://127.0.0.1:{client}"
        _wait_nodes(address, auth, Path(temp), timeout_s=300)
        yield address, head, worker, auth, Path(temp)
    finally:
        for p in reversed(procs):
            _stop(p)
        shutil.rmtree(temp, ignore_errors=True)


NODES = """
import ray
ray.init()
print(sorted((n["NodeManagerAddress"], n["Alive"]) for n in ray.nodes()))
"""


TWO_NODES = "[('127.0.0.1', True), ('127.0.0.1', True)]"


def _head_logs(temp: Path) -> str:
    """The tail of the head's Ray Client server logs (where a refused client connection is explained)."""
    logs = sorted((temp / "session_latest" / "logs").glob("ray_client_server*"))
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}" for p in logs)


def _wait_nodes(address: str, auth: dict[str, str], temp: Path, timeout_s: float) -> None:
    """Until both nodes are alive, as seen by a Ray Client connected to ``address`` (a fresh client each try: the
    head may refuse the first ones while it is still starting)."""
    t0, res = time.monotonic(), None
    while time.monotonic() - t0 < timeout_s:
        res = subprocess.run(
            [sys.executable, "-c", NODES], env=_client_env(address, auth), capture_output=True, text=True, timeout=300
        )
        if res.returncode == 0 and res.stdout.strip().splitlines()[-1:] == [TWO_NODES]:
            return
        time.sleep(2)
    pytest.fail(
        f"the cluster did not show two live nodes within {timeout_s} s: {res and res.stderr[-2000:]}\n{_head_logs(temp)}"
    )


def _wait_port(port: int, proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if proc.poll() is not None:
            pytest.fail(f"ray start exited with {proc.returncode}: {log.read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    pytest.fail(f"the Ray client server did not listen on 127.0.0.1:{port} within {timeout_s} s")


def _jsonl(tmp_path: Path) -> Path:
    p = tmp_path / "bench.jsonl"
    p.write_text(
        "".join(
            json.dumps({"id": str(k), "prompt": f"q{k}", "reference": f"echo: q{k}" if k % 3 else "x"}) + "\n"
            for k in range(N)
        ),
        encoding="utf-8",
    )
    return p


def _records(run_dir: Path):
    store = RunStore(run_dir)
    resp = sorted((r.item_id, r.model, r.text, r.status, json.dumps(r.tokens)) for r in store.read("responses"))
    # each record names the invocation that made it, which differs between the two runs: compared without it
    scores = sorted(s.model_dump_json(exclude={"invocation"}) for s in store.read("scores"))
    return resp, scores


def _client_env(ray_address: str | None, auth: dict[str, str]) -> dict[str, str]:
    # Ray Client gives up after 5 + 10 + 15 s by default; a loaded 2-core CI machine may need longer to start the
    # client's server-side driver (Ray's RAY_CLIENT_*_CONNECTION_TIMEOUT_S settings)
    env = {
        **os.environ,
        "OPENAI_API_KEY": "test",
        "RAY_CLIENT_INITIAL_CONNECTION_TIMEOUT_S": "30",
        "RAY_CLIENT_MAX_CONNECTION_TIMEOUT_S": "60",
        **auth,
    }
    env.pop("RAY_ADDRESS", None)
    if ray_address:
        env["RAY_ADDRESS"] = ray_address
    return env


def _ask(
    tmp_path: Path,
    out: Path,
    url: str,
    executor: str,
    ray_address: str | None,
    auth: dict[str, str],
    temp: Path | None = None,
) -> Path:
    env = _client_env(ray_address, auth)
    cmd = [
        sys.executable,
        "-m",
        "sgieval.cli",
        "ask",
        "",
        "-b",
        str(_jsonl(tmp_path)),
        "--models",
        "openai:mock",
        "--base-url",
        url,
        "--yes",
        "--no-cache",
        "--out",
        str(out),
        "--executor",
        executor,
        "--tools",
        "",
    ]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:] + (_head_logs(temp) if temp else "")
    (run,) = [p.parent for p in out.glob("*/config.json")]
    return run


def test_ray_client_cluster_same_records_as_local(tmp_path, cluster):
    address, head, worker, auth, temp = cluster
    with MockOpenAI() as mock:  # default reply: "echo: <last user message>"
        local = _ask(tmp_path, tmp_path / "local", mock.url, "local", None, {})
        assert mock.stats()["served"] == N
        dist = _ask(tmp_path, tmp_path / "ray", mock.url, "ray", address, auth, temp)
        assert mock.stats()["served"] == 2 * N  # every item called again, from the cluster's workers
    # the cluster still has its two nodes, both on the loopback address (a fresh client each try: the head may
    # refuse a client while it still ends the server-side driver of the run's client)
    _wait_nodes(address, auth, temp, timeout_s=180)
    (lr, ls), (dr, ds) = _records(local), _records(dist)
    assert dr == lr and ds == ls
    assert len(lr) == N
    # exact_match: items 0 and 3 have the gold "x", the mock echoes -> 4 of 6 correct
    em = [json.loads(s) for s in ls if json.loads(s)["metric"] == "exact_match"]
    assert sorted(s["value"] for s in em) == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    assert head.poll() is None and worker.poll() is None
