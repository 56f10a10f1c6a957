"""The dispatcher: key priority, per-overload kernel tables, alias keys, fallthrough,
boxed fallbacks, redispatch, thread-local key guards, missing-kernel errors and the
``npusim.ops`` namespace.

Most tests drive a private namespace with their own kernels; inputs are either cpu
tensors or stand-ins that carry only a dispatch key set (``_ks``), which is all the
dispatcher reads, so every key can be exercised without a device behind it.
"""
from __future__ import annotations

import itertools
import pickle
import threading

import numpy as np
import pytest

import npusim
from npusim.core.dispatch import dispatcher
from npusim.core.c10.device import privateuse1_backend_name
from npusim.library import (
    DispatchKey, DispatchKeySet, Library, _after_autocast_keyset, _after_autograd_keyset,
    _dispatch_tls_local_exclude_set, _dispatch_tls_local_include_set, _ExcludeDispatchKeyGuard,
    _IncludeDispatchKeyGuard, fallthrough_kernel,
)
from conftest import host

_ids = itertools.count()

RUNTIME_KEY_NAMES = ["CPU", "CUDA", "PrivateUse1", "Meta", "AutogradOther", "AutogradCPU", "AutogradCUDA",
                     "AutogradPrivateUse1", "AutogradMeta", "AutocastCPU", "AutocastCUDA", "AutocastPrivateUse1"]


class Fake:
    """Stands in for a tensor: it carries a dispatch key set and a label."""

    def __init__(self, *keys, label="x"):
        self._ks = int(DispatchKeySet(keys))
        self.label = label

    def __repr__(self):
        return f"Fake({self.label})"


@pytest.fixture
def ns():
    """A fresh namespace with a DEF library, destroyed after the test."""
    name = f"tdisp{next(_ids)}"
    lib = Library(name, "DEF")
    yield name, lib
    lib._destroy()


@pytest.fixture
def free_fallback():
    """Lets a test own the boxed fallback of a key (another part may hold it), restored afterwards."""
    saved = {}

    def take(key):
        key = DispatchKey[key]
        with dispatcher._lock:
            saved[key] = dispatcher._FALLBACKS.pop(key, None)
            dispatcher._invalidate_all()

    yield take
    with dispatcher._lock:
        for key, reg in saved.items():
            dispatcher._FALLBACKS.pop(key, None)
            if reg is not None:
                dispatcher._FALLBACKS[key] = reg
        dispatcher._invalidate_all()


def tagger(tag, log=None):
    def kernel(*args, **kwargs):
        if log is not None:
            log.append(tag)
        return tag
    return kernel


# --- keys ---------------------------------------------------------------------------------------

def test_keys_rank_autocast_over_autograd_over_backends():
    order = [DispatchKey[n] for n in RUNTIME_KEY_NAMES]
    for backend in ("CPU", "CUDA", "PrivateUse1", "Meta"):
        ks = DispatchKeySet([backend, "AutogradCPU", "AutocastCPU"])
        assert ks.highestPriorityTypeId() is DispatchKey.AutocastCPU
        assert (ks - DispatchKeySet("AutocastCPU")).highestPriorityTypeId() is DispatchKey.AutogradCPU
        assert (ks & _after_autograd_keyset).highestPriorityTypeId() is DispatchKey[backend]
    assert sorted(order) == order  # the names above are listed from lowest to highest priority


@pytest.mark.oracle
def test_key_priority_matches_torch(torch):
    TK = torch._C.DispatchKey
    compared = 0
    for a, b in itertools.combinations(RUNTIME_KEY_NAMES, 2):
        theirs = (torch._C.DispatchKeySet(getattr(TK, a)) | torch._C.DispatchKeySet(getattr(TK, b)))
        if len(repr(theirs).split(",")) != 2:
            continue  # torch stores backend x functionality bits: CUDA|AutogradCPU also means AutogradCUDA
        compared += 1
        assert DispatchKeySet([a, b]).highestPriorityTypeId().name == theirs.highestPriorityTypeId().name, (a, b)
        assert repr(DispatchKeySet([a, b])) == repr(theirs)
    assert compared > 40


