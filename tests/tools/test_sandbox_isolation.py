"""Sandbox isolation across processes, a size-capped tmpfs work dir,
escaped control characters, an interpreter living under /tmp, and "cannot start" as
an infra_error (never a failed test)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sgieval.core import Item, Response, SandboxUnavailableError, escape_control_chars
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.sgi import dry_experiment as de
from sgieval.tests.tools.sandboxes import checked_run, needs_bwrap
from sgieval.tools.sandbox import BubblewrapSandbox, processes_of_uid

pytestmark = needs_bwrap

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "sgi"
SGIEVAL = [str(Path(sys.executable).with_name("sgieval"))]

# the complete functions of the fixture items, each unit test sleeping 0.4 s so that two runs overlap
SLOW_RIGHT = '''<answer>
def arrhenius_rate(pre_exponential, activation_energy, temperature):
    __import__("time").sleep(0.4)
    return pre_exponential * math.exp(-activation_energy / (GAS_CONSTANT * temperature))


def half_life(rate_constant):
    return math.log(2) / rate_constant
</answer>'''
# the oscillator answer forgets the damping term: output differs on every test with damping > 0
SLOW_WRONG = '''<answer>
def simulate_oscillator(x0, v0, mass, stiffness, damping, dt, n_steps):
    __import__("time").sleep(0.4)
    x, v = x0, v0
    for _ in range(n_steps):
        v += (-stiffness * x) / mass * dt
        x += v * dt
    return x, v
</answer>'''


def _data(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "data" / "sgi-bench"
    data.mkdir(parents=True)
    shutil.copy(FIX / "dry_experiment.jsonl", data / "dry_experiment.jsonl")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"item_id": f"sgi-bench/SGI_DryExperiment_{i}", "model": "slow", "text": t}) + "\n"
            for i, t in (("9001", SLOW_RIGHT), ("9002", SLOW_WRONG))
        )
    )
    return tmp_path / "data", answers


def _ask(data: Path, answers: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        SGIEVAL
        + [
            "ask",
            "",
            "-b",
            "sgi-bench",
            "--data-dir",
            str(data),
            "-m",
            f"replay:{answers}",
            "--tools",
            "",
            "--yes",
            "--no-cache",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _scores(out: Path) -> dict[tuple[str, str], tuple[float | None, str]]:
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    got = {}
    for line in (run / "scores.jsonl").read_text().splitlines():
        s = json.loads(line)
        if s["metric"] != "dry_average_execution_time":  # wall time: not reproducible
            got[(s["item_id"], s["metric"])] = (s["value"], s["status"])
    return got


@pytest.mark.slow
def test_two_sgieval_processes_score_like_a_lone_run(tmp_path):
    data, answers = _data(tmp_path)
    lone = _ask(data, answers, tmp_path / "lone")
    assert lone.wait(timeout=300) == 0, lone.stderr.read()
    expected = _scores(tmp_path / "lone")
    # hand-computed: 9001 passes 5/5 (PassAll@1,3,5 = 1, SER = 1); 9002 prints undamped values: the 4 tests with
    # damping > 0 differ (no judge: fail), test 1 (damping 0) matches -> p = 1: PassAll@1 = 1, @3 = @5 = 0; SER = 1
    assert expected == {
        ("sgi-bench/SGI_DryExperiment_9001", "dry_passall_1"): (1.0, "ok"),
        ("sgi-bench/SGI_DryExperiment_9001", "dry_passall_3"): (1.0, "ok"),
        ("sgi-bench/SGI_DryExperiment_9001", "dry_passall_5"): (1.0, "ok"),
        ("sgi-bench/SGI_DryExperiment_9001", "dry_smooth_execution_rate"): (1.0, "ok"),
        ("sgi-bench/SGI_DryExperiment_9002", "dry_passall_1"): (1.0, "ok"),
        ("sgi-bench/SGI_DryExperiment_9002", "dry_passall_3"): (0.0, "ok"),
        ("sgi-bench/SGI_DryExperiment_9002", "dry_passall_5"): (0.0, "ok"),
        ("sgi-bench/SGI_DryExperiment_9002", "dry_smooth_execution_rate"): (1.0, "ok"),
    }
    a, b = _ask(data, answers, tmp_path / "a"), _ask(data, answers, tmp_path / "b")
    for p in (a, b):
        assert p.wait(timeout=300) == 0, p.stderr.read()
    assert _scores(tmp_path / "a") == expected
    assert _scores(tmp_path / "b") == expected


_WORKER = textwrap.dedent("""
    import sys, time
    from sgieval.tools.sandbox import BubblewrapSandbox
    sbx = BubblewrapSandbox(uids=[int(u) for u in sys.argv[1].split(",")], timeout_s=20)
    codes = []
    for i in range(int(sys.argv[2])):
        r = sbx.run("import time\\ntime.sleep(0.3)\\nprint('alive')\\n")
        codes.append((r.exit_code, r.stdout))
    print(codes.count((0, "alive\\n")))
