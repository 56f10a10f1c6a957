"""npusim.distributed's key-value stores: HashStore, FileStore, TCPStore, PrefixStore (torch.distributed's)."""
import os
import socket
import struct
import subprocess
import sys
import textwrap
import threading
from datetime import timedelta

import pytest

import npusim.distributed as dist

LONG = timedelta(seconds=60)      # what must succeed gets a margin no loaded machine exhausts
SHORT = timedelta(seconds=0.2)    # only for waits that are meant to time out


def _hash(tmp_path):
    return dist.HashStore()


def _file(tmp_path):
    return dist.FileStore(str(tmp_path / "store"), 1)


def _tcp(tmp_path):
    return dist.TCPStore("127.0.0.1", 0, 1, True, timeout=LONG)


def _prefixed(tmp_path):
    return dist.PrefixStore("group0", dist.HashStore())


STORES = {"hash": _hash, "file": _file, "tcp": _tcp, "prefix": _prefixed}


@pytest.fixture(params=list(STORES))
def store(request, tmp_path):
    s = STORES[request.param](tmp_path)
    s.set_timeout(LONG)
    return s


def test_values_counters_and_compare_set_as_torchs(store):
    # the expected values are torch 2.13's HashStore's for the same calls
    store.set("a", "x")
    assert store.get("a") == b"x"
    assert store.add("n", 3) == 3 and store.add("n", 2) == 5 and store.get("n") == b"5"
    assert store.check(["a", "n"]) and not store.check(["a", "zz"])
    assert store.compare_set("a", "x", "y") == b"y" and store.get("a") == b"y"
    assert store.compare_set("q", "", "new") == b"new"           # a missing key matches b""
    assert store.compare_set("absent", "old", "z") == b"old"     # ... and nothing else
    assert store.compare_set("a", "bad", "z") == b"y"
    assert store.delete_key("a") is True and store.delete_key("a") is False
    store.append("ap", "12")
    store.append("ap", b"34")
    assert store.get("ap") == b"1234"
    store.multi_set(["k1", "k2"], ["v1", b"v2"])
    assert store.multi_get(["k1", "k2"]) == [b"v1", b"v2"]
    assert sorted(store.list_keys()) == ["ap", "k1", "k2", "n", "q"]
    assert store.has_extended_api()


def test_queues(store):
    store.queue_push("q", "a")
    store.queue_push("q", b"b")
    assert store.queue_len("q") == 2
    assert store.queue_pop("q") == b"a" and store.queue_pop("q", False) == b"b"
    with pytest.raises(dist.QueueEmptyError, match="queue is empty"):
        store.queue_pop("q", block=False)
    assert issubclass(dist.QueueEmptyError, dist.DistStoreError)


def test_blocking_reads_time_out_with_a_dist_store_error(store):
    store.set_timeout(SHORT)
    with pytest.raises(dist.DistStoreError, match="(?i)wait timeout"):
        store.get("missing")
    with pytest.raises(dist.DistStoreError, match="(?i)wait timeout"):
        store.wait(["missing"], timedelta(seconds=0.1))
    with pytest.raises(dist.DistStoreError, match="(?i)wait timeout"):
        store.queue_pop("empty")
    assert store.timeout == SHORT


def test_a_waiting_reader_wakes_when_another_thread_writes(store):
    other = store.clone()

    def write_later():
        other.wait(["go"])
        other.set("late", "1")

    t = threading.Thread(target=write_later)
    t.start()
    store.set("go", "")
    assert store.get("late") == b"1"
    t.join()


def test_bad_arguments_are_type_errors_and_change_nothing(store):
    with pytest.raises(TypeError):
        store.set("k", 5)
    with pytest.raises(TypeError):
        store.add("k", "1")
    with pytest.raises(TypeError):
        store.check("k")
    store.set("word", "abc")
    with pytest.raises(ValueError, match="not an integer"):
        store.add("word", 1)
    assert store.get("word") == b"abc" and not store.check(["k"])


def test_prefix_store_keeps_its_keys_apart():
    base = dist.HashStore()
    a, b = dist.PrefixStore("a", base), dist.PrefixStore("b", base)
    a.set("k", "1")
    b.set("k", "2")
    assert (a.get("k"), b.get("k"), base.get("a/k")) == (b"1", b"2", b"1")
    assert a.list_keys() == ["k"] and a.num_keys() == 2 and a.underlying_store is base


def test_the_base_class_is_an_interface():
    with pytest.raises(RuntimeError, match="Not implemented"):
        dist.Store().get("x")


# --- across processes --------------------------------------------------------------------------------------

_WORKER = textwrap.dedent("""
    import sys
    from datetime import timedelta
    import npusim.distributed as dist
    kind, where = sys.argv[1], sys.argv[2]
    t = timedelta(seconds=60)
    s = dist.FileStore(where, 2) if kind == "file" else dist.TCPStore("127.0.0.1", int(where), 2, False, timeout=t)
    s.set_timeout(t)
    s.set("from_worker", "hello")
    s.barrier("b", 2)
    print(s.get("from_master").decode(), s.add("count", 1))
""")


