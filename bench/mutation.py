"""Mutation testing of the modules that decide a number, with mutmut.

    python -m sgieval.bench.mutation                     # every module below, its own test subset
    python -m sgieval.bench.mutation metric_pool/aidanbench.py --survivors

The repository's files (``git ls-files``, as they are on disk) are staged into a temporary folder as a package
named ``sgieval`` (mutmut copies the source into ``mutants/`` and imports it from there, so the checkout itself is
never mutated).  mutmut maps each test to the functions it runs, so every mutant runs only the selected tests that
reach it.  Prints, per module: mutants, killed (timeouts count as killed, as mutmut counts them), survived,
no tests, and the mutation score = killed / (killed + survived), the goal being >= 85%.
``--survivors`` prints the diff of every surviving mutant.  About 15 to 25 minutes on 2 cores for all modules.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MODULES: dict[str, list[str]] = {
    "metric_pool/aidanbench.py": [
        "tests/metric_pool/test_planted_bugs_metrics.py",
        "tests/metric_pool/test_aidanbench_protocol.py",
        "tests/metric_pool/test_aidanbench_counts.py",
        "tests/metric_pool/test_aidanbench_flags.py",
        "tests/metric_pool/test_aidanbench_exact.py",
    ],
    "metric_pool/stats.py": [
        "tests/metric_pool/test_aggregate_paired.py",
        "tests/metric_pool/test_aggregate_exact.py",
        "tests/metric_pool/test_planted_bugs_metrics.py",
    ],
    "metric_pool/sfbench.py": ["tests/metric_pool/test_sfbench.py", "tests/metric_pool/test_sfbench_exact.py"],
    "metric_pool/sgi/reasoning.py": [
        "tests/metric_pool/test_sgi_reasoning.py",
        "tests/metric_pool/test_sgi_reasoning_exact.py",
        "tests/metric_pool/test_planted_bugs_metrics.py",
    ],
    "metric_pool/sgi/wet_experiment.py": [
        "tests/metric_pool/test_sgi_wet.py",
        "tests/metric_pool/test_sgi_wet_exact.py",
    ],
    "metric_pool/sgi/sgi_score.py": [
        "tests/metric_pool/test_sgi_score.py",
        "tests/metric_pool/test_sgi_score_exact.py",
    ],
    "core/store.py": [
        "tests/core/test_store.py",
        "tests/core/test_store_config.py",
        "tests/core/test_store_torn_write.py",
        "tests/core/test_store_exact.py",
    ],
    "models/cache.py": [
        "tests/models/test_cache.py",
        "tests/models/test_cache_key_fields.py",
        "tests/models/test_cache_exact.py",
    ],
    "reports/build.py": ["tests/reports/test_ranking_exact.py", "tests/reports/test_planted_bugs_report.py"],
    "tools/sandbox/bwrap.py": ["tests/tools/test_sandbox_argv.py"],
    "tools/sandbox/common.py": ["tests/tools/test_sandbox_argv.py"],
}
"""Module (path in the repository) -> the tests that guard it (paths that do not exist are left out)."""

FUNCTIONS: dict[str, list[str]] = {
    "reports/build.py": [
        "order_stats",
        "ci_text",
        "has_ci",
        "ci_overlap",
        "item_values",
        "pair_entry",
        "fmt",
        "fmt2",
        "fmt_p",
        "fmt_total",
        "ModelStat.stats",
    ],
    "tools/sandbox/bwrap.py": [
        "_bind_args",
        "_system_binds",
        "_bwrap_python_paths",
        "BubblewrapSandbox._static_args",
        "BubblewrapSandbox.argv",
    ],
    "tools/sandbox/common.py": ["SandboxLimits.prlimit"],
}
"""Modules of which only some functions decide a number: the report's ranking (the rest of reports/build.py
writes prose) and the sandbox's command line (the rest of tools/sandbox/bwrap.py runs and watches processes).
Only these functions' mutants are run and counted; ``Class.method`` names a method."""


def mutant_globs(module: str) -> list[str]:
    """mutmut name patterns of ``module``'s mutants that are run and counted (all of them, or those of
    :data:`FUNCTIONS`)."""
    dotted = "sgieval." + module[:-3].replace("/", ".")
    names = FUNCTIONS.get(module)
    if not names:
        return [f"{dotted}.*"]
    return [
        f"{dotted}." + ("x\u01c1" + n.replace(".", "\u01c1") if "." in n else f"x_{n}") + "__mutmut_*" for n in names
    ]


STATUS = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    36: "killed",
    -24: "killed",
    24: "killed",
    152: "killed",
    255: "killed",
    None: "not checked",
}
"""mutmut's exit codes (mutmut.stats.status_by_exit_code), with its timeouts counted as kills."""


