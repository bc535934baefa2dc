"""A SIGKILL in the middle of a record write loses only that record.

Planted bug: the run store stops repairing a torn last line on resume, so the next record is glued to the torn
bytes and lost as well.  A child process appends one whole record, starts writing a second, and is killed with
SIGKILL half-way through the line; the resumed store reads the whole record, drops the torn one, and the record
appended after the resume is read back intact."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

from sgieval.core import Response, RunStore

CHILD = textwrap.dedent("""
    import sys, time
    from sgieval.core import Response, RunStore
    store = RunStore(sys.argv[1])
    store.append("responses", [Response(item_id="q/1", model="m", text="first, whole")])
    line = Response(item_id="q/2", model="m", text="second " + "x" * 5000).model_dump_json() + "\\n"
    with open(store.path("responses"), "a", encoding="utf-8") as f:  # the write the kill interrupts
        f.write(line[: len(line) // 2])
        f.flush()
    print("torn", flush=True)
    time.sleep(120)
""")


def test_sigkill_mid_record_then_resume_keeps_every_whole_record(tmp_path):
    root = tmp_path / "run"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "torn"
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    raw = (root / "responses.jsonl").read_bytes()
    assert not raw.endswith(b"\n") and raw.count(b"\n") == 1  # one whole line + a torn half line

    store = RunStore(root)  # resume
    assert [(r.item_id, r.text) for r in store.read("responses")] == [("q/1", "first, whole")]
    store.append("responses", [Response(item_id="q/3", model="m", text="after resume")])
    assert [(r.item_id, r.text) for r in RunStore(root).read("responses")] == [
        ("q/1", "first, whole"),
        ("q/3", "after resume"),
    ]
    lines = (root / "responses.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["item_id"] for x in lines] == ["q/1", "q/3"]  # no torn bytes left in the file


def test_torn_journal_line_is_repaired_too(tmp_path):
    """Variant: the ledger journal (plain dict lines) torn by a kill."""
    store = RunStore(tmp_path / "run")
    store.append_rows("ledger", [{"model": "m", "tokens": 1}])
    with store.path("ledger").open("a", encoding="utf-8") as f:
        f.write('{"model": "m", "tok')
    store = RunStore(tmp_path / "run")
    store.append_rows("ledger", [{"model": "m", "tokens": 3}])
    assert [r["tokens"] for r in store.read_rows("ledger")] == [1, 3]
