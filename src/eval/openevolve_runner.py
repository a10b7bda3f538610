"""kevolve's runner for OpenEvolve evaluators (Python modules defining
evaluate(program_path), and evaluate_stage1/2/3 for cascades).

kevolve embeds this file in its binary and writes it into the run's work
folder; it needs only the Python standard library. Modes:

  runner.py --evaluator EVAL.py PROGRAM [--stage N]
      One evaluation in this (fresh) interpreter. Prints the evaluator's own
      output, then one line of kevolve's protocol:
      {"metrics": {...}, "artifacts": {...}} (an exception becomes
      {"error": ..., "artifacts": {"traceback": ...}}).
  runner.py --probe EVAL.py
      Imports EVAL.py once and prints what it defines:
      {"python": ..., "evaluate": true, "stages": [1, 2], "openevolve": ...}.
  runner.py --serve SOCKET --evaluator EVAL.py --workers N --log FILE
      A pool of N warm interpreters, each importing EVAL.py once, behind a
      Unix socket (evaluator.python_pool).
  runner.py --connect SOCKET PROGRAM [--stage N]
      One evaluation by the pool: prints what --evaluator would print. When
      this client is killed (kevolve's timeout), the worker serving it is
      killed with its process group and replaced. `kevolve pyeval-client
      SOCKET PROGRAM [--stage N]` is the same client in C (no interpreter
      to start); the pool answers both with two lines: {"stdout", "stderr"
      [, "crash"]}, then the result.

Stage N runs evaluate_stageN; without --stage (or with stage 1 when the
module has no evaluate_stage1) it runs evaluate. As in OpenEvolve, an
exception in stage 2 or 3 keeps the earlier stages' results and records
stageN_passed = 0 with the traceback as an artifact; an exception in
evaluate or stage 1 fails the evaluation.

When the openevolve package cannot be imported, a small stand-in for
openevolve.evaluation_result (EvaluationResult with metrics and artifacts)
is installed so that evaluators importing it work unchanged.
"""

import base64
import importlib.util
import io
import json
import os
import sys
import traceback

MODULE_NAME = "evaluation_module"  # the name OpenEvolve loads evaluators under


# ---- openevolve.evaluation_result, when OpenEvolve is not installed ----------


def _install_shim():
    """Makes `from openevolve.evaluation_result import EvaluationResult` work.
    Returns the installed package's folder, or None when the stand-in is used.
    The package is only located, not imported: importing it pulls in its
    controller and client libraries (a second or more), which an evaluator
    that does not import it should not pay for."""
    try:
        spec = importlib.util.find_spec("openevolve")
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        return spec.submodule_search_locations or spec.origin
    import dataclasses
    import types

    @dataclasses.dataclass
    class EvaluationResult:
        """Metrics (name -> number) and artifacts (name -> str or bytes)."""

        metrics: dict
        artifacts: dict = dataclasses.field(default_factory=dict)

        @classmethod
        def from_dict(cls, metrics):
            return cls(metrics=metrics)

        def to_dict(self):
            return self.metrics

        def has_artifacts(self):
            return bool(self.artifacts)

        def get_artifact_keys(self):
            return list(self.artifacts)

        def get_artifact_size(self, key):
            if key not in self.artifacts:
                return 0
            v = self.artifacts[key]
            if isinstance(v, bytes):
                return len(v)
            return len(str(v).encode("utf-8"))

        def get_total_artifact_size(self):
            return sum(self.get_artifact_size(k) for k in self.artifacts)

    package = types.ModuleType("openevolve")
    package.__path__ = []
    package.__doc__ = "kevolve's stand-in: only evaluation_result is provided"
    module = types.ModuleType("openevolve.evaluation_result")
    EvaluationResult.__module__ = module.__name__
    module.EvaluationResult = EvaluationResult
    package.evaluation_result = module
    sys.modules["openevolve"] = package
    sys.modules["openevolve.evaluation_result"] = module
    return None


def _openevolve_version():
    try:
        from importlib.metadata import version

        return version("openevolve")
    except Exception:
        return "installed"


# ---- loading the evaluator -----------------------------------------------------


