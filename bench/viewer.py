"""Viewer size and time to first paint on a large run.

    python -m sgieval.bench.viewer [--items 10000] [--models 2]

Builds a synthetic run (``--items`` items x ``--models`` target models, three
metrics per response, prompts ~600 characters, answers ~1,200, rationales
~150, one judge-panel metric with two judges), writes its viewer with
``reports.viewer.write_viewer`` and opens it in headless Chromium
(``/usr/bin/chromium`` through Playwright, as the tests do).  Prints:

- sizes of index.html, data.js (what the first paint needs) and text.js (loaded after it);
- write time of the viewer;
- first contentful paint (FCP, the browser's ``paint`` timing), the viewer's
  ``sgv-ready`` mark (overview rendered from data.js) and ``sgv-texts`` (text.js
  parsed: search and the item view ready), all in ms from navigation start;
- the item table: time to render page 1 and to go to page 2; a search over
  every prompt and answer; the ratio of each to the same step on a 100-item run.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from sgieval.core import GENERIC, Item, Response, Score, as_evidence
from sgieval.reports.viewer import write_viewer

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WORDS = (
    "catalyst ligand entropy photon lattice enzyme isotope polymer spectra kinetics solvent orbital "
    "phase boundary diffusion protein neuron plasma quantum crystal"
).split()


def _text(rng: random.Random, n_chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_chars:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def synthetic_run(run_dir: Path, n_items: int, n_models: int, seed: int = 0) -> Path:
    """Write the viewer of a synthetic run into ``run_dir``; returns index.html."""
    rng = random.Random(seed)
    disciplines = ["chemistry", "physics", "biology", "materials", "earth"]
    items = [
        Item(
            id=f"bench/{k}",
            benchmark="bench",
            task=GENERIC,
            discipline=disciplines[k % 5],
            direction=f"dir-{k % 17}",
            prompt=_text(rng, 600),
            reference=_text(rng, 80),
        )
        for k in range(n_items)
    ]
    models = [f"openai:model-{m}" for m in range(n_models)]
    responses, scores = [], []
    for it in items:
        for m in models:
            responses.append(
                Response(
                    item_id=it.id, model=m, text=_text(rng, 1200), latency_s=1.5, tokens={"input": 200, "output": 300}
                )
            )
            scores.append(
                Score(
                    item_id=it.id,
                    model=m,
                    metric="exact_match",
                    value=float(rng.random() < 0.5),
                    rationale="exact match of the parsed answer",
                )
            )
            scores.append(
                Score(
                    item_id=it.id,
                    model=m,
                    metric="rigor",
                    value=rng.uniform(0, 100),
                    judge="j1,j2",
                    rationale=_text(rng, 150),
                    details={"per_judge": {"j1": {"c": rng.randint(0, 10)}, "j2": {"c": rng.randint(0, 10)}}},
                    evidence=[as_evidence({"kind": "judge_reply", "judge": "j1", "raw": ['{"scores": []}']})],
                )
            )
            bad = rng.random() < 0.02
            scores.append(
                Score(
                    item_id=it.id,
                    model=m,
                    metric="coherence",
                    value=None if bad else rng.uniform(0, 1),
                    status="judge_error" if bad else "ok",
                    error="unparsable reply" if bad else None,
                )
            )
    specs = [
        {"name": "exact_match", "scale": "0-1", "hib": True, "kind": "objective"},
        {"name": "rigor", "scale": "0-100", "hib": True, "kind": "rubric"},
        {"name": "coherence", "scale": "0-1", "hib": True, "kind": "judge"},
    ]
    return write_viewer(
        run_dir, items, responses, scores, specs=specs, config={"run_id": f"bench-{n_items}", "request": "synthetic"}
    )


def measure(index: Path) -> dict[str, float]:
    """Browser timings (ms) of the viewer at ``index``."""
    from playwright.sync_api import sync_playwright

    out: dict[str, float] = {}
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=ARGS, headless=True)
        page = ctx.new_page()
        page.goto(index.as_uri())
        page.wait_for_selector("#app[data-texts='loaded']", timeout=300_000)
        paint = page.evaluate(
            "() => Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]))"
        )
        marks = page.evaluate(
            "() => Object.fromEntries(performance.getEntriesByType('mark').map(e => [e.name, e.startTime]))"
        )
        out["first_contentful_paint_ms"] = paint.get("first-contentful-paint", float("nan"))
        out["overview_ready_ms"] = marks.get("sgv-ready", float("nan"))
        out["texts_loaded_ms"] = marks.get("sgv-texts", float("nan"))

        def timed(action, done_js: str) -> float:
            t0 = time.perf_counter()
            action()
            page.wait_for_function(done_js, timeout=300_000)
            return 1000 * (time.perf_counter() - t0)

        out["table_page_1_ms"] = timed(
            lambda: page.evaluate("location.hash = '#/items'"), "document.querySelector('#pager-info') !== null"
        )
        out["table_page_2_ms"] = timed(
            lambda: page.click("#next"), "document.querySelector('#pager-info').textContent.startsWith('page 2')"
        )
        out["search_ms"] = timed(
            lambda: page.evaluate("location.hash = '#/items?q=zzz-no-match'"),
            "document.querySelector('#pager-info').textContent.endsWith(' 0 rows')",
        )
        ctx.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--models", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for n in (100, a.items):
            t0 = time.perf_counter()
            index = synthetic_run(Path(tmp) / f"run-{n}", n, a.models)
            write_s = time.perf_counter() - t0
            sizes = {f.name: f.stat().st_size for f in index.parent.iterdir() if f.is_file()}
            results[n] = {"write_s": write_s, **{f"{k}_bytes": v for k, v in sizes.items()}, **measure(index)}
        small, big = results[100], results[a.items]
        print(
            f"viewer of {a.items} items x {a.models} models ({a.items * a.models} rows, {3 * a.items * a.models} scores)"
        )
        for k, v in big.items():
            unit = "MB" if k.endswith("_bytes") else ""
            shown = f"{v / 1e6:.2f} MB" if unit else (f"{v:.2f} s" if k.endswith("_s") else f"{v:.0f} ms")
            ratio = v / small[k] if small.get(k) else float("nan")
            print(f"  {k:28s} {shown:>12s}   x{ratio:6.1f} vs 100 items")


if __name__ == "__main__":
    main()