@pytest.mark.oracle
def test_keyset_repr_and_operations_match_torch(torch):
    TK, TS = torch._C.DispatchKey, torch._C.DispatchKeySet
    names = ["AutocastCPU", "CPU", "AutogradCPU", "PrivateUse1", "AutogradPrivateUse1"]
    ours = DispatchKeySet(names)
    theirs = TS(TK.AutocastCPU) | TS(TK.CPU) | TS(TK.AutogradCPU) | TS(TK.PrivateUse1) | TS(TK.AutogradPrivateUse1)
    assert repr(ours) == repr(theirs) == \
        "DispatchKeySet(CPU, PrivateUse1, AutogradCPU, AutogradPrivateUse1, AutocastCPU)"
    assert ours.has("CPU") and ours.has(DispatchKey.AutocastCPU) and not ours.has("CUDA")
    assert repr(ours & _after_autograd_keyset) == repr(theirs & torch._C._after_autograd_keyset)
    assert repr(ours.remove("AutocastCPU")) == repr(theirs.remove(TK.AutocastCPU))
    assert repr(ours - DispatchKeySet("AutocastCPU")) == repr(theirs - TS(TK.AutocastCPU))
    assert repr(ours.add("Meta")) == \
        "DispatchKeySet(CPU, PrivateUse1, Meta, AutogradCPU, AutogradPrivateUse1, AutocastCPU)"
    assert repr(DispatchKeySet()) == repr(TS(TK.CPU) - TS(TK.CPU)) == "DispatchKeySet()"


def test_keyset_rejects_unknown_and_alias_keys():
    with pytest.raises(RuntimeError, match="^could not parse dispatch key: Bogus$"):
        DispatchKeySet("Bogus")
    with pytest.raises(RuntimeError, match="Autograd is an alias key"):
        DispatchKeySet(DispatchKey.Autograd)
    with pytest.raises(RuntimeError, match="CompositeImplicitAutograd is an alias key"):
        _IncludeDispatchKeyGuard("CompositeImplicitAutograd")


def test_cpu_tensor_key_sets():
    x = npusim.ones(2)
    assert DispatchKeySet(x._ks) == DispatchKeySet("CPU")
    x.requires_grad_()
    assert DispatchKeySet(x._ks) == DispatchKeySet(["CPU", "AutogradCPU"])


# --- per-overload kernel tables ------------------------------------------------------------------

def test_each_overload_has_its_own_kernel_table(ns):
    name, lib = ns
    lib.define("f.Tensor(Tensor self, Tensor other) -> Tensor")
    lib.define("f.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)")
    lib.impl("f.Tensor", lambda self, other: "functional", "CPU")
    lib.impl("f.out", lambda self, other, *, out: ("out", out.label), "CPU")
    packet = getattr(npusim.ops, name).f
    x = Fake("CPU")
    assert packet.Tensor(x, x) == "functional"
    assert packet.out(x, x, out=Fake("CPU", label="o")) == ("out", "o")
    assert packet.Tensor.has_kernel_for_dispatch_key("CPU")
    assert not packet.Tensor.has_kernel_for_dispatch_key("CUDA")
    assert sorted(packet.overloads()) == ["Tensor", "out"]


def test_kernels_receive_schema_argument_names(ns):
    name, lib = ns
    lib.define("g(Tensor self, int dim=-1, *, bool keepdim=False, Tensor? out=None) -> Tensor")
    seen = {}

    def kernel(self, dim, *, keepdim, out):
        seen.update(dim=dim, keepdim=keepdim, out=out)
        return "ok"

    lib.impl("g", kernel, "CPU")
    op = getattr(npusim.ops, name).g.default
    assert op(Fake("CPU")) == "ok"
    assert seen == {"dim": -1, "keepdim": False, "out": None}
    op(Fake("CPU"), 2, keepdim=True)
    assert seen["dim"] == 2 and seen["keepdim"] is True


def test_argument_names_that_clash_with_dispatch_internals_work(ns):
    name, lib = ns
    lib.define("h(Tensor op, Tensor ks, int fn=1, int memo=2, int resolve=3, *, int slow=4) -> Tensor")
    lib.impl("h", lambda op, ks, fn, memo, resolve, *, slow: (op.label, ks.label, fn, memo, resolve, slow), "CPU")
    f = getattr(npusim.ops, name).h.default
    assert f(Fake("CPU", label="a"), Fake("CPU", label="b")) == ("a", "b", 1, 2, 3, 4)
    assert f(Fake("CPU", label="a"), Fake("CPU", label="b"), 5, 6, 7, slow=8) == ("a", "b", 5, 6, 7, 8)