def load_module(path):
    """Imports the evaluator file as OpenEvolve does: its folder first on
    sys.path, registered as 'evaluation_module'."""
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load %s as a Python module" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    spec.loader.exec_module(module)
    return module


def stages_of(module):
    return [n for n in (1, 2, 3) if callable(getattr(module, "evaluate_stage%d" % n, None))]


# ---- results into kevolve's protocol -------------------------------------------


def _number(v):
    """A metric value JSON can carry: numbers and bools as numbers, NaN and
    infinities kept (kevolve reads them as null), anything else as text."""
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return v
    if v is None or isinstance(v, str):
        return v
    try:  # numpy scalars and the like
        if hasattr(v, "item"):
            return _number(v.item())
        return float(v)
    except Exception:
        return str(v)


def _artifact(v):
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            return "base64:" + base64.b64encode(v).decode("ascii")
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    try:
        json.dumps(v)
        return v
    except (TypeError, ValueError):
        return str(v)


def to_protocol(result):
    """{"metrics": ..., "artifacts": ...} from what evaluate returned: a dict
    of metrics, an EvaluationResult (anything with .metrics and .artifacts),
    or already kevolve's form. Raises TypeError for anything else."""
    if isinstance(result, dict):
        if isinstance(result.get("metrics"), dict) and set(result) <= {"metrics", "artifacts"}:
            metrics, artifacts = result["metrics"], result.get("artifacts") or {}
        else:
            metrics, artifacts = result, {}
    elif hasattr(result, "metrics") and isinstance(getattr(result, "metrics"), dict):
        metrics, artifacts = result.metrics, getattr(result, "artifacts", None) or {}
    else:
        raise TypeError(
            "evaluate returned %s; expected a dict of metrics or an EvaluationResult"
            % type(result).__name__
        )
    return {
        "metrics": {str(k): _number(v) for k, v in metrics.items()},
        "artifacts": {str(k): _artifact(v) for k, v in dict(artifacts).items()},
    }


def evaluate(module, program, stage):
    """Runs one stage (0: plain evaluate) of MODULE on PROGRAM and returns
    kevolve's protocol object; never raises."""
    if stage and callable(getattr(module, "evaluate_stage%d" % stage, None)):
        fn, name = getattr(module, "evaluate_stage%d" % stage), "evaluate_stage%d" % stage
    else:
        fn, name = getattr(module, "evaluate", None), "evaluate"
    if not callable(fn):
        return {"error": "the evaluator defines no %s function" % name, "artifacts": {}}
    try:
        return to_protocol(fn(program))
    except BaseException as e:  # SystemExit too: an evaluator's exit is its failure
        if isinstance(e, KeyboardInterrupt):
            raise
        tb = traceback.format_exc()
        what = "%s: %s" % (type(e).__name__, e) if str(e) else type(e).__name__
        if stage >= 2:
            # OpenEvolve keeps the earlier stages' results and marks this one failed.
            return {
                "metrics": {"stage%d_passed" % stage: 0.0},
                "artifacts": {
                    "stage%d_stderr" % stage: str(e),
                    "stage%d_traceback" % stage: tb,
                    "failure_stage": "stage%d" % stage,
                },
            }
        return {
            "error": "%s raised %s" % (name, what),
            "artifacts": {
                "traceback": tb,
                "error_type": type(e).__name__,
                "failure_stage": "stage1" if stage == 1 else "evaluate",
            },
        }


def dumps(obj):
    return json.dumps(obj, allow_nan=True, default=str)


# ---- modes ---------------------------------------------------------------------


def run_one(evaluator, program, stage):
    _install_shim()
    try:
        module = load_module(evaluator)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        out = {
            "error": "cannot import the evaluator %s: %s: %s" % (evaluator, type(e).__name__, e),
            "artifacts": {"traceback": traceback.format_exc(), "failure_stage": "import"},
        }
    else:
        out = evaluate(module, os.path.abspath(program), stage)
    sys.stdout.flush()
    sys.stderr.flush()
    # The result is the last line, after whatever the evaluator printed.
    os.write(1, ("\n" + dumps(out) + "\n").encode("utf-8"))
    return 0


