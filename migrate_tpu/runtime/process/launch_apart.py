"""One run of :func:`migrate_tpu.runtime.process.launch.launch` in a process of its own, so that a caller
can have two at once: ``python -m migrate_tpu.runtime.process.launch_apart SPEC.json``.

A launch works in this process' folder, environment and standard streams, which one process
can only give one run at a time; ``verify`` starts its second run of a pair this way.  The spec
(JSON) names the script, its arguments, the launch's options, the folder, the environment, and
the files for stdout, stderr and the result.  The result, ``{"status": N, "seconds": S}``, is
written (atomically) when the run has ended; no result file means the run was stopped.

Started in a session of its own with a launcher pipe (``MIGRATE_TPU_LAUNCHER_FD``): it ends,
with its run, as soon as its caller is gone, however the caller ended.  Standard library only;
:func:`start` is the caller's half.
"""

import json
import os
import subprocess
import sys
import time
from typing import NamedTuple

#: The nice value a run started apart runs at (see :func:`main`); warm runs inherit it as cold ones do.
SIDE_NICE = 10


class ApartFiles(NamedTuple):
    """Where a run apart writes: its output (``stdout``, ``stderr``), its outcome (``result``) and
    this module's own log (``log``)."""
    stdout: str
    stderr: str
    result: str
    log: str


def start(script, args, launch_options, cwd, env, files):
    """Start a run of ``script`` as :func:`~migrate_tpu.runtime.process.launch.launch` would with
    ``launch_options`` (a dict of its keywords), in folder ``cwd`` with environment ``env`` (all
    of it), writing the :class:`ApartFiles` ``files``.  Returns ``(process, lifeline)``: closing
    the lifeline (or this process ending) ends the run.  The run forks from this process' warm
    servers, where it has them."""
    stdout, stderr, result, log = files
    from migrate_tpu.runtime.process import pod, warm, warm_pool

    env = dict(env)
    if warm.wanted(env) and warm.wanted() and warm.available():
        warm_pool.pool().export(env)
    spec_path = result + ".spec.json"
    with open(spec_path, "w", encoding="utf-8") as handle:
        json.dump({"script": str(script), "args": [str(a) for a in args], "launch": launch_options, "cwd": str(cwd), "env": env,
                   "stdout": str(stdout), "stderr": str(stderr), "result": str(result)}, handle)
    read_end, lifeline = os.pipe()
    own_env = dict(os.environ)
    own_env[pod.WATCH_FD_VARIABLE] = str(read_end)
    try:
        # stdin: nothing (two runs cannot share a terminal's input; verify's runs read none)
        with open(log, "wb") as log_file:
            process = subprocess.Popen([sys.executable, "-m", "migrate_tpu.runtime.process.launch_apart", spec_path], env=own_env, cwd=str(cwd),
                                       stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, pass_fds=(read_end,), start_new_session=True)
    except BaseException:
        os.close(lifeline)
        raise
    finally:
        os.close(read_end)
    return process, lifeline


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.stderr.write("usage: python -m migrate_tpu.runtime.process.launch_apart SPEC.json\n")
        return 2
    with open(argv[0], encoding="utf-8") as handle:
        spec = json.load(handle)
    from migrate_tpu.runtime.process import pod
    from migrate_tpu.runtime.process.launch import launch

    pod.watch_launcher(label="migrate-tpu verify")
    # The run beside another yields the CPU to it: where both want every core (a program whose
    # kernels keep two cores busy), the pair then takes about what one after the other takes,
    # not the 1.5-2.3x that two TensorFlow processes contending for the cores took on the TPU
    # guide (benchmarks/README.md).  A nice value changes no thread count, so no bits.
    os.nice(SIDE_NICE)
    os.environ.clear()
    os.environ.update(spec["env"])
    os.chdir(spec["cwd"])
    with open(spec["stdout"], "wb") as out, open(spec["stderr"], "wb") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
    started = time.monotonic()
    status = launch(spec["script"], spec["args"], **spec["launch"])
    result = {"status": status, "seconds": time.monotonic() - started}
    temporary = spec["result"] + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    os.replace(temporary, spec["result"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