def test_numbers_in_tensor_slots_dispatch_to_cpu_and_other_values_are_refused(ns):
    name, lib = ns
    lib.define("k(Tensor self, Tensor other) -> Tensor")
    lib.impl("k", lambda self, other: (self, other), "CPU")
    lib.impl("k", lambda self, other: "cuda", "CUDA")
    op = getattr(npusim.ops, name).k.default
    assert op(2, 3.5) == (2, 3.5)
    assert op(Fake("CUDA"), 1) == "cuda"
    with pytest.raises(TypeError, match=r"^k\(\): argument 'other' \(position 2\) must be Tensor, not str$"):
        op(Fake("CPU"), "s")
    with pytest.raises(TypeError, match=r"k\(\) missing 1 required positional argument: 'other'"):
        op(Fake("CPU"))


def test_tensor_lists_and_optional_tensors_contribute_keys(ns):
    name, lib = ns
    lib.define("cat2(Tensor[] tensors, Tensor? weight=None) -> Tensor")
    lib.impl("cat2", lambda tensors, weight=None: "cpu", "CPU")
    lib.impl("cat2", lambda tensors, weight=None: "cuda", "CUDA")
    op = getattr(npusim.ops, name).cat2.default
    assert op([Fake("CPU"), Fake("CPU")]) == "cpu"
    assert op([Fake("CPU"), Fake("CUDA")]) == "cuda"
    assert op([Fake("CPU")], Fake("CUDA")) == "cuda"
    with pytest.raises(TypeError, match=r"cat2\(\): argument 'tensors' \(position 1\) must be tuple of Tensors, "
                                        r"not list of \[Fake, int\]"):
        op([Fake("CPU"), 3])
    with pytest.raises(TypeError, match=r"must be tuple of Tensors, not Fake"):
        op(Fake("CPU"))


# --- alias keys ------------------------------------------------------------------------------------

# (kernels registered, expected kernel for a plain cpu tensor, for one that requires grad)
ALIAS_CASES = [
    ({"CompositeExplicitAutograd": "CEA", "CompositeImplicitAutograd": "CIA"}, "CEA", "CEA"),
    ({"CompositeImplicitAutograd": "CIA"}, "CIA", "CIA"),
    ({"CompositeImplicitAutograd": "CIA", "CPU": "CPU"}, "CPU", "CPU"),
    ({"CompositeImplicitAutograd": "CIA", "CPU": "CPU", "Autograd": "AG"}, "CPU", "AG"),
    ({"CompositeExplicitAutograd": "CEA", "CPU": "CPU"}, "CPU", "CPU"),
    ({"CompositeExplicitAutograd": "CEA", "Autograd": "AG"}, "CEA", "AG"),
    ({"CompositeImplicitAutograd": "CIA", "Autograd": "AG"}, "CIA", "CIA"),
    ({"CompositeImplicitAutograd": "CIA", "CompositeExplicitAutograd": "CEA", "AutogradCPU": "AGCPU"},
     "CEA", "AGCPU"),
    ({"CompositeExplicitAutogradNonFunctional": "CEANF", "CompositeExplicitAutograd": "CEA"}, "CEANF", "CEANF"),
    ({"CPU": "CPU", "AutogradCPU": "FT"}, "CPU", "CPU"),
    ({"CPU": "CPU", "Autograd": "FT"}, "CPU", "CPU"),
    ({"CompositeExplicitAutograd": "CEA", "CPU": "FT"}, "CEA", "CEA"),
]


def _register_cases(lib, regs, log):
    lib.define("a(Tensor x) -> Tensor")
    for key, tag in regs.items():
        lib.impl("a", fallthrough_kernel if tag == "FT" else tagger(tag, log), key)


@pytest.mark.parametrize("regs,plain,grad", ALIAS_CASES)
def test_alias_keys_resolve_in_torch_order(ns, free_fallback, regs, plain, grad):
    name, lib = ns
    free_fallback("AutogradCPU")  # alone, an autograd key without a kernel falls through
    log = []
    _register_cases(lib, regs, log)
    op = getattr(npusim.ops, name).a.default
    op(npusim.ones(2))
    op(npusim.ones(2).requires_grad_())
    assert log == [plain, grad]