def probe(evaluator):
    shim = _install_shim()
    module = load_module(evaluator)
    info = {
        "python": sys.executable,
        "version": "%d.%d.%d" % sys.version_info[:3],
        "evaluate": callable(getattr(module, "evaluate", None)),
        "stages": stages_of(module),
        "openevolve": _openevolve_version() if shim else None,
    }
    sys.stdout.flush()
    os.write(1, ("\n" + json.dumps(info) + "\n").encode("utf-8"))
    return 0


def _die_with_parent():
    """SIGKILL when the parent process ends (Linux's PR_SET_PDEATHSIG): a pool
    must not outlive the kevolve that started it, kill -9 included."""
    parent = os.getppid()
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except Exception:
        return
    if os.getppid() != parent:  # it ended before the request took
        os._exit(1)


def _env_for(request):
    """The KEVOLVE_* variables of the client's evaluation."""
    return {k: v for k, v in (request.get("env") or {}).items() if k.startswith("KEVOLVE_")}


def worker(evaluator, reply_fd):
    """A warm interpreter of the pool: imports the evaluator once, then
    serves requests (one JSON line on fd 0 each) with one JSON line on
    REPLY_FD, capturing what the evaluator prints."""
    _die_with_parent()  # the pool's manager, even while busy
    _install_shim()
    load_error = None
    try:
        module = load_module(evaluator)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        module = None
        load_error = {
            "error": "cannot import the evaluator %s: %s: %s" % (evaluator, type(e).__name__, e),
            "artifacts": {"traceback": traceback.format_exc(), "failure_stage": "import"},
        }
    requests = io.open(0, "r", encoding="utf-8", closefd=False)
    saved = (os.dup(1), os.dup(2))
    while True:
        line = requests.readline()
        if not line:
            return 0
        req = json.loads(line)
        out_file = open(req["capture"] + ".out", "w+b")
        err_file = open(req["capture"] + ".err", "w+b")
        env = _env_for(req)
        old_env = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out_file.fileno(), 1)
        os.dup2(err_file.fileno(), 2)
        try:
            if module is None:
                result = load_error
            else:
                result = evaluate(module, req["program"], int(req.get("stage") or 0))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for k, v in old_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            out_file.close()
            err_file.close()
        os.write(reply_fd, (dumps(result) + "\n").encode("utf-8"))