def stage(dest: Path) -> Path:
    """Copy the tracked files of the checkout (as on disk) to ``dest/sgieval``; return ``dest``."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    pkg = dest / "sgieval"
    for rel in files.decode().split("\0"):
        if not rel or not (REPO / rel).is_file():
            continue
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, pkg / rel)
    return dest


def write_config(root: Path, modules: list[str], tests: list[str]) -> None:
    """mutmut's ``[tool.mutmut]`` section for ``modules`` guarded by ``tests`` (paths in the repository)."""
    lines = [
        "[tool.mutmut]",
        'source_paths = ["sgieval/"]',
        "only_mutate = " + json.dumps([f"sgieval/{m}" for m in modules]),
        "pytest_add_cli_args_test_selection = " + json.dumps([f"sgieval/{t}" for t in tests]),
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "--import-mode=importlib", "-o", "asyncio_mode=auto", '
        '"-o", "asyncio_default_fixture_loop_scope=function", "-m", "not slow"]',
    ]
    (root / "pyproject.toml").write_text("\n".join(lines) + "\n")


def tally(root: Path, module: str) -> Counter:
    """Status counts of ``module``'s mutants from mutmut's ``.meta`` file."""
    meta = root / "mutants" / "sgieval" / f"{module}.meta"
    if not meta.is_file():
        return Counter()
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    pats = mutant_globs(module)
    return Counter(
        STATUS.get(c, "suspicious") for k, c in codes.items() if any(fnmatch.fnmatchcase(k, p) for p in pats)
    )


def survivors(root: Path, module: str) -> list[str]:
    """Names of ``module``'s surviving mutants (for ``mutmut show``)."""
    meta = root / "mutants" / "sgieval" / f"{module}.meta"
    if not meta.is_file():
        return []
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    pats = mutant_globs(module)
    return [k for k, c in codes.items() if STATUS.get(c) == "survived" and any(fnmatch.fnmatchcase(k, p) for p in pats)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", help=f"modules to mutate (default: {', '.join(MODULES)})")
    ap.add_argument("--survivors", action="store_true", help="print the diff of every surviving mutant")
    ap.add_argument("--keep", action="store_true", help="keep the staging folder (its path is printed)")
    args = ap.parse_args(argv)
    modules = args.modules or list(MODULES)
    unknown = [m for m in modules if m not in MODULES]
    if unknown:
        ap.error(f"unknown module(s) {unknown}; choose among {list(MODULES)}")
    tests = sorted({t for m in modules for t in MODULES[m] if (REPO / t).exists()})
    mutmut = shutil.which("mutmut", path=str(Path(sys.executable).parent)) or shutil.which("mutmut")
    if not mutmut:
        print("mutmut is not installed: pip install -e '.[dev]'", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="sgieval-mutation-"))
    try:
        stage(root)
        write_config(root, modules, tests)
        env = {**os.environ, "PYTHONPATH": str(root / "mutants")}
        shared = REPO.parent / "shared" / "data"  # the staged copy does not sit beside ../shared
        if shared.is_dir() and "SGIEVAL_DATA" not in env:
            env["SGIEVAL_DATA"] = str(shared)
        env.pop("CI", None)
        t0 = time.perf_counter()
        selection = [g for m in modules for g in mutant_globs(m)] if any(m in FUNCTIONS for m in modules) else []
        run = subprocess.run(
            [mutmut, "run", *selection], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        wall = time.perf_counter() - t0
        if run.returncode != 0:
            print(run.stdout[-4000:], file=sys.stderr)
            return run.returncode
        print(f"mutmut on {len(modules)} module(s), {len(tests)} test file(s): {wall:.0f} s")
        print(f"{'module':40} {'mutants':>8} {'killed':>7} {'survived':>9} {'no tests':>9} {'score':>7}")
        worst = 100.0
        for m in modules:
            c = tally(root, m)
            decided = c["killed"] + c["survived"]
            score = 100.0 * c["killed"] / decided if decided else float("nan")
            worst = min(worst, score) if decided else worst
            print(f"{m:40} {sum(c.values()):>8} {c['killed']:>7} {c['survived']:>9} {c['no tests']:>9} {score:>6.1f}%")
        if args.survivors:  # only the survivors (``mutmut results`` also lists the timeouts counted as killed)
            for m in modules:
                for name in survivors(root, m):
                    print(
                        subprocess.run([mutmut, "show", name], cwd=root, env=env, capture_output=True, text=True).stdout
                    )
        print(f"lowest module score {worst:.1f}% (goal >= 85%)")
        return 0
    finally:
        if args.keep:
            print(f"staging folder kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