@pytest.mark.oracle
@pytest.mark.parametrize("regs,plain,grad", ALIAS_CASES)
def test_alias_resolution_for_grad_inputs_matches_torch(torch, regs, plain, grad):
    log = []
    lib = torch.library.Library(f"npusim_alias{next(_ids)}", "DEF")

    def tagger_t(tag):
        def kernel(x):
            log.append(tag)
            return x.clone()
        return kernel

    lib.define("a(Tensor x) -> Tensor")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, tag in regs.items():
            lib.impl("a", torch.library.fallthrough_kernel if tag == "FT" else tagger_t(tag), key)
    getattr(torch.ops, lib.ns).a(torch.ones(2, requires_grad=True))
    lib._destroy()
    assert log == [grad]


def test_fallthrough_kernel_is_a_marker_that_cannot_be_called():
    with pytest.raises(NotImplementedError, match=r"fallthrough_kernel\(\) should never be called"):
        fallthrough_kernel()


def test_fallthrough_skips_exactly_its_key(ns):
    name, lib = ns
    log = []
    lib.define("b(Tensor x) -> Tensor")
    lib.impl("b", tagger("cuda", log), "CUDA")
    lib.impl("b", tagger("autocast", log), "AutocastCUDA")
    lib.impl("b", fallthrough_kernel, "AutogradCUDA")
    op = getattr(npusim.ops, name).b.default
    op(Fake("CUDA", "AutogradCUDA"))
    op(Fake("CUDA", "AutogradCUDA", "AutocastCUDA"))
    assert log == ["cuda", "autocast"]


def test_everything_falling_through_reports_the_backend(ns):
    name, lib = ns
    lib.define("c(Tensor x) -> Tensor")
    lib.impl("c", fallthrough_kernel, "CPU")
    with pytest.raises(NotImplementedError, match=rf"Could not run '{name}::c' with arguments from the 'CPU' "
                                                  r"backend"):
        getattr(npusim.ops, name).c(npusim.ones(1))


# --- missing kernels --------------------------------------------------------------------------------

def test_missing_kernel_error_names_op_backend_and_available_keys(ns):
    name, lib = ns
    lib.define("m(Tensor x) -> Tensor")
    lib.impl("m", tagger("cuda"), "CUDA")
    with pytest.raises(NotImplementedError) as info:
        getattr(npusim.ops, name).m(npusim.ones(1))
    msg = str(info.value)
    assert msg.startswith(f"Could not run '{name}::m' with arguments from the 'CPU' backend. This could be because "
                          f"the operator doesn't exist for this backend")
    assert "CUDA" in msg.split("only available for these backends:")[1]


