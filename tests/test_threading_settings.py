"""Thread settings: set/get_num_threads and their environment precedence, the once-only inter-op
setting, BLAS threads, parallel_info/show, DataLoader workers, and fresh pools after os.fork()."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import npusim
from npusim.core.runtime import parallel_config

REPO = Path(__file__).resolve().parents[1]
CORES = len(os.sched_getaffinity(0))


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with the thread variables unset except those in ``env``."""
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    base["PYTHONPATH"] = str(REPO)
    base.update(env)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                       cwd=REPO, env=base)
    assert r.returncode == 0, r.stderr
    return r


REPORT = "import npusim, json; print(json.dumps([npusim.get_num_threads(), npusim.get_num_interop_threads()]))"


@pytest.fixture
def restore_threads():
    n = npusim.get_num_threads()
    yield
    npusim.set_num_threads(n)


# --- intra-op count and its precedence -----------------------------------------------------------------

@pytest.mark.parametrize("env, expected", [
    ({}, (CORES, "cores")),
    ({"OMP_NUM_THREADS": "1"}, (1, "OMP_NUM_THREADS")),
    ({"OMP_NUM_THREADS": "3"}, (3, "OMP_NUM_THREADS")),
    ({"MKL_NUM_THREADS": "3", "OMP_NUM_THREADS": "1"}, (3, "MKL_NUM_THREADS")),
    ({"MKL_NUM_THREADS": "1", "OMP_NUM_THREADS": "3"}, (1, "MKL_NUM_THREADS")),
    ({"OMP_NUM_THREADS": "2,1"}, (2, "OMP_NUM_THREADS")),   # OpenMP's per-level list: the first level counts
    ({"OMP_NUM_THREADS": " "}, (CORES, "cores")),
])
def test_environment_precedence(monkeypatch, env, expected, recwarn):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert parallel_config.default_num_threads() == expected
    assert not recwarn.list


@pytest.mark.parametrize("env, expected, bad", [
    ({"OMP_NUM_THREADS": "abc"}, CORES, "OMP_NUM_THREADS: 'abc'"),
    ({"OMP_NUM_THREADS": "0"}, CORES, "OMP_NUM_THREADS: '0'"),
    ({"OMP_NUM_THREADS": "-2"}, CORES, "OMP_NUM_THREADS: '-2'"),
    ({"MKL_NUM_THREADS": "many", "OMP_NUM_THREADS": "1"}, 1, "MKL_NUM_THREADS: 'many'"),
])
def test_invalid_environment_values_warn_and_are_ignored(monkeypatch, env, expected, bad):
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.warns(RuntimeWarning, match=f"Invalid value for environment variable {bad} "
                                            r"\(expected a positive integer\); ignoring it"):
        assert parallel_config.default_num_threads()[0] == expected


def test_environment_is_read_at_import():
    r = run_python(REPORT, OMP_NUM_THREADS="1")
    assert json.loads(r.stdout) == [1, CORES]
    r = run_python(REPORT, OMP_NUM_THREADS="zero")
    assert json.loads(r.stdout) == [CORES, CORES]
    assert "RuntimeWarning: Invalid value for environment variable OMP_NUM_THREADS: 'zero'" in r.stderr


def test_set_num_threads_wins_over_the_environment_and_limits_blas():
    r = run_python("""
        import json, npusim
        from threadpoolctl import threadpool_info
        before = npusim.get_num_threads()
        blas_before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        npusim.set_num_threads(1)
        blas_after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        print(json.dumps([before, npusim.get_num_threads(), blas_before, blas_after]))
    """, MKL_NUM_THREADS="2", OMP_NUM_THREADS="3")
    before, after, blas_before, blas_after = json.loads(r.stdout)
    assert (before, after) == (2, 1)
    assert blas_before and all(n == 2 for n in blas_before)   # MKL_NUM_THREADS reached the BLAS library
    assert all(n == 1 for n in blas_after)


def test_set_num_threads_changes_the_count(restore_threads):
    npusim.set_num_threads(1)
    assert npusim.get_num_threads() == 1
    npusim.set_num_threads(3)
    assert npusim.get_num_threads() == 3
    import numpy as np
    npusim.set_num_threads(np.int64(2))   # any integer type, as torch
    assert npusim.get_num_threads() == 2


@pytest.mark.parametrize("fn", ["set_num_threads", "set_num_interop_threads"])
@pytest.mark.parametrize("value, message", [
    (0, "expects a positive integer"), (-1, "expects a positive integer"),
    ("2", "expects an int, but got str"), (2.5, "expects an int, but got float"),
    (True, "expects an int, but got bool"), (None, "expects an int, but got NoneType"),
])
def test_bad_thread_counts_are_refused(fn, value, message):
    n, ni = npusim.get_num_threads(), npusim.get_num_interop_threads()
    with pytest.raises(RuntimeError, match=f"^{fn} {message}$"):
        getattr(npusim, fn)(value)
    assert (npusim.get_num_threads(), npusim.get_num_interop_threads()) == (n, ni)


@pytest.mark.oracle
@pytest.mark.parametrize("value", [0, -3, "2", 2.5, True])
def test_bad_thread_count_messages_match_torch(torch, value):
    with pytest.raises(RuntimeError) as ours:
        npusim.set_num_threads(value)
    with pytest.raises(RuntimeError) as theirs:
        torch.set_num_threads(value)
    assert str(ours.value) == str(theirs.value)


# --- inter-op count: once, before any inter-op work -------------------------------------------------------

ONCE = "Error: cannot set number of interop threads after parallel work has started or set_num_interop_threads called"