@pytest.mark.parametrize("kind", ["file", "tcp"])
def test_two_processes_meet_through_a_store(kind, tmp_path):
    if kind == "file":
        master, where = dist.FileStore(str(tmp_path / "shared"), 2), str(tmp_path / "shared")
        worker = subprocess.Popen([sys.executable, "-c", _WORKER, kind, where], stdout=subprocess.PIPE, text=True)
    else:
        master = dist.TCPStore("127.0.0.1", 0, None, True, timeout=LONG)
        worker = subprocess.Popen([sys.executable, "-c", _WORKER, kind, str(master.port)], stdout=subprocess.PIPE,
                                  text=True)
    master.set_timeout(LONG)
    try:
        assert master.get("from_worker") == b"hello"
        master.set("from_master", "hi")
        master.barrier("b", 2)
        out, _ = worker.communicate(timeout=120)
    finally:
        worker.kill()
    assert worker.returncode == 0
    word, count = out.split()
    assert word == "hi" and int(count) >= 1


def test_the_master_waits_for_its_workers_and_says_how_many_came():
    with pytest.raises(dist.DistStoreError, match=r"waiting for clients. 1/3 clients joined"):
        dist.TCPStore("127.0.0.1", 0, 3, True, timeout=SHORT)


def test_connecting_to_no_server_is_a_network_error_after_the_timeout():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free_port = s.getsockname()[1]
    with pytest.raises(dist.DistNetworkError, match="timed out after 200ms while trying to connect"):
        dist.TCPStore("127.0.0.1", free_port, 1, False, timeout=SHORT)


def test_a_port_in_use_is_a_network_error():
    first = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=LONG)
    with pytest.raises(dist.DistNetworkError, match=f"failed to listen on 127.0.0.1:{first.port}"):
        dist.TCPStore("127.0.0.1", first.port, 1, True, timeout=LONG)


# --- hostile peers and files ---------------------------------------------------------------------------------

@pytest.mark.parametrize("garbage", [
    struct.pack(">I", 2 ** 31),                                       # a 2 GiB frame announced
    struct.pack(">I", 3) + b"Zzz",                                    # an unknown tag
    struct.pack(">I", 9) + b"S\x00\x00\x00\x03set",                   # set without its arguments
    struct.pack(">I", 13) + b"S\x00\x00\x00\x08eval_me!",             # an op that does not exist
    struct.pack(">I", 10) + b"L\xff\xff\xff\xff" + b"N" * 5,          # a list longer than its frame
    b"\x00\x00",                                                      # a frame cut short, then silence
])
def test_a_malformed_client_is_dropped_and_the_store_keeps_serving(garbage):
    master = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=LONG)
    master.set("k", "v")
    with socket.create_connection(("127.0.0.1", master.port), timeout=60) as rogue:
        rogue.sendall(garbage)
        rogue.shutdown(socket.SHUT_WR)
        rogue.settimeout(60)
        while rogue.recv(4096):       # the server answers "refused" or just closes; either way it ends
            pass
    assert master.get("k") == b"v" and master.num_keys() == 1


def test_a_file_that_is_not_a_store_is_refused_with_its_name(tmp_path):
    path = tmp_path / "not_a_store"
    path.write_bytes(b"S\x00\x00\x00\x05ab")          # a record cut short
    s = dist.FileStore(str(path), 1)
    with pytest.raises(dist.DistStoreError, match="not_a_store is not a store's file"):
        s.get("ab")
    with pytest.raises(dist.DistStoreError, match="is a directory"):
        dist.FileStore(str(tmp_path), 1)


def test_a_file_store_sees_what_another_store_on_the_file_wrote(tmp_path):
    a = dist.FileStore(str(tmp_path / "f"), 2)
    b = dist.FileStore(str(tmp_path / "f"), 2)
    a.set("x", "1")
    b.add("x", 4)
    b.queue_push("q", "item")
    assert a.get("x") == b"5" and a.queue_pop("q") == b"item" and b.queue_len("q") == 0
    assert os.path.getsize(tmp_path / "f") > 0


@pytest.mark.oracle
def test_the_same_calls_give_torchs_results(torch):
    ours, theirs = dist.HashStore(), torch.distributed.HashStore()
    calls = [("set", "a", "1"), ("add", "a", 41), ("get", "a"), ("compare_set", "a", "42", "x"),
             ("compare_set", "a", "42", "y"), ("compare_set", "b", "", "z"), ("compare_set", "c", "w", "v"),
             ("append", "b", "tail"), ("get", "b"), ("check", ["a", "b"]), ("check", ["a", "nope"]),
             ("num_keys",), ("delete_key", "b"), ("delete_key", "b"), ("multi_set", ["m", "n"], ["1", "2"]),
             ("multi_get", ["n", "m"]), ("queue_push", "q", "e"), ("queue_len", "q"), ("queue_pop", "q"),
             ("queue_len", "q")]
    for name, *args in calls:
        assert getattr(ours, name)(*args) == getattr(theirs, name)(*args), name
    assert sorted(ours.list_keys()) == sorted(theirs.list_keys())
