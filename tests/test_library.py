"""``npusim.library.Library``: kinds, definitions, kernels, fallbacks and their errors (torch.library's)."""
from __future__ import annotations

import gc
import itertools
import re
import warnings

import pytest

import npusim
from npusim.core.dispatch import dispatcher
from npusim.library import DispatchKey, Library, fallthrough_kernel

_ids = itertools.count()


def fresh(prefix="tlib"):
    return f"{prefix}{next(_ids)}"


class Fake:
    """Stands in for a tensor: the dispatcher reads only ``_ks``."""

    def __init__(self, key="CPU"):
        self._ks = 1 << DispatchKey[key]


@pytest.fixture
def lib():
    library = Library(fresh(), "DEF")
    yield library
    library._destroy()


def raises_like_torch(torch_call, our_call, *, prefix_only=None, replace=()):
    """Both calls raise the same exception type; messages equal (or equal up to ``prefix_only``)."""
    with pytest.raises(Exception) as theirs:
        torch_call()
    with pytest.raises(Exception) as ours:
        our_call()
    assert type(ours.value) is type(theirs.value)
    a, b = str(ours.value), str(theirs.value)
    for old, new in replace:
        b = b.replace(old, new)
    if prefix_only is not None:
        a, b = a.split(prefix_only)[0], b.split(prefix_only)[0]
    assert a == b
    return ours.value


# --- kinds and namespaces --------------------------------------------------------------------------

def test_bad_kind():
    with pytest.raises(ValueError, match="^Unsupported kind: BAD$"):
        Library(fresh(), "BAD")


def test_reserved_namespace():
    with pytest.raises(ValueError, match="^prim is a reserved namespace. Please try creating a library with another "
                                         "name.$"):
        Library("prim", "DEF")
    with pytest.raises(ValueError, match="prim is a reserved namespace"):
        Library("prim", "FRAGMENT")
    Library("prim", "IMPL")._destroy()  # kernels may still be registered there, as in torch


def test_namespace_must_be_an_identifier():
    for bad in ("", "a.b", "1abc", "a b", 3):
        with pytest.raises(ValueError, match="a namespace is a Python identifier"):
            Library(bad, "DEF")


@pytest.mark.oracle
@pytest.mark.parametrize("ns,kind", [("x", "BAD"), ("prim", "DEF"), ("prim", "FRAGMENT")])
def test_kind_and_reserved_errors_match_torch(torch, ns, kind):
    raises_like_torch(lambda: torch.library.Library(ns, kind), lambda: Library(ns, kind))


def test_def_twice_names_both_places(lib):
    with pytest.raises(RuntimeError) as info:
        Library(lib.ns, "DEF")
    msg = str(info.value)
    assert msg.startswith(f"Only a single TORCH_LIBRARY can be used to register the namespace {lib.ns}; please put "
                          "all of your definitions in a single TORCH_LIBRARY block.")
    assert re.search(r"Previous registration of TORCH_LIBRARY was registered at .*test_library.py:\d+; latest "
                     r"registration was registered at .*test_library.py:\d+$", msg)
    Library(lib.ns, "FRAGMENT")._destroy()  # a fragment is the way to add more


def test_aten_is_already_defined():
    with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY can be used to register the namespace aten"):
        Library("aten", "DEF")


@pytest.mark.oracle
def test_def_twice_matches_torch(torch, lib):
    tns = fresh("npusim_def")
    tlib = torch.library.Library(tns, "DEF")
    try:
        raises_like_torch(lambda: torch.library.Library(tns, "DEF"), lambda: Library(lib.ns, "DEF"),
                          prefix_only="Previous registration", replace=[(tns, lib.ns)])
    finally:
        tlib._destroy()


def test_destroying_the_def_library_frees_the_namespace():
    ns = fresh()
    first = Library(ns, "DEF")
    first.define("f(Tensor x) -> Tensor")
    first._destroy()
    second = Library(ns, "DEF")
    second.define("f(Tensor x) -> Tensor")  # no duplicate: the first definition went with its library
    second._destroy()


def test_repr_matches_torch_format(lib):
    assert repr(lib) == f"Library(kind=DEF, ns={lib.ns}, dispatch_key=)>"
    impl = Library(lib.ns, "IMPL", "CPU")
    assert repr(impl) == f"Library(kind=IMPL, ns={lib.ns}, dispatch_key=CPU)>"
    impl._destroy()


# --- define ---------------------------------------------------------------------------------------------

