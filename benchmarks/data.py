"""Where benchmark data lives, and how to fetch it.

Lookup order (issue 2): ``--data-dir``, ``$SGIEVAL_DATA``, ``../shared/data``
(beside the checkout, and beside the working directory), then the user cache
(``platformdirs.user_cache_dir("sgieval")/data``).  Each root holds one folder
per benchmark, named by its definition (``Benchmark.data_folder``:
``sciaidanbench/``, ``sgi-bench/``, ``sfbench/``), holding its marker files
(``Benchmark.markers``).  A ``--data-dir`` may also point straight at one
benchmark's folder.
"""

from __future__ import annotations

import socket
from pathlib import Path

import platformdirs

from ..core import DataNotFoundError, OfflineError
from .base import Benchmark


def _registered(benchmark: str) -> Benchmark | None:
    from . import registry

    return registry.find(benchmark)


def pullable(benchmark: str) -> bool:
    """Whether ``sgieval data pull <benchmark>`` can fetch it (its definition has a public source)."""
    defn = _registered(benchmark)
    return defn is not None and defn.pull is not None


def how_to_get(benchmark: str) -> str:
    """The fix that gets ``benchmark``'s data, naming only commands that work:
    ``sgieval data pull <b>`` for a benchmark whose definition has a public
    source (``Benchmark.pull``), else where to put the files (``--data-dir``)."""
    defn = _registered(benchmark)
    sub = getattr(defn, "data_folder", None) or benchmark
    if defn is not None and defn.pull is not None:
        return f"run `sgieval data pull {benchmark}` (online), or pass --data-dir <folder holding {sub}/>"
    return (
        f"{benchmark} has no public download: put its files in <folder>/{sub}/ (layout: the README's \"Data\" "
        f"section) and pass --data-dir <folder> or set SGIEVAL_DATA"
    )


def user_data_dir() -> Path:
    """The user cache folder that ``sgieval data pull`` fills."""
    return Path(platformdirs.user_cache_dir("sgieval")) / "data"


def data_roots(data_dir: str | Path | None = None) -> list[Path]:
    """Candidate roots in lookup order (existing or not), without duplicates."""
    here = Path(__file__).resolve().parents[1]
    cands: list[Path] = []
    if data_dir:
        cands.append(Path(data_dir).expanduser())
    from ..core.settings import current_settings

    env_data = current_settings().data
    if env_data:
        cands.append(env_data)
    cands += [here.parent / "shared" / "data", Path.cwd().parent / "shared" / "data", user_data_dir()]
    out: list[Path] = []
    for c in cands:
        c = c.resolve()
        if c not in out:
            out.append(c)
    return out


def _definition(benchmark: str) -> Benchmark:
    """The registered definition of ``benchmark``; an unregistered name is looked up as a
    folder of that name holding any data file."""
    from .registry import find

    return find(benchmark) or Benchmark(name=benchmark, loader=lambda folder: [])


def find_benchmark_dir(benchmark: str, data_dir: str | Path | None = None, *, required: bool = True) -> Path | None:
    """The folder holding ``benchmark``'s data, searched in lookup order.

    Raises DataNotFoundError (one line: where it looked, how to fix) when
    ``required`` and nothing is found, and always when ``data_dir`` holds a
    ``<benchmark>/`` folder without the benchmark's files (no silent fallback
    to the next location); returns None otherwise.
    """
    defn = _definition(benchmark)
    sub = defn.data_folder
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
                "folder does not exist",
                what=f"--data-dir {d}",
                fix=f"point --data-dir at a folder holding {sub}/ (or the {sub} files themselves)"
                + (f", or run `sgieval data pull {benchmark}`" if pullable(benchmark) else ""),
            )
    explicit = Path(data_dir).expanduser().resolve() if data_dir else None
    if explicit is not None and (explicit / sub).is_dir() and not defn.holds(explicit / sub):
        # the user pointed at this benchmark's folder: never fall back past it silently
        want = ", ".join(defn.markers) or "*.jsonl, *.parquet or *.json files"
        raise DataNotFoundError(
            f"{explicit / sub} holds no {benchmark} data (expected {want})",
            what=f"--data-dir {data_dir}",
            fix=f"put the {benchmark} files there"
            + (f", or run `sgieval data pull {benchmark}`" if pullable(benchmark) else ""),
        )
    for root in data_roots(data_dir):
        for cand in [root, root / sub] if root == explicit else [root / sub]:
            looked.append(str(cand))
            if defn.holds(cand):
                return cand
    if required:
        tried = ""
        if explicit is not None:
            from .layouts import LAYOUTS

            tried = f"; layouts tried for --data-dir: {'; '.join(LAYOUTS)}"
        raise DataNotFoundError(
            f"no {benchmark} data found (looked in: {', '.join(looked)}{tried})",
            what=benchmark,
            fix=how_to_get(benchmark),
        )
    return None


def online(host: str = "github.com", port: int = 443, timeout_s: float = 2.0) -> bool:
    """True when a TCP connection to ``host:port`` opens within ``timeout_s``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def pull(benchmark: str, dest_root: Path | None = None) -> Path:
    """Download ``benchmark``'s public data into ``<dest_root>/<its folder>``
    (default root: the user cache) with its definition's ``pull``
    (``Benchmark.pull``; e.g. SciAidanBench from github at aaa03c4, SGI-Bench
    from the HuggingFace hub).  Returns the folder.  Raises OfflineError when
    the benchmark has no public download, or (within a few seconds) when the
    source is unreachable, saying where to put the files.
    """
    from .registry import find

    dest_root = dest_root or user_data_dir()
    defn = find(benchmark)
    if defn is None or defn.pull is None or not defn.data_root:
        sub = defn.data_folder if defn is not None else benchmark
        raise OfflineError(
            f"no public download for {benchmark!r}",
            what="data pull",
            fix=f"place the files in {dest_root / sub} (layout: the README's \"Data\" section)",
        )
    return defn.pull(dest_root / defn.data_folder)
