"""The E2B backend's run flow against a stand-in for the E2B service (no key, no network): files uploaded, setup
scripts then main.py, a failing setup script stopping the run, output capped, output files read back, the microVM
killed."""

from __future__ import annotations

import e2b
import e2b_code_interpreter
import pytest

from sgieval.core import InputError
from sgieval.tools.sandbox import E2BSandbox, TRUNCATION_MARKER


class FakeVM:
    """Runs nothing: ``python <script>`` answers from ``outcomes`` (script -> (stdout, stderr, exit code))."""

    made: list["FakeVM"] = []

    def __init__(self, outcomes, **create):
        self.create, self.outcomes, self.written, self.ran, self.killed = create, outcomes, {}, [], False
        self.files = self
        self.commands = self

    def write(self, path, data):
        self.written[path] = data

    def read(self, path):
        if path not in self.written:
            raise FileNotFoundError(path)
        return self.written[path].decode()

    def run(self, cmd, timeout):
        script = cmd.removeprefix("python ")
        self.ran.append((script, timeout))
        out, err, rc = self.outcomes[script]
        if rc:
            raise e2b.CommandExitException(stderr=err, stdout=out, exit_code=rc, error=None)
        return e2b.CommandResult(stderr=err, stdout=out, exit_code=0, error=None)

    def kill(self):
        self.killed = True


@pytest.fixture
def vm(monkeypatch):
    outcomes: dict = {}

    def create(**kw):
        FakeVM.made.append(FakeVM(outcomes, **kw))
        return FakeVM.made[-1]

    monkeypatch.setattr(e2b_code_interpreter.Sandbox, "create", staticmethod(create))
    FakeVM.made.clear()
    return outcomes


def test_setup_then_main_with_files_and_outputs(vm):
    vm.update({"setup.py": ("", "", 0), "main.py": ("x" * 2000, "warn\x1b[0m", 0)})
    sbx = E2BSandbox(api_key="k", output_bytes=1024)
    res = sbx.run(
        "print(1)",
        files={"setup.py": "pass", "data/in.csv": b"a,b"},
        setup_scripts=["setup.py"],
        timeout_s=7,
        output_files=["data/in.csv", "missing.txt"],
    )
    (made,) = FakeVM.made
    assert made.written == {"data/in.csv": b"a,b", "main.py": b"print(1)", "setup.py": b"pass"}
    assert made.ran == [("setup.py", 7.0), ("main.py", 7.0)] and made.killed
    assert made.create["timeout"] == int(7 * 3) + 30  # two programs: (2 + 1 setup script) x the timeout + 30 s
    assert (res.exit_code, res.backend, res.setup_failed, res.killed_reason) == (0, "e2b", False, None)
    assert res.stdout == "x" * 1024 + TRUNCATION_MARKER.format(limit=1024) and res.stderr == "warn\\x1b[0m"
    assert res.files == {"data/in.csv": "a,b"}


def test_failing_setup_script_stops_the_run_and_main_failure_keeps_outputs(vm):
    vm.update({"setup.py": ("", "boom", 3), "main.py": ("ran", "", 0)})
    res = E2BSandbox(api_key="k").run("print(1)", files={"setup.py": "x"}, setup_scripts=["setup.py"])
    assert (res.setup_failed, res.exit_code, res.stderr) == (True, 3, "boom")
    assert FakeVM.made[-1].ran == [("setup.py", 60.0)]
    vm.update({"main.py": ("", "Traceback", 1)})
    res = E2BSandbox(api_key="k").run("raise SystemExit(1)", files={"o.txt": "kept"}, output_files=["o.txt"])
    assert (res.exit_code, res.setup_failed, res.files) == (1, False, {"o.txt": "kept"})
    with pytest.raises(InputError, match="'main.py' is reserved"):
        E2BSandbox(api_key="k").run("pass", files={"main.py": "x"})