def test_define_returns_the_operator_name_and_creates_ops(lib):
    assert lib.define("bar(Tensor x) -> Tensor") == "bar"
    assert lib.define("bar.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)") == "bar"
    space = getattr(npusim.ops, lib.ns)
    assert space.bar.overloads() == ["default", "out"]
    assert str(space.bar.out._schema) == "bar.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"


@pytest.mark.oracle
def test_define_return_value_matches_torch(torch, lib):
    tlib = torch.library.Library(fresh("npusim_ret"), "DEF")
    try:
        for schema in ("bar(Tensor x) -> Tensor", "bar.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"):
            assert lib.define(schema) == tlib.define(schema)
    finally:
        tlib._destroy()


def test_duplicate_define(lib):
    lib.define("dup(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match=re.escape(
            f"Tried to register an operator ({lib.ns}::dup(Tensor x) -> Tensor) with the same name and overload "
            "name multiple times. Each overload's schema should only be registered with a single call to def().")):
        lib.define("dup(Tensor x) -> Tensor")
    frag = Library(lib.ns, "FRAGMENT")
    with pytest.raises(RuntimeError, match="with the same name and overload name multiple times"):
        frag.define("dup(Tensor y) -> Tensor")
    frag._destroy()


@pytest.mark.oracle
def test_duplicate_define_matches_torch(torch, lib):
    tlib = torch.library.Library(lib.ns, "DEF")
    try:
        tlib.define("dup(Tensor x) -> Tensor")
        lib.define("dup(Tensor x) -> Tensor")
        raises_like_torch(lambda: tlib.define("dup(Tensor x) -> Tensor"),
                          lambda: lib.define("dup(Tensor x) -> Tensor"), prefix_only=" Duplicate registration")
    finally:
        tlib._destroy()


def test_define_in_an_impl_library(lib):
    impl = Library(lib.ns, "IMPL")
    with pytest.raises(RuntimeError, match=re.escape('def("zz"): Cannot define an operator inside of a '
                                                     "TORCH_LIBRARY_IMPL block.")):
        impl.define("zz(Tensor x) -> Tensor")
    impl._destroy()


def test_define_with_namespace_in_schema(lib):
    assert lib.define(f"{lib.ns}::own(Tensor x) -> Tensor") == f"{lib.ns}::own"
    assert getattr(npusim.ops, lib.ns).own.default.name() == f"{lib.ns}::own"
    with pytest.raises(RuntimeError, match=re.escape(
            f"Explicitly provided namespace (other) in schema string does not match namespace of enclosing "
            f"TORCH_LIBRARY block ({lib.ns}).")):
        lib.define("other::qux(Tensor x) -> Tensor")


@pytest.mark.oracle
def test_define_errors_match_torch(torch, lib):
    tlib = torch.library.Library(lib.ns, "DEF")
    timpl = torch.library.Library(lib.ns, "IMPL")
    impl = Library(lib.ns, "IMPL")
    try:
        raises_like_torch(lambda: tlib.define("other::qux(Tensor x) -> Tensor"),
                          lambda: lib.define("other::qux(Tensor x) -> Tensor"), prefix_only="  (Error occurred")
        raises_like_torch(lambda: timpl.define("zz(Tensor x) -> Tensor"),
                          lambda: impl.define("zz(Tensor x) -> Tensor"), prefix_only="  (Error occurred")
        raises_like_torch(lambda: tlib.define("zz(Tensor x) -> Tensor", alias_analysis="BAD"),
                          lambda: lib.define("zz(Tensor x) -> Tensor", alias_analysis="BAD"))
        raises_like_torch(lambda: tlib.define("zz(Tensr x) -> Tensor"), lambda: lib.define("zz(Tensr x) -> Tensor"))
    finally:
        impl._destroy()
        timpl._destroy()
        tlib._destroy()


def test_malformed_schema_names_the_bad_token(lib):
    with pytest.raises(RuntimeError) as info:
        lib.define("bad(Tensor x) Tensor")
    msg = str(info.value)
    assert msg.startswith("expected arrow but found 'ident' here:\nbad(Tensor x) Tensor\n")
    marker_line = msg.splitlines()[2]
    start = marker_line.index("~")
    assert "bad(Tensor x) Tensor"[start:start + marker_line.count("~")] == "Tensor"
    assert not hasattr(getattr(npusim.ops, lib.ns), "bad")


def test_invalid_alias_analysis(lib):
    with pytest.raises(RuntimeError, match="^Invalid alias_analysis type BAD$"):
        lib.define("zz(Tensor x) -> Tensor", alias_analysis="BAD")
    assert lib.define("zz(Tensor x) -> Tensor", alias_analysis="CONSERVATIVE") == "zz"


