"""What runs inside the sandbox: the bubblewrap driver (``/.sgieval/driver.py <spec JSON>``) and the sitecustomize that
reports a program's peak memory to the host.

The driver copies the staged inputs into the work dir, runs each program in a forked child as ``python -X utf8
<script>`` would, kills the rest of the pid namespace after each, stops after a failing setup script, and reports on
the status pipe ``start <i>``, ``done <i> <returncode> <wall_s>``, ``nostart <i> <reason>``, ``files <json>``.
"""

DRIVER = r'''
import atexit, json, os, resource, signal, sys, threading, time


def _kill_others():
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            return
        time.sleep(0.002)


def _copy_in(src, dst):
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        here = dst if rel == "." else os.path.join(dst, rel)
        for d in dirs:
            os.makedirs(os.path.join(here, d), exist_ok=True)
        for f in files:
            with open(os.path.join(root, f), "rb") as a, open(os.path.join(here, f), "wb") as b:
                b.write(a.read())


def _read_output(name, limit):
    real = os.path.realpath(name)
    if not real.startswith(os.getcwd().rstrip("/") + "/"):
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        import stat
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, n = [], 0
        while n <= limit:
            b = os.read(fd, min(65536, limit + 1 - n))
            if not b:
                break
            chunks.append(b)
            n += len(b)
        import base64
        return base64.b64encode(b"".join(chunks)).decode("ascii")
    finally:
        os.close(fd)


def _peak_hook(fd):
    def report():
        try:
            kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                     resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
            os.write(fd, b"%d\n" % kb)
            os.close(fd)
        except Exception:
            pass

    atexit.register(report)


def _child(p, st):
    # What `python -X utf8 <script>` does, in the forked child of this interpreter.
    os.dup2(p["out"], 1)
    os.dup2(p["err"], 2)
    keep = p["peak"]
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass
    os.set_inheritable(keep, False)
    _peak_hook(keep)
    script = os.path.join(os.getcwd(), p["script"])
    sys.argv[:] = [p["script"]]
    sys.path[0] = os.path.dirname(script)
    code = 0
    try:
        with open(script, "rb") as fh:
            source = fh.read()
        main = type(sys)("__main__")
        main.__file__, main.__cached__, main.__builtins__ = script, None, __builtins__
        sys.modules["__main__"] = main
        exec(compile(source, script, "exec", dont_inherit=True), main.__dict__)
    except SystemExit as e:
        code = e.code
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        try:
            sys.excepthook(type(e), e.with_traceback(tb), tb)
        except BaseException:
            pass
        code = 1
    try:
        threading._shutdown()
    except BaseException:
        pass
    if code is None:
        code = 0
    elif not isinstance(code, int):
        try:
            print(code, file=sys.stderr)
        except BaseException:
            pass
        code = 1
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    os._exit(code & 0xFF)


def main():
    spec = json.loads(sys.argv[1])
    st = spec["status"]
    os.set_inheritable(st, False)

    def say(line):
        os.write(st, (line + "\n").encode("utf-8", "replace"))

    try:
        _copy_in(spec["input"], os.getcwd())
    except OSError as e:
        say("nostart 0 cannot copy the input files into the work dir: %s" % e)
        return 0
    for i, p in enumerate(spec["programs"]):
        say("start %d" % i)
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(st)
                _child(p, st)
            finally:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        wall = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        _kill_others()
        for fd in (p["out"], p["err"], p["peak"]):
            if fd > 2:
                try:
                    os.close(fd)
                except OSError:
                    pass
        say("done %d %d %.6f" % (i, rc, wall))
        if rc != 0 and i < len(spec["programs"]) - 1:  # a failed setup script: main.py does not run
            return 0
    files = {}
    for name in spec["outputs"]:
        got = _read_output(name, spec["limit"])
        if got is not None:
            files[name] = got
    say("files " + json.dumps(files))
    return 0


os._exit(main())
'''

SITECUSTOMIZE = """\
# sgieval sandbox: report the program's peak RSS (KiB) to the host at exit.
import atexit as _a, os as _o, resource as _r, stat as _s
_fd = _o.environ.pop("SGIEVAL_PEAK_FD", "")
if _fd.isdigit():
    _fd = int(_fd)
    try:
        _o.set_inheritable(_fd, False)
        _ino = _o.fstat(_fd).st_ino
    except OSError:
        _ino = None

    def _sgieval_peak(fd=_fd, ino=_ino):
        try:
            st = _o.fstat(fd)
            if ino is None or st.st_ino != ino or not _s.S_ISFIFO(st.st_mode):
                return
            kb = max(_r.getrusage(_r.RUSAGE_SELF).ru_maxrss, _r.getrusage(_r.RUSAGE_CHILDREN).ru_maxrss)
            _o.write(fd, b"%d\\n" % kb)
            _o.close(fd)
        except Exception:
            pass

    if _ino is not None:
        _a.register(_sgieval_peak)
"""
"""``sitecustomize`` put on PYTHONPATH of sandboxed programs: peak memory is read from the program itself, because
``wait4`` on bwrap would report the host process's own high-water mark (inherited through vfork/exec)."""
