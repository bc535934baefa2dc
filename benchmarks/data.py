"""Where benchmark data lives, and how to fetch it.

Lookup order (issue 2): ``--data-dir``, ``$SGIEVAL_DATA``, ``../shared/data``
(beside the checkout, and beside the working directory), then the user cache
(``platformdirs.user_cache_dir("sgieval")/data``).  Each root holds one folder
per benchmark: ``sciaidanbench/``, ``sgi-bench/``, ``sfbench/``.  A
``--data-dir`` may also point straight at one benchmark's folder.
"""

from __future__ import annotations

import io
import json
import os
import socket
import tarfile
from pathlib import Path

import platformdirs

from ..core import DataNotFoundError, OfflineError

BENCHMARK_DIRS = {"sciaidanbench": "sciaidanbench", "sgi-bench": "sgi-bench", "sfbench": "sfbench"}
# A file that marks a folder as holding that benchmark's data.
MARKERS = {
    "sciaidanbench": "questions.json",
    "sgi-bench": None,  # any <task>.jsonl / .parquet file
    "sfbench": None,
}
SCIAIDANBENCH_COMMIT = "aaa03c4"
SCIAIDANBENCH_TARBALL = f"https://codeload.github.com/CFN-softbio/SciAidanBench/tar.gz/{SCIAIDANBENCH_COMMIT}"


def user_data_dir() -> Path:
    """The user cache folder that ``sgieval data pull`` fills."""
    return Path(platformdirs.user_cache_dir("sgieval")) / "data"


def data_roots(data_dir: str | Path | None = None) -> list[Path]:
    """Candidate roots in lookup order (existing or not), without duplicates."""
    here = Path(__file__).resolve().parents[1]
    cands: list[Path] = []
    if data_dir:
        cands.append(Path(data_dir).expanduser())
    if os.environ.get("SGIEVAL_DATA"):
        cands.append(Path(os.environ["SGIEVAL_DATA"]).expanduser())
    cands += [here.parent / "shared" / "data", Path.cwd().parent / "shared" / "data", user_data_dir()]
    out: list[Path] = []
    for c in cands:
        c = c.resolve()
        if c not in out:
            out.append(c)
    return out


def _holds(folder: Path, benchmark: str) -> bool:
    if not folder.is_dir():
        return False
    marker = MARKERS.get(benchmark)
    if marker:
        return (folder / marker).is_file()
    return any(p.suffix in (".jsonl", ".parquet", ".json") for p in folder.iterdir())


def find_benchmark_dir(benchmark: str, data_dir: str | Path | None = None, *, required: bool = True) -> Path | None:
    """The folder holding ``benchmark``'s data, searched in lookup order.

    Raises DataNotFoundError (one line: where it looked, how to fix) when
    ``required`` and nothing is found, and always when ``data_dir`` holds a
    ``<benchmark>/`` folder without the benchmark's files (no silent fallback
    to the next location); returns None otherwise.
    """
    sub = BENCHMARK_DIRS.get(benchmark, benchmark)
    looked: list[str] = []
    if data_dir and Path(data_dir).expanduser().is_dir():
        from .layouts import looks_sgi_snapshot, upstream_view

        if benchmark == "sgi-bench" and looks_sgi_snapshot(Path(data_dir).expanduser()):
            return Path(data_dir).expanduser().resolve()  # hub snapshots: SGI-<Task>/.../<split>-*.parquet
        view = upstream_view(data_dir)  # a clone of SciAidanBench or AidanBench (benchmarks/layouts.py)
        if view is not None:
            if benchmark == "sciaidanbench":
                return view.folder
            data_dir = None  # the clone holds no other benchmark: never read its files as one
    if data_dir:
        d = Path(data_dir).expanduser()
        if not d.exists():
            raise DataNotFoundError(
                "folder does not exist", what=f"--data-dir {d}",
                fix=f"point --data-dir at a folder holding {sub}/ (or the {sub} files themselves), "
                    f"or run `sgieval data pull {benchmark}`")
    explicit = Path(data_dir).expanduser().resolve() if data_dir else None
    if explicit is not None and (explicit / sub).is_dir() and not _holds(explicit / sub, benchmark):
        # the user pointed at this benchmark's folder: never fall back past it silently
        want = MARKERS.get(benchmark) or "*.jsonl, *.parquet or *.json files"
        raise DataNotFoundError(f"{explicit / sub} holds no {benchmark} data (expected {want})",
                                what=f"--data-dir {data_dir}",
                                fix=f"put the {benchmark} files there, or run `sgieval data pull {benchmark}`")
    for root in data_roots(data_dir):
        for cand in ([root, root / sub] if root == explicit else [root / sub]):
            looked.append(str(cand))
            if _holds(cand, benchmark):
                return cand
    if required:
        tried = ""
        if explicit is not None:
            from .layouts import LAYOUTS

            tried = f"; layouts tried for --data-dir: {'; '.join(LAYOUTS)}"
        raise DataNotFoundError(
            f"no {benchmark} data found (looked in: {', '.join(looked)}{tried})", what=benchmark,
            fix=f"run `sgieval data pull {benchmark}` when online, or pass --data-dir / set SGIEVAL_DATA "
                f"to a folder holding {sub}/")
    return None