# --- impl ------------------------------------------------------------------------------------------------

def test_impl_registers_for_the_given_or_default_key(lib):
    lib.define("f(Tensor x) -> Tensor")
    lib.define("g(Tensor x) -> Tensor")
    lib.impl("f", lambda x: "cpu", "CPU")
    lib.impl("g", lambda x: "composite")  # no key: CompositeImplicitAutograd, as in torch
    keyed = Library(lib.ns, "IMPL", "CUDA")
    keyed.impl("f", lambda x: "cuda")     # the library's own key
    space = getattr(npusim.ops, lib.ns)
    assert space.f(Fake("CPU")) == "cpu" and space.f(Fake("CUDA")) == "cuda"
    assert space.g.default.has_kernel_for_dispatch_key("CompositeImplicitAutograd")
    assert space.g(Fake("CUDA")) == "composite"
    keyed._destroy()


def test_impl_accepts_overload_objects_and_qualified_names(lib):
    lib.define("h(Tensor x) -> Tensor")
    lib.define("h.two(Tensor x, Tensor y) -> Tensor")
    space = getattr(npusim.ops, lib.ns)
    lib.impl(space.h.two, lambda x, y: "two", "CPU")
    lib.impl(f"{lib.ns}::h", lambda x: "one", "CPU")
    assert space.h.two(Fake(), Fake()) == "two" and space.h.default(Fake()) == "one"