""")


def test_two_processes_sharing_a_uid_pool_never_kill_each_other(tmp_path):
    # both processes draw from the same two uids; each run sleeps 0.3 s; a run killed by the other
    # process's cleanup would exit -9 without printing "alive"
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), "3901400,3901401", "6"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [o[0].strip() for o in outs] == ["6", "6"], [o[1][-500:] for o in outs]
    assert processes_of_uid(3901400) == processes_of_uid(3901401) == []


def test_work_dir_is_a_size_capped_tmpfs_not_host_memory():
    sbx = BubblewrapSandbox(uids=[3901410], work_mb=8, timeout_s=20)
    res = checked_run(
        sbx,
        """
        import os
        st = os.statvfs(".")
        print(st.f_blocks * st.f_frsize // 2**20)
        print([line.split(" - ")[1].split()[0] for line in open("/proc/self/mountinfo")
               if line.split()[4] == "/sandbox"])
        try:
            with open("big.bin", "wb") as f:
                for _ in range(16):
                    f.write(b"x" * 2**20)
            print("wrote 16 MiB")
        except OSError as e:
            print("refused", e.errno == 28)
    """,
    )
    # an 8 MiB tmpfs of its own (not a bind of a host folder such as /dev/shm), and a 16 MiB file does not fit
    assert res.stdout.splitlines() == ["8", "['tmpfs']", "refused True"], res.stderr


def test_setup_products_reach_main_and_output_files_come_back():
    sbx = BubblewrapSandbox(uids=[3901411], timeout_s=20)
    res = checked_run(
        sbx,
        "print(open('data/x.txt').read())\nopen('o.txt', 'w').write('7')\n",
        files={"setup.py": "import os\nos.makedirs('data')\nopen('data/x.txt', 'w').write('six')\n"},
        setup_scripts=["setup.py"],
        output_files=["o.txt", "data/x.txt", "/etc/passwd".lstrip("/")],
    )
    assert (res.exit_code, res.stdout, res.files) == (0, "six\n", {"o.txt": "7", "data/x.txt": "six"})


def test_nul_and_terminal_escapes_are_escaped():
    assert escape_control_chars("a\x00b\x1b[2Jc\r\nd\te\rf\x9b") == "a\\x00b\\x1b[2Jc\r\nd\te\\x0df\\x9b"
    sbx = BubblewrapSandbox(uids=[3901412], timeout_s=20)
    res = checked_run(
        sbx,
        "import sys\nsys.stdout.write('ok\\x00\\x1b]0;pwned\\x07\\n')\nsys.stderr.write('\\x1b[31mred')\n",
        output_files=["f.txt"],
        files={"f.txt": "x\x1b[1my"},
    )
    assert res.stdout == "ok\\x00\\x1b]0;pwned\\x07\n"
    assert res.stderr == "\\x1b[31mred"


def test_interpreter_under_tmp_is_visible_inside(tmp_path):
    # a virtual environment under /tmp (tmp_path) stays visible inside, above the sandbox's own fresh /tmp (else exit 127)
    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    sbx = BubblewrapSandbox(uids=[3901413], python=str(venv / "bin" / "python"), timeout_s=20)
    res = checked_run(sbx, "import sys\nprint(sys.prefix)\n")
    assert (res.exit_code, res.stdout) == (0, f"{venv}\n"), res.stderr
    sbx.check()


async def test_interpreter_that_cannot_start_is_infra_error_not_a_failed_test(tmp_path):
    sbx = BubblewrapSandbox(uids=[3901414], python=str(tmp_path / "nope" / "python"), timeout_s=20)
    with pytest.raises(SandboxUnavailableError, match="could not start the program: prlimit: failed to execute"):
        sbx.run("print(1)")
    with pytest.raises(SandboxUnavailableError, match="cannot run a trivial program"):
        sbx.check()
    item = Item(
        id="sgi-bench/x",
        benchmark="sgi-bench",
        task="dry_experiment",
        prompt="p",
        reference={
            "data_code": "",
            "main_code": "",
            "incomplete_main_code": "def f():\n    return 0\n\nprint(f())\n",
            "incomplete_functions": ["f"],
            "unit_tests": [{"data": "", "output": "1"}] * 5,
            "runtime": None,
        },
    )
    scores = await de.DryExperimentMetric().score(
        item, Response(item_id="sgi-bench/x", model="t", text="def f():\n    return 1\n"), ScoringContext(sandbox=sbx)
    )
    assert {s.status for s in scores} == {"infra_error"}
    assert "could not start the program" in scores[0].error