def test_interop_threads_can_be_set_once_before_work():
    r = run_python(f"""
        import npusim
        npusim.set_num_interop_threads(3)
        assert npusim.get_num_interop_threads() == 3
        try:
            npusim.set_num_interop_threads(2)
        except RuntimeError as e:
            assert str(e) == {ONCE!r}, e
        else:
            raise AssertionError("a second call was accepted")
        assert npusim.jit.wait(npusim.jit.fork(lambda: 5)) == 5
        print(npusim.get_num_interop_threads())
    """)
    assert r.stdout.strip() == "3"


def test_interop_threads_cannot_be_set_after_a_fork():
    r = run_python(f"""
        import npusim
        npusim.jit.wait(npusim.jit.fork(lambda: 1))
        try:
            npusim.set_num_interop_threads(1)
        except RuntimeError as e:
            assert str(e) == {ONCE!r}, e
            print("refused", npusim.get_num_interop_threads())
    """)
    assert r.stdout.split() == ["refused", str(CORES)]


def test_interop_setting_in_this_process_is_fixed_once_work_started():
    npusim.jit.wait(npusim.jit.fork(lambda: None))
    with pytest.raises(RuntimeError, match="^Error: cannot set number of interop threads"):
        npusim.set_num_interop_threads(1)


@pytest.mark.oracle
def test_interop_once_message_matches_torch(torch):
    code = "import {m}\n{m}.set_num_interop_threads(2)\ntry:\n    {m}.set_num_interop_threads(2)\n" \
           "except RuntimeError as e:\n    print(e)\n"
    ours = run_python(code.format(m="npusim")).stdout
    theirs = run_python(code.format(m="torch")).stdout
    assert ours == theirs


# --- parallel_info / show ----------------------------------------------------------------------------------

def test_parallel_info_reports_the_settings(restore_threads):
    npusim.set_num_threads(1)
    info = npusim.__config__.parallel_info()
    assert info.startswith("ATen/Parallel:\n\tat::get_num_threads() : 1\n"
                           f"\tat::get_num_interop_threads() : {npusim.get_num_interop_threads()}\n")
    assert "ATen parallel backend: native thread pool" in info
    assert "Environment variables:\n\tOMP_NUM_THREADS : " in info and "\tMKL_NUM_THREADS : " in info
    assert "_get_num_threads() : 1" in info.split("ATen/Parallel")[1].split("Environment")[0].split("interop")[1]


def test_parallel_info_shows_the_environment():
    r = run_python("import npusim; print(npusim.__config__.parallel_info())", OMP_NUM_THREADS="1")
    assert "\tOMP_NUM_THREADS : 1\n\tMKL_NUM_THREADS : [not set]" in r.stdout
    assert "at::get_num_threads() : 1" in r.stdout
    assert "OpenBLAS" in r.stdout or "Math Kernel Library" in r.stdout or "BLIS" in r.stdout


@pytest.mark.oracle
def test_parallel_info_has_torchs_layout(torch):
    ours, theirs = npusim.__config__.parallel_info(), torch.__config__.parallel_info()
    assert ours.splitlines()[0] == theirs.splitlines()[0] == "ATen/Parallel:"
    for line in ("\tat::get_num_threads() : ", "\tat::get_num_interop_threads() : ", "Environment variables:",
                 "\tOMP_NUM_THREADS : ", "ATen parallel backend: "):
        assert line in ours and line in theirs


def test_show_describes_the_build():
    text = npusim.__config__.show()
    assert isinstance(text, str) and text.startswith("npusim built with:\n")
    import numpy
    assert f"NumPy {numpy.__version__}" in text and f"npusim {npusim.__version__}" in text


# --- DataLoader workers, os.fork() --------------------------------------------------------------------------

class _ThreadCountDataset(npusim.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return npusim.tensor(npusim.get_num_threads())


def test_dataloader_workers_use_one_intra_op_thread(restore_threads):
    npusim.set_num_threads(2)
    loader = npusim.utils.data.DataLoader(_ThreadCountDataset(), batch_size=1, num_workers=1)
    assert [int(b) for b in loader] == [1, 1]
    assert npusim.get_num_threads() == 2


def test_a_forked_child_gets_fresh_pools():
    r = run_python("""
        import os, signal, threading
        import numpy as np
        import npusim
        npusim.set_num_threads(2)
        x = npusim.rand(1 << 21)
        y = (x + 1).numpy()                                  # starts the intra-op pool
        npusim.jit.wait(npusim.jit.fork(lambda: 0))          # and the inter-op pool
        block = threading.Event()
        stuck = npusim.jit.fork(block.wait)                  # an inter-op thread busy at fork time
        pid = os.fork()
        if pid == 0:
            signal.alarm(20)                                 # a hang fails the test instead of stalling it
            ok = np.array_equal((x + 1).numpy(), y)
            ok &= npusim.jit.wait(npusim.jit.fork(lambda: 41)) == 41
            ok &= float(npusim.rand(1 << 21, generator=npusim.Generator().manual_seed(1)).sum()) > 0
            names = [t.name for t in threading.enumerate()]
            ok &= any(n.startswith("npusim-intraop") for n in names)
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        block.set()
        stuck.wait()
        print(os.waitstatus_to_exitcode(status), np.array_equal((x + 1).numpy(), y))
    """)
    assert r.stdout.split() == ["0", "True"]


def test_intra_op_pool_has_threads_minus_one_workers(restore_threads):
    npusim.set_num_threads(2)
    x = npusim.ones(2 * parallel_config.GRAIN_SIZE)
    (x * 2).sum()
    names = [t.name for t in threading.enumerate() if t.name.startswith("npusim-intraop")]
    assert len(names) == 1   # the calling thread is the second