@pytest.mark.oracle
def test_missing_kernel_error_matches_torch_wording(torch, ns):
    name, lib = ns
    lib.define("m2(Tensor x) -> Tensor")
    tlib = torch.library.Library(f"npusim_missing{next(_ids)}", "DEF")
    tlib.define("m2(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError) as ours:
        getattr(npusim.ops, name).m2(npusim.ones(1))
    with pytest.raises(NotImplementedError) as theirs:
        getattr(torch.ops, tlib.ns).m2(torch.ones(1))
    tlib._destroy()
    head = "Could not run '{}::m2' with arguments from the 'CPU' backend. This could be because the operator " \
           "doesn't exist for this backend"
    assert str(ours.value).startswith(head.format(name))
    assert str(theirs.value).startswith(head.format(tlib.ns))


def test_missing_privateuse1_kernel_uses_the_backend_name(ns, free_fallback):
    name, lib = ns
    free_fallback("PrivateUse1")
    lib.define("p(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError, match=rf"^Could not run '{name}::p' with arguments from the "
                                                  rf"'{privateuse1_backend_name()}' backend"):
        getattr(npusim.ops, name).p(Fake("PrivateUse1"))


def test_autograd_and_autocast_keys_without_kernels_fall_through(ns, free_fallback):
    name, lib = ns
    free_fallback("AutogradCUDA")
    free_fallback("AutocastCUDA")
    lib.define("q(Tensor x) -> Tensor")
    lib.impl("q", tagger("cuda"), "CUDA")
    assert getattr(npusim.ops, name).q(Fake("CUDA", "AutogradCUDA", "AutocastCUDA")) == "cuda"


# --- boxed fallbacks and redispatch ------------------------------------------------------------------

def test_boxed_fallback_receives_op_args_and_kwargs(ns, free_fallback):
    name, lib = ns
    free_fallback("CUDA")
    lib.define("r(Tensor x, int n=1, *, float scale=2.0) -> Tensor")
    calls = []

    def fallback(op, *args, **kwargs):
        calls.append((op, args, kwargs))
        return "fallback"

    g = Library("_", "IMPL")
    g.fallback(fallback, "CUDA")
    try:
        op = getattr(npusim.ops, name).r.default
        x = Fake("CUDA")
        assert op(x, 3, scale=0.5) == "fallback"
        assert calls == [(op, (x, 3), {"scale": 0.5})]
        lib.impl("r", tagger("kernel"), "CUDA")
        assert op(x) == "kernel"  # an op's own kernel wins over the fallback
    finally:
        g._destroy()


def test_fallback_with_keyset_gets_keyset_then_op_and_redispatches_below_itself(ns, free_fallback):
    name, lib = ns
    free_fallback("AutocastCUDA")
    lib.define("s(Tensor x) -> Tensor")
    lib.impl("s", lambda x: "cuda kernel", "CUDA")
    seen = []

    def autocast_fallback(keyset, op, *args, **kwargs):
        seen.append((keyset, op))
        return op.redispatch(keyset & _after_autocast_keyset, *args, **kwargs)

    g = Library("_", "IMPL")
    g.fallback(autocast_fallback, "AutocastCUDA", with_keyset=True)
    try:
        op = getattr(npusim.ops, name).s.default
        assert op(Fake("CUDA", "AutocastCUDA")) == "cuda kernel"
        keyset, got_op = seen[0]
        assert isinstance(keyset, DispatchKeySet) and got_op is op
        assert keyset == DispatchKeySet(["CUDA", "AutocastCUDA"])
    finally:
        g._destroy()


@pytest.mark.oracle
def test_fallback_with_keyset_argument_order_matches_torch(torch):
    lib = torch.library.Library(f"npusim_fb{next(_ids)}", "DEF")
    lib.define("f(Tensor x) -> Tensor")
    seen = []

    def fb(first, second, *args, **kwargs):
        seen.append((type(first).__name__, type(second).__name__))
        return args[0].clone()

    g = torch.library.Library("_", "IMPL")
    g.fallback(fb, "CPU", with_keyset=True)
    try:
        getattr(torch.ops, lib.ns).f(torch.ones(1))
    finally:
        g._destroy()
        lib._destroy()
    assert seen == [("DispatchKeySet", "OpOverload")]


def test_kernel_with_keyset_redispatches_past_its_key(ns):
    name, lib = ns
    lib.define("t(Tensor x) -> Tensor")
    log = []

    def autograd_kernel(keyset, x):
        log.append(repr(keyset))
        return ("wrapped", op.redispatch(keyset & _after_autograd_keyset, x))

    lib.impl("t", autograd_kernel, "AutogradCUDA", with_keyset=True)
    lib.impl("t", lambda x: "cuda", "CUDA")
    op = getattr(npusim.ops, name).t.default
    assert op(Fake("CUDA", "AutogradCUDA")) == ("wrapped", "cuda")
    assert log == ["DispatchKeySet(CUDA, AutogradCUDA)"]


def test_fallback_can_run_real_cpu_tensors_through_redispatch(ns, free_fallback):
    name, lib = ns
    free_fallback("AutocastCPU")
    lib.define("double(Tensor x) -> Tensor")
    lib.impl("double", lambda x: x + x, "CPU")

    def fb(keyset, op, *args, **kwargs):
        # as torch's autocast kernels do: ops run inside the fallback must not come back to it
        with _ExcludeDispatchKeyGuard(DispatchKey.AutocastCPU):
            return op.redispatch(keyset & _after_autocast_keyset, *args, **kwargs) * 10

    g = Library("_", "IMPL")
    g.fallback(fb, "AutocastCPU", with_keyset=True)
    try:
        x = npusim.tensor([1.0, 2.0])
        op = getattr(npusim.ops, name).double
        np.testing.assert_array_equal(host(op(x)), [2.0, 4.0])
        with _IncludeDispatchKeyGuard(DispatchKey.AutocastCPU):
            y = op(x)
        np.testing.assert_array_equal(host(y), [20.0, 40.0])
        np.testing.assert_array_equal(host(op(x)), [2.0, 4.0])
    finally:
        g._destroy()


# --- thread-local include / exclude ------------------------------------------------------------------

def test_include_and_exclude_guards_change_dispatch_and_restore(ns):
    name, lib = ns
    lib.define("u(Tensor x) -> Tensor")
    lib.impl("u", tagger("cpu"), "CPU")
    lib.impl("u", tagger("cuda"), "CUDA")
    lib.impl("u", tagger("autocast"), "AutocastCPU")
    op = getattr(npusim.ops, name).u.default
    x = Fake("CPU", "CUDA")
    assert op(x) == "cuda"
    with _ExcludeDispatchKeyGuard(DispatchKeySet("CUDA")):
        assert _dispatch_tls_local_exclude_set() == DispatchKeySet("CUDA")
        assert op(x) == "cpu"
        with _IncludeDispatchKeyGuard(DispatchKey.AutocastCPU):
            assert _dispatch_tls_local_include_set() == DispatchKeySet("AutocastCPU")
            assert op(x) == "autocast"
        assert op(x) == "cpu"
    assert op(x) == "cuda"
    assert _dispatch_tls_local_include_set() == DispatchKeySet()
    assert _dispatch_tls_local_exclude_set() == DispatchKeySet()


def test_guards_are_per_thread(ns):
    name, lib = ns
    lib.define("v(Tensor x) -> Tensor")
    lib.impl("v", tagger("cpu"), "CPU")
    lib.impl("v", tagger("autocast"), "AutocastCPU")
    op = getattr(npusim.ops, name).v.default
    x = Fake("CPU")
    entered, checked = threading.Event(), threading.Event()
    results = {}

    def worker():
        entered.wait(5)
        results["other thread"] = op(x)
        checked.set()

    t = threading.Thread(target=worker)
    t.start()
    with _IncludeDispatchKeyGuard("AutocastCPU"):
        entered.set()
        checked.wait(5)
        results["guarded thread"] = op(x)
    t.join(5)
    assert results == {"other thread": "cpu", "guarded thread": "autocast"}

    # and the other way round: a guard inside a worker leaves this thread alone
    inside = threading.Event()
    release = threading.Event()

    def guarded_worker():
        with _IncludeDispatchKeyGuard("AutocastCPU"):
            results["worker"] = op(x)
            inside.set()
            release.wait(5)

    t = threading.Thread(target=guarded_worker)
    t.start()
    inside.wait(5)
    results["main"] = op(x)
    release.set()
    t.join(5)
    assert results["worker"] == "autocast" and results["main"] == "cpu"


# --- npusim.ops ----------------------------------------------------------------------------------------

def test_ops_namespace_packets_and_overloads(ns):
    name, lib = ns
    lib.define("w(Tensor x) -> Tensor")
    lib.define("w.two(Tensor x, Tensor y) -> Tensor")
    lib.define("w.Scalar(Tensor x, Scalar y) -> Tensor")
    lib.impl("w", tagger("default"), "CPU")
    lib.impl("w.two", tagger("two"), "CPU")
    lib.impl("w.Scalar", tagger("scalar"), "CPU")
    space = getattr(npusim.ops, name)
    packet = space.w
    assert packet.overloads() == ["default", "two", "Scalar"]
    assert packet.default is space.w.default
    x = npusim.ones(1)
    assert packet(x) == "default"
    assert packet(x, x) == "two"
    assert packet(x, 2) == "scalar"       # an exact match first: 2 is a Scalar, not a Tensor
    assert packet(2, x) == "two"          # then numbers are allowed in Tensor slots
    assert packet(x, y=x) == "two"
    with pytest.raises(RuntimeError, match="failed to match any schema") as info:
        packet(x, "s")
    assert f"{name}::w() expected at most 1 argument(s) but received 2 argument(s)" in str(info.value)
    assert f"{name}::w() Expected a value of type 'Tensor' for argument 'y' but instead found type 'str'" \
        in str(info.value)


def test_ops_attribute_errors(ns):
    name, lib = ns
    lib.define("z(Tensor x) -> Tensor")
    with pytest.raises(AttributeError, match=rf"^'_OpNamespace' '{name}' object has no attribute 'nothere'$"):
        getattr(npusim.ops, name).nothere
    with pytest.raises(AttributeError, match=rf"^The underlying op of '{name}.z' has no overload name 'nothere'$"):
        getattr(npusim.ops, name).z.nothere
    assert name in dir(npusim.ops) and "z" in dir(getattr(npusim.ops, name))


@pytest.mark.oracle
def test_ops_objects_read_like_torch(torch, ns):
    name, lib = ns
    lib.define("y(Tensor x) -> Tensor")
    lib.define("y.two(Tensor x, Tensor y) -> Tensor")
    tlib = torch.library.Library(name, "DEF")
    try:
        tlib.define("y(Tensor x) -> Tensor")
        tlib.define("y.two(Tensor x, Tensor y) -> Tensor")
        ours, theirs = getattr(npusim.ops, name).y, getattr(torch.ops, name).y
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
        assert ours.overloads() == theirs.overloads()
        assert repr(ours.default) == repr(theirs.default) and str(ours.two) == str(theirs.two)
        assert ours.default.name() == theirs.default.name() and ours.two.name() == theirs.two.name()
        assert ours.default.__name__ == theirs.default.__name__
        assert ours.default.namespace == theirs.default.namespace
        for getter in (lambda space: space.nothere, lambda space: space.y.nothere):
            with pytest.raises(AttributeError) as a:
                getter(getattr(npusim.ops, name))
            with pytest.raises(AttributeError) as b:
                getter(getattr(torch.ops, name))
            assert str(a.value) == str(b.value).split(". Did you mean")[0]
    finally:
        tlib._destroy()


def test_overload_objects_pickle_to_themselves_and_know_their_packet(ns):
    name, lib = ns
    lib.define("pk(Tensor x) -> Tensor")
    op = getattr(npusim.ops, name).pk.default
    assert pickle.loads(pickle.dumps(op)) is op
    assert op.overloadpacket is getattr(npusim.ops, name).pk
    assert str(op._schema) == "pk(Tensor x) -> Tensor"
    assert isinstance(op, dispatcher.OpOverload)


def test_aten_overloads_are_reachable_and_callable():
    x = npusim.tensor([1.0, 2.0])
    np.testing.assert_array_equal(host(npusim.ops.aten.add.Tensor(x, x, alpha=2)), [3.0, 6.0])
    np.testing.assert_array_equal(host(npusim.ops.aten.add(x, 1)), [2.0, 3.0])
    assert "Tensor" in npusim.ops.aten.add.overloads() and "out" in npusim.ops.aten.add.overloads()


# --- memo invalidation -----------------------------------------------------------------------------------

def test_new_and_removed_kernels_take_effect_on_the_next_call(ns, monkeypatch):
    name, lib = ns
    lib.define("n(Tensor x) -> Tensor")
    op = getattr(npusim.ops, name).n.default
    x = Fake("CPU")
    lib.impl("n", tagger("first"), "CPU")
    assert op(x) == "first"
    override = Library(name, "IMPL")
    monkeypatch.setattr(dispatcher, "_override_warned", True)  # the once-per-process warning is tested elsewhere
    override.impl("n", tagger("second"), "CPU")
    assert op(x) == "second"
    override._destroy()
    assert op(x) == "first"


def test_registration_while_other_threads_call_ops(ns, free_fallback, monkeypatch):
    name, lib = ns
    free_fallback("AutocastCPU")
    monkeypatch.setattr(dispatcher, "_override_warned", True)
    lib.define("busy(Tensor x) -> Tensor")
    lib.impl("busy", lambda x: "base", "CPU")
    lib.impl("busy", lambda x: "base", "CUDA")
    op = getattr(npusim.ops, name).busy.default
    valid = {"base", "cuda", "autocast"}
    errors, bad = [], []
    stop = threading.Event()

    def caller(x):
        try:
            while not stop.is_set():
                r = op(x)
                if r not in valid:
                    bad.append(r)
        except Exception as e:  # any crash fails the test below
            errors.append(e)

    threads = [threading.Thread(target=caller, args=(Fake(*keys),))
               for keys in (("CPU",), ("CPU", "CUDA"), ("CPU", "AutocastCPU"))]
    for t in threads:
        t.start()
    try:
        for _ in range(200):
            extra = Library(name, "IMPL")
            extra.impl("busy", lambda x: "cuda", "CUDA")
            extra.impl("busy", lambda x: "autocast", "AutocastCPU")
            extra._destroy()
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert not errors and not bad
    # no stale memo survives: after the last destroy the base kernel serves every key set again
    assert [op(Fake(*keys)) for keys in (("CPU",), ("CPU", "CUDA"), ("CPU", "AutocastCPU"))] == ["base"] * 3
