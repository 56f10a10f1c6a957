"""What the distributed tests share: launching rank scripts with a hard timeout, parsing their lines,
and a one-process backend registered through the public API.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import npusim.distributed as dist
from npusim.distributed.run import find_mpiexec
from npusim.distributed.work import seconds_of

SCRIPTS = Path(__file__).resolve().parent
ROOT = SCRIPTS.parent.parent
_LINE = re.compile(r"^\[(\d+)\] (PASS|FAIL) (\S+) (\S+)(?:: (.*))?$", re.MULTILINE)


def mpiexec_command(ranks: int, script: str, *args) -> list:
    return [find_mpiexec(), "-n", str(ranks), sys.executable, str(SCRIPTS / script), *map(str, args)]


def launcher_command(ranks: int, script: str, *args) -> list:
    return [sys.executable, "-m", "npusim.distributed.run", "--nproc-per-node", str(ranks), str(SCRIPTS / script),
            *map(str, args)]


class Job:
    """A launched job (mpiexec and its ranks, in a process group of its own) with a hard time limit."""

    def __init__(self, cmd: list, limit_s: float):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(SCRIPTS)] + [p for p in [env.get("PYTHONPATH")] if p])
        env["NPUSIM_FALLBACK"] = "silent"
        self.limit_s = limit_s
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                     cwd=str(ROOT), start_new_session=True)
        self._result = None

    def result(self):
        """(returncode, stdout, stderr, wall seconds); a job past its limit is killed and the test fails."""
        if self._result is None:
            remaining = max(1.0, self.limit_s - (time.monotonic() - self.started))
            try:
                out, err = self.proc.communicate(timeout=remaining)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                out, err = self.proc.communicate()
                pytest.fail(f"the job hung (killed after {self.limit_s:g} s)\nstdout:\n{out}\nstderr:\n{err}")
            self._result = (self.proc.returncode, out, err, time.monotonic() - self.started)
        return self._result

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.communicate()


def check_lines(stdout: str) -> dict:
    """``{(rank, device, check): "PASS" or the failure}`` from the rank scripts' lines."""
    return {(int(r), dev, name): status if status == "PASS" else f"FAIL: {why}"
            for r, status, dev, name, why in _LINE.findall(stdout)}


# --- a backend of one process, registered like any third-party backend ----------------------------------------
class LoopbackBackend(dist.CollectiveBackend):
    """Collectives of a group of one: results are the rank's own data. Records what it was handed."""

    name = "loopback"
    instances = []

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size, seconds_of(timeout))
        self.calls = []
        self.mailbox = {}
        self.stuck = False
        LoopbackBackend.instances.append(self)

    def _done(self, op, *arrays):
        self.calls.append((op, tuple(a.dtype for a in arrays)))
        work_type = StuckWork if self.stuck else dist.Work
        return work_type(op, self.timeout_s, backend=self)

    def allreduce(self, array, op):
        self.last_op = op
        return self._done("all_reduce", array)

    def broadcast(self, array, root):
        return self._done("broadcast", array)

    def reduce(self, array, root, op):
        self.last_op = op
        return self._done("reduce", array)

    def allgather(self, output, input):
        output[...] = input.reshape(-1)
        return self._done("all_gather", output, input)

    def reduce_scatter(self, output, input, op):
        output[...] = input.reshape(output.shape)
        return self._done("reduce_scatter", output, input)

    def gather(self, output, input, root):
        output[...] = input.reshape(-1)
        return self._done("gather", output, input)

    def scatter(self, output, input, root):
        output[...] = input.reshape(output.shape)
        return self._done("scatter", output, input)

    def alltoall(self, output, input, output_counts, input_counts):
        output.reshape(-1)[...] = input.reshape(-1)
        return self._done("all_to_all", output, input)

    def send(self, array, dst, tag):
        self.mailbox.setdefault(tag, []).append(array.copy())     # the array type of the device (NumPy or CuPy)
        return self._done("send", array)

    def recv(self, array, src, tag):
        array[...] = self.mailbox[tag].pop(0)
        work = self._done("recv", array)
        work._source = 0
        return work

    def barrier(self):
        return self._done("barrier")


class StuckWork(dist.Work):
    """A transfer whose peer never shows up."""

    def _test(self) -> bool:
        return False


def register_loopback() -> None:
    if "LOOPBACK" not in dist.Backend._plugins:
        dist.Backend.register_backend("loopback", LoopbackBackend, devices=["cpu", "npu"])
