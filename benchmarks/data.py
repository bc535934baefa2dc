"""Where benchmark data lives, and how to fetch it: a named folder (``--data-dir``, else ``$SGIEVAL_DATA``) is the only
place looked in; else ``../shared/data`` (beside the checkout and the working directory), then the user cache."""

from __future__ import annotations

from pathlib import Path

import platformdirs

from ..core import DataNotFoundError, OfflineError, current_settings
from .base import Benchmark
from .layouts import looks_sgi_snapshot, upstream_view
from .registry import find


def how_to_get(benchmark: str) -> str:
    """The fix that gets ``benchmark``'s data, naming only commands that work.

    Args:
        benchmark: a registered benchmark name.

    Returns:
        ``sgieval data pull <b>`` when it has a public source, else where to put the files.
    """
    defn = find(benchmark)
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


def named_root(data_dir: str | Path | None = None) -> tuple[Path, str] | None:
    """(folder, how it was named) for ``--data-dir`` or ``$SGIEVAL_DATA``, else None (the default roots are
    searched)."""
    if data_dir:
        d = Path(data_dir).expanduser()
        return d, f"--data-dir {d}"
    env_data = current_settings().data
    if env_data:
        d = Path(env_data).expanduser()
        return d, f"SGIEVAL_DATA={d}"
    return None


def default_roots() -> list[Path]:
    """``../shared/data`` beside the checkout and beside the working directory, then the user cache."""
    here = Path(__file__).resolve().parents[1]
    return [here.parent / "shared" / "data", Path.cwd().parent / "shared" / "data", user_data_dir()]


def data_roots(data_dir: str | Path | None = None) -> list[Path]:
    """The data roots looked in, in order, without duplicates (existing or not).

    Args:
        data_dir: a named data folder; None: none named.

    Returns:
        Only the named folder (:func:`named_root`) when there is one, else :func:`default_roots`.
    """
    named = named_root(data_dir)
    cands = [named[0]] if named is not None else default_roots()
    return list(dict.fromkeys(c.resolve() for c in cands))


def find_benchmark_dir(benchmark: str, data_dir: str | Path | None = None, *, required: bool = True) -> Path | None:
    """The folder holding ``benchmark``'s data: in a named folder only it, its ``<benchmark>/`` sub-folder or an
    upstream layout (:mod:`.layouts`); else :func:`default_roots` in order.

    Args:
        benchmark: a benchmark name; an unregistered one is a folder of that name holding any data file.
        data_dir: the ``--data-dir`` folder, or None.
        required: raise when nothing is found (else return None).

    Returns:
        The folder the benchmark's loader reads, or None.

    Raises:
        DataNotFoundError: nothing found and ``required``, or a named folder missing or without the files.
    """
    defn = find(benchmark) or Benchmark(name=benchmark, loader=lambda folder: [])  # unregistered: any data file
    sub = defn.data_folder
    named = named_root(data_dir)
    if named is None:
        looked = [root / sub for root in data_roots()]
        found = next((cand for cand in looked if defn.holds(cand)), None)
        if found is None and required:
            raise DataNotFoundError(
                f"no {benchmark} data found (looked in: {', '.join(map(str, looked))})",
                what=benchmark,
                fix=how_to_get(benchmark),
            )
        return found
    root, label = named
    pull_fix = f", or run `sgieval data pull {benchmark}`" if defn.pull is not None else ""
    if not root.exists():
        raise DataNotFoundError(
            "folder does not exist",
            what=label,
            fix=f"point it at a folder holding {sub}/ (or the {sub} files themselves){pull_fix}",
        )
    explicit = root.resolve()
    want = ", ".join(defn.markers) or "*.jsonl, *.parquet or *.json files"
    if explicit.is_dir():
        if benchmark == "sgi-bench" and looks_sgi_snapshot(explicit):
            return explicit  # hub snapshots: SGI-<Task>/.../<split>-*.parquet
        view = upstream_view(explicit)  # a clone of SciAidanBench or AidanBench (benchmarks/layouts.py)
        if view is not None:
            if benchmark == "sciaidanbench":
                return view.folder
            if required:  # the clone holds no other benchmark: never read its files as one
                raise DataNotFoundError(
                    f"{explicit} is a {view.layout}, which holds no {benchmark} data",
                    what=label,
                    fix=f"point it at a folder holding {sub}/{pull_fix}",
                )
            return None
        if (explicit / sub).is_dir() and not defn.holds(explicit / sub):
            # the user pointed at this benchmark's folder: say what is missing there
            raise DataNotFoundError(
                f"{explicit / sub} holds no {benchmark} data (expected {want}; found: "
                f"{describe_folder(explicit / sub)})",
                what=label,
                fix=f"put the {benchmark} files there{pull_fix}",
            )
        for cand in (explicit, explicit / sub):
            if defn.holds(cand):
                return cand
    if required:
        raise DataNotFoundError(
            f"no {benchmark} data in {explicit} (looked for {want} in it or in {sub}/ below it; "
            f"found: {describe_folder(explicit)})",
            what=label,
            fix=f"point it at a folder holding {sub}/{pull_fix}",
        )
    return None


def describe_folder(folder: Path, limit: int = 8) -> str:
    """What ``folder`` holds, for an error line: up to ``limit`` entry names (folders with ``/``) and how many more,
    noting a partial clone."""
    if not folder.exists():
        return "nothing: it does not exist"
    if not folder.is_dir():
        return "a file, not a folder"
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError as e:
        return f"nothing readable ({e.strerror})"
    if not entries:
        return "nothing (an empty folder)"
    names = [p.name + ("/" if p.is_dir() else "") for p in entries[:limit]]
    more = f" and {len(entries) - limit} more" if len(entries) > limit else ""
    note = ""
    if (folder / ".git").exists() or (folder / "benchmark").is_dir():
        note = (
            " (a clone without results/per_model/model_*.json or benchmark/question_list.py: "
            "a partial or sparse clone?)"
        )
    return ", ".join(names) + more + note


def pull(benchmark: str, dest_root: Path | None = None) -> Path:
    """Download ``benchmark``'s public data with its definition's ``pull``.

    Args:
        benchmark: a registered benchmark name.
        dest_root: where its folder goes (default: the user cache).

    Returns:
        The folder ``<dest_root>/<its data folder>``.

    Raises:
        OfflineError: no public download, or (within a few seconds) the source is unreachable.
    """
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