def test_impl_errors(lib):
    lib.define("e(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="^could not parse dispatch key: Foo$"):
        lib.impl("e", lambda x: x, "Foo")
    with pytest.raises(RuntimeError, match="^could not parse dispatch key: cpu$"):
        lib.impl("e", lambda x: x, "cpu")
    with pytest.raises(RuntimeError, match="^could not parse dispatch key: Foo$"):
        Library(lib.ns, "IMPL", "Foo")
    with pytest.raises(TypeError, match="^Input function is required to be a callable but found type <class 'int'>$"):
        lib.impl("e", 3, "CPU")
    with pytest.raises(RuntimeError, match="^impl should be passed either a name or an OpOverload object as the "
                                           "first argument, got <class 'int'>$"):
        lib.impl(3, lambda x: x, "CPU")
    with pytest.raises(RuntimeError, match=re.escape(
            f'impl("zz::foo", ...): Explicitly provided namespace (zz) in operator name does not match namespace '
            f"of enclosing TORCH_LIBRARY block ({lib.ns}).")):
        lib.impl("zz::foo", lambda x: x, "CPU")
    with pytest.raises(RuntimeError, match="^operator aten::no_such_op does not exist"):
        Library("aten", "IMPL").impl("no_such_op", lambda x: x, "CPU")


def test_impl_without_override_on_an_existing_kernel(lib):
    lib.define("o(Tensor x) -> Tensor")
    lib.impl("o", lambda x: "first", "CPU")
    with pytest.raises(RuntimeError, match=re.escape(
            f"This is not allowed since there's already a kernel registered from python overriding o's behavior "
            f"for CPU dispatch key and {lib.ns} namespace.")):
        lib.impl("o", lambda x: "second", "CPU", allow_override=False)
    assert getattr(npusim.ops, lib.ns).o(Fake()) == "first"
    lib.impl("o", lambda x: "cuda", "CUDA", allow_override=False)  # another key is not an override


def test_override_warns_once_per_process(lib, monkeypatch):
    monkeypatch.setattr(dispatcher, "_override_warned", False)
    lib.define("w(Tensor x) -> Tensor")
    lib.define("w2(Tensor x) -> Tensor")
    lib.impl("w", lambda x: "first", "CPU")
    lib.impl("w2", lambda x: "first", "CPU")
    with pytest.warns(UserWarning, match=r"(?s)Overriding a previously registered kernel for the same operator and "
                                         rf"the same dispatch key\n  operator: {lib.ns}::w\(Tensor x\) -> Tensor\n"
                                         r"  dispatch key: CPU"):
        lib.impl("w", lambda x: "second", "CPU")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lib.impl("w2", lambda x: "second", "CPU")
    space = getattr(npusim.ops, lib.ns)
    assert space.w(Fake()) == "second" and space.w2(Fake()) == "second"


@pytest.mark.oracle
def test_impl_errors_match_torch(torch, lib):
    tlib = torch.library.Library(lib.ns, "DEF")
    try:
        tlib.define("e(Tensor x) -> Tensor")
        lib.define("e(Tensor x) -> Tensor")
        for args in (("e", lambda x: x, "Foo"), ("e", lambda x: x, "cpu"), ("e", 3, "CPU"), (3, lambda x: x, "CPU")):
            raises_like_torch(lambda: tlib.impl(*args), lambda: lib.impl(*args))
        raises_like_torch(lambda: tlib.impl("zz::foo", lambda x: x, "CPU"),
                          lambda: lib.impl("zz::foo", lambda x: x, "CPU"), prefix_only="  (Error occurred")
        tlib.impl("e", lambda x: x.clone(), "CPU")
        lib.impl("e", lambda x: x, "CPU")
        raises_like_torch(lambda: tlib.impl("e", lambda x: x, "CPU", allow_override=False),
                          lambda: lib.impl("e", lambda x: x, "CPU", allow_override=False))
    finally:
        tlib._destroy()


def test_impl_before_define_waits_for_the_definition():
    ns = fresh()
    impl = Library(ns, "IMPL")
    impl.impl("later", lambda x: "early kernel", "CPU")
    assert not hasattr(npusim.ops, ns) or not hasattr(getattr(npusim.ops, ns), "later")
    defs = Library(ns, "DEF")
    defs.define("later(Tensor x) -> Tensor")
    assert getattr(npusim.ops, ns).later(Fake()) == "early kernel"
    # the definition goes and comes back: the IMPL library's kernel is still there, as in torch
    defs._destroy()
    assert not hasattr(getattr(npusim.ops, ns), "later")
    again = Library(ns, "DEF")
    again.define("later(Tensor x) -> Tensor")
    assert getattr(npusim.ops, ns).later(Fake()) == "early kernel"
    impl._destroy()
    with pytest.raises(NotImplementedError, match=f"Could not run '{ns}::later'"):
        getattr(npusim.ops, ns).later(Fake())
    again._destroy()


@pytest.mark.oracle
def test_impl_before_define_matches_torch(torch):
    ns = fresh("npusim_pending")
    impl = torch.library.Library(ns, "IMPL")
    impl.impl("later", lambda x: x * 2, "CPU")
    defs = torch.library.Library(ns, "DEF")
    defs.define("later(Tensor x) -> Tensor")
    try:
        assert getattr(torch.ops, ns).later(torch.ones(1)).item() == 2.0
    finally:
        defs._destroy()
        impl._destroy()


def test_kernels_of_a_destroyed_library_never_reach_a_later_definition():
    ns = fresh()
    impl = Library(ns, "IMPL")
    impl.impl("late", lambda x: "stale", "CPU")
    impl._destroy()
    defs = Library(ns, "DEF")
    defs.define("late(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError, match="Could not run"):
        getattr(npusim.ops, ns).late(Fake())
    defs._destroy()


# --- fallback ----------------------------------------------------------------------------------------------

def test_fallback_errors(lib):
    with pytest.raises(RuntimeError, match=f'^Fallback can only be registered using library fragment on the global '
                                           f'namespace "_" but it is {lib.ns}$'):
        lib.fallback(lambda op, *a, **k: None, "CPU")
    g = Library("_", "IMPL")
    with pytest.raises(AssertionError, match="^dispatch_key must not be empty for fallback$"):
        g.fallback(lambda op, *a, **k: None)
    with pytest.raises(RuntimeError, match="^could not parse dispatch key: Foo$"):
        g.fallback(lambda op, *a, **k: None, "Foo")
    with pytest.raises(RuntimeError, match="cannot register a fallback for the alias key Autograd"):
        g.fallback(lambda op, *a, **k: None, "Autograd")
    with pytest.raises(TypeError, match="Input function is required to be a callable"):
        g.fallback(3, "CPU")
    g._destroy()


def test_one_fallback_per_key():
    key = "AutocastCUDA"
    saved = dispatcher._FALLBACKS.pop(DispatchKey[key], None)
    first, second = Library("_", "IMPL"), Library("_", "IMPL")
    try:
        first.fallback(lambda op, *a, **k: None, key)
        with pytest.raises(RuntimeError, match=r"^Tried to register multiple backend fallbacks for the same dispatch "
                                               r"key AutocastCUDA; previous registration registered at "
                                               r".*test_library.py:\d+, new registration registered at "
                                               r".*test_library.py:\d+$"):
            second.fallback(lambda op, *a, **k: None, key)
        first._destroy()
        second.fallback(lambda op, *a, **k: None, key)  # free again once the first library is gone
        assert dispatcher.has_fallback(key)
        second._destroy()
        assert not dispatcher.has_fallback(key)
    finally:
        first._destroy()
        second._destroy()
        if saved is not None:
            dispatcher._FALLBACKS[DispatchKey[key]] = saved


@pytest.mark.oracle
def test_fallback_errors_match_torch(torch, lib):
    tlib = torch.library.Library(lib.ns, "DEF")
    try:
        raises_like_torch(lambda: tlib.fallback(lambda *a: None, "CPU"), lambda: lib.fallback(lambda *a: None, "CPU"))
        tg, g = torch.library.Library("_", "IMPL"), Library("_", "IMPL")
        raises_like_torch(lambda: tg.fallback(lambda *a: None), lambda: g.fallback(lambda *a: None))
        raises_like_torch(lambda: tg.fallback(lambda *a: None, "Foo"), lambda: g.fallback(lambda *a: None, "Foo"))
        tg._destroy()
        g._destroy()
    finally:
        tlib._destroy()


# --- destruction -------------------------------------------------------------------------------------------

def test_destroy_removes_definitions_kernels_and_fallbacks():
    ns = fresh()
    defs = Library(ns, "DEF")
    defs.define("d(Tensor x) -> Tensor")
    impl = Library(ns, "IMPL")
    impl.impl("d", lambda x: "cpu", "CPU")
    key = DispatchKey.AutocastCUDA
    saved = dispatcher._FALLBACKS.pop(key, None)
    g = Library("_", "IMPL")
    g.fallback(lambda op, *a, **k: "fallback", key.name)
    try:
        op = getattr(npusim.ops, ns).d.default
        assert op(Fake("CPU")) == "cpu"
        impl._destroy()
        assert not op.has_kernel_for_dispatch_key("CPU")
        with pytest.raises(NotImplementedError):
            op(Fake("CPU"))
        g._destroy()
        assert not dispatcher.has_fallback(key)
        defs._destroy()
        assert not hasattr(getattr(npusim.ops, ns), "d")
        with pytest.raises(AssertionError, match="^Library object has been destroyed$"):
            defs.define("again(Tensor x) -> Tensor")
        with pytest.raises(AssertionError, match="^Library object has been destroyed$"):
            impl.impl("d", lambda x: x, "CPU")
        with pytest.raises(AssertionError, match="^Library object has been destroyed$"):
            g.fallback(lambda op, *a, **k: None, key.name)
        defs._destroy()  # a second destroy is harmless
    finally:
        if saved is not None:
            dispatcher._FALLBACKS[key] = saved


def test_garbage_collection_destroys_a_library():
    ns = fresh()
    defs = Library(ns, "DEF")
    defs.define("gc_op(Tensor x) -> Tensor")
    op = getattr(npusim.ops, ns).gc_op.default
    impl = Library(ns, "IMPL")
    impl.impl("gc_op", lambda x: "cpu", "CPU")
    assert op(Fake()) == "cpu"
    del impl
    gc.collect()
    assert not op.has_kernel_for_dispatch_key("CPU")
    del defs
    gc.collect()
    assert not hasattr(getattr(npusim.ops, ns), "gc_op")
    Library(ns, "DEF")._destroy()  # the namespace is free again


# --- module-level helpers ------------------------------------------------------------------------------------

def test_module_level_define_and_impl():
    ns = fresh()
    lib = npusim.library.define(f"{ns}::mod_op", "(Tensor x) -> Tensor")
    npusim.library.impl(f"{ns}::mod_op", "cpu", lambda x: "cpu", lib=lib)

    @npusim.library.impl(f"{ns}::mod_op", ["cuda", "default"], lib=lib)
    def composite(x):
        return "composite"

    space = getattr(npusim.ops, ns)
    assert space.mod_op(Fake("CPU")) == "cpu" and space.mod_op(Fake("CUDA")) == "composite"
    assert space.mod_op.default.has_kernel_for_dispatch_key("CompositeExplicitAutograd")
    with pytest.raises(ValueError, match="expected qualname to be 'namespace::name', got mod_op"):
        npusim.library.define("mod_op", "(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="^could not parse dispatch key: tpu$"):
        npusim.library.impl(f"{ns}::mod_op", "tpu", lambda x: x, lib=lib)
    lib._destroy()


def test_fallthrough_kernel_is_exported():
    assert npusim.library.fallthrough_kernel is fallthrough_kernel