def online(host: str = "github.com", port: int = 443, timeout_s: float = 2.0) -> bool:
    """True when a TCP connection to ``host:port`` opens within ``timeout_s``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def pull(benchmark: str, dest_root: Path | None = None) -> Path:
    """Download ``benchmark``'s public data into the user cache (or ``dest_root``).

    sciaidanbench: the per-model results of github CFN-softbio/SciAidanBench
    at commit aaa03c4 -> ``responses/<model>.json``, and ``questions.json``
    rebuilt from them (domain, subdomain, index_in_list, question,
    in_published_results=True).  sgi-bench: the five HuggingFace datasets
    (split test) saved as ``<task>.parquet``.  Raises OfflineError within a
    few seconds when the source is unreachable, saying where to put the files.
    """
    dest_root = dest_root or user_data_dir()
    sub = BENCHMARK_DIRS.get(benchmark)
    if sub is None or benchmark == "sfbench":
        raise OfflineError(f"no public download for {benchmark!r}", what="data pull",
                           fix=f"place the files in {dest_root / (sub or benchmark)} (layout: the README's \"Data\" section)")
    dest = dest_root / sub
    if benchmark == "sgi-bench":  # pull_sgi_bench probes the hub itself (HF_ENDPOINT, HF_HUB_OFFLINE) and fails fast
        from .sgi import pull_sgi_bench

        return pull_sgi_bench(dest)
    host = "codeload.github.com"
    if not online(host):
        raise OfflineError(f"cannot reach {host}", what=f"data pull {benchmark}",
                           fix=f"copy the files to {dest} by hand, or pass --data-dir / set SGIEVAL_DATA")
    import httpx

    r = httpx.get(SCIAIDANBENCH_TARBALL, follow_redirects=True, timeout=120)
    r.raise_for_status()
    (dest / "responses").mkdir(parents=True, exist_ok=True)
    questions: list[dict] = []
    with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:gz") as tar:
        for m in tar.getmembers():
            if "/results/per_model/" in m.name and m.name.endswith(".json") and m.isfile():
                data = json.load(tar.extractfile(m))  # type: ignore[arg-type]
                (dest / "responses" / Path(m.name).name).write_text(json.dumps(data), encoding="utf-8")
                if not questions:
                    questions = _questions_from_results(data)
    (dest / "questions.json").write_text(json.dumps(questions, indent=1), encoding="utf-8")
    return dest


def _questions_from_results(data: dict) -> list[dict]:
    out = []
    for domain, dv in data.get("domains", {}).items():
        subs = {None: dv} if "models" in dv else dv
        for sub, sv in subs.items():
            for _model, temps in sv["models"].items():
                for _t, qs in temps.items():
                    for i, q in enumerate(qs):
                        out.append({"domain": domain, "subdomain": sub, "index_in_list": i, "question": q,
                                    "in_published_results": True})
                    break
                break
    return out