def serve(sock_path, evaluator, workers, log_path):
    """The pool's manager: accepts clients on SOCK_PATH, hands each request
    to an idle worker, relays the reply; kills and replaces a worker whose
    client went away (kevolve's timeout) or that died."""
    import select
    import socket
    import subprocess

    _die_with_parent()  # kevolve
    log = open(log_path, "ab", buffering=0) if log_path else open(os.devnull, "wb")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(sock_path)
    except FileNotFoundError:
        pass
    listener.bind(sock_path)
    listener.listen(64)
    here = os.path.abspath(__file__)

    class Worker:
        def __init__(self):
            r, w = os.pipe()
            self.proc = subprocess.Popen(
                [sys.executable, here, "--worker", evaluator, "--reply-fd", str(w)],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=log,
                pass_fds=(w,),
                preexec_fn=os.setpgrp,  # its own group: a kill takes its children too
            )
            os.close(w)
            self.replies = os.fdopen(r, "rb")
            self.client = None  # (socket, capture prefix) while busy

        def kill(self):
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
            self.proc.wait()
            self.replies.close()

    pool = [Worker() for _ in range(max(1, workers))]
    queue = []  # (socket, request) waiting for a worker
    counter = 0
    capture_dir = os.path.dirname(os.path.abspath(sock_path))
    os.write(1, b"ready\n")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)

    def reply(conn, result, prefix):
        # Two lines: a header of strings only ({"stdout", "stderr"[, "crash"]},
        # strict JSON any parser reads), then the result as the runner prints
        # it (NaN allowed: kevolve's reader takes it as null).
        head = {"stdout": "", "stderr": ""}
        for key, ext in (("stdout", ".out"), ("stderr", ".err")):
            try:
                with open(prefix + ext, "rb") as f:
                    head[key] = f.read().decode("utf-8", "replace")
                os.unlink(prefix + ext)
            except OSError:
                pass
        if "crash" in result:
            head["crash"] = result["crash"]
            result = {}
        try:
            conn.sendall((json.dumps(head) + "\n" + dumps(result) + "\n").encode("utf-8"))
        except OSError:
            pass
        conn.close()

    while True:
        for w in pool:
            if w.client is None and queue:
                conn, req = queue.pop(0)
                counter += 1
                prefix = os.path.join(capture_dir, "pool-%d-%d" % (os.getpid(), counter))
                req["capture"] = prefix
                try:
                    w.proc.stdin.write((json.dumps(req) + "\n").encode("utf-8"))
                    w.proc.stdin.flush()
                    w.client = (conn, prefix)
                except OSError:
                    queue.insert(0, (conn, req))
        watch = [listener] + [w.replies for w in pool] + [w.client[0] for w in pool if w.client]
        ready, _, _ = select.select(watch, [], [])
        if listener in ready:
            conn, _ = listener.accept()
            data = b""
            conn.settimeout(10)
            try:
                while not data.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                queue.append((conn, json.loads(data.decode("utf-8"))))
            except (OSError, ValueError):
                conn.close()
            conn.settimeout(None)
        for i, w in enumerate(pool):
            if w.replies in ready:
                line = w.replies.readline()
                if line and w.client:
                    conn, prefix = w.client
                    w.client = None
                    reply(conn, json.loads(line.decode("utf-8")), prefix)
                elif not line:  # the worker died
                    code = w.proc.wait()
                    if w.client:
                        conn, prefix = w.client
                        reply(conn, {"crash": "the pool's worker died (status %d)" % code}, prefix)
                    w.kill()
                    pool[i] = Worker()
            elif w.client and w.client[0] in ready:
                # The client hung up before the reply: kevolve killed it (timeout
                # or cancel). The evaluation must not go on.
                conn, prefix = w.client
                conn.close()
                for ext in (".out", ".err"):
                    try:
                        os.unlink(prefix + ext)
                    except OSError:
                        pass
                w.kill()
                pool[i] = Worker()


def connect(sock_path, program, stage):
    import socket

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock_path)
    except OSError as e:
        sys.stderr.write("the warm Python pool is not reachable at %s: %s\n" % (sock_path, e))
        return 2
    env = {k: v for k, v in os.environ.items() if k.startswith("KEVOLVE_")}
    req = {"program": os.path.abspath(program), "stage": stage, "env": env}
    s.sendall((json.dumps(req) + "\n").encode("utf-8"))
    data = b""
    while True:
        chunk = s.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    if not data:
        sys.stderr.write("the warm Python pool closed the connection without a reply\n")
        return 2
    head_line, _, result_line = data.decode("utf-8").partition("\n")
    head = json.loads(head_line)
    sys.stdout.write(head.get("stdout", ""))
    sys.stderr.write(head.get("stderr", ""))
    if "crash" in head:
        sys.stderr.write(head["crash"] + "\n")
        return 1
    sys.stdout.write("\n" + result_line.strip() + "\n")
    return 0


def main(argv):
    args = list(argv)
    opts = {}
    rest = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--evaluator", "--stage", "--probe", "--serve", "--connect", "--workers", "--log", "--worker", "--reply-fd"):
            if i + 1 >= len(args):
                sys.stderr.write("runner: %s needs a value\n" % a)
                return 2
            opts[a] = args[i + 1]
            i += 2
        else:
            rest.append(a)
            i += 1
    stage = int(opts.get("--stage", "0") or 0)
    if "--probe" in opts:
        return probe(opts["--probe"])
    if "--worker" in opts:
        return worker(opts["--worker"], int(opts.get("--reply-fd", "3")))
    if "--serve" in opts:
        return serve(opts["--serve"], opts["--evaluator"], int(opts.get("--workers", "1")), opts.get("--log"))
    if len(rest) != 1:
        sys.stderr.write("usage: runner.py --evaluator EVAL.py PROGRAM [--stage N]\n")
        return 2
    if "--connect" in opts:
        return connect(opts["--connect"], rest[0], stage)
    if "--evaluator" not in opts:
        sys.stderr.write("runner: --evaluator EVAL.py is required\n")
        return 2
    return run_one(opts["--evaluator"], rest[0], stage)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
