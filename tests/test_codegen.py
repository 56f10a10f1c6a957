"""Generated code (dispatch functions, device guards, capacity checks) has source a reader and a debugger can open."""
import inspect
import linecache
import traceback

import pytest

import npusim
from npusim.core.c10 import codegen, device_guard


def test_generated_source_of_add_shows_its_dispatch_function_guard_and_capacity_check():
    src = npusim.library.generated_source("aten::add.Tensor")
    print(src)
    assert "# <dispatch aten::add.Tensor #" in src
    assert "(self, other, *, alpha=_d_alpha):" in src
    assert "fn = resolve(op, ks)" in src
    assert "# <device guard aten::add.Tensor #" in src
    assert "# <capacity check aten::add.Tensor #" in src     # the npu checks the capacity before an add
    assert npusim.library.generated_source(npusim.ops.aten.add.Tensor) == src


def test_default_overloads_are_named_either_way():
    assert npusim.library.generated_source("aten::sin.default") == npusim.library.generated_source("sin")
    with pytest.raises(KeyError, match="no operator named 'aten::no_such_op'"):
        npusim.library.generated_source("aten::no_such_op")


def test_source_of_a_generated_function_and_of_a_wrapper_around_one():
    fn = npusim.ops.aten.mul.Tensor.fn
    assert codegen.source_of(fn) in codegen.source_of("aten::mul.Tensor")
    assert inspect.getsource(fn).lstrip().startswith("def _dispatch(self, other):")

    def wrapper(*a):
        return fn(*a)
    wrapper.__wrapped__ = fn
    assert codegen.source_of(wrapper) == codegen.source_of(fn)
    with pytest.raises(KeyError):
        codegen.source_of(len)
    assert codegen.generated("") == {}      # templates serve no op of their own


@pytest.fixture
def exploding_op():
    lib = npusim.library.Library("codegentest", "DEF")
    lib.define("explode(Tensor x, *, int k=2) -> Tensor")

    def kernel(x, *, k=2):
        raise ValueError("boom")
    lib.impl("explode", kernel, "CPU")
    yield npusim.ops.codegentest.explode.default, kernel
    lib._destroy()


def _generated_frames(exc, prefix):
    return [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(prefix)]


def test_a_traceback_through_a_dispatch_function_shows_its_source_line(exploding_op):
    op, _ = exploding_op
    linecache.checkcache()     # what traceback printing does first: generated sources stay
    with pytest.raises(ValueError, match="boom") as info:
        op(npusim.ones(1))
    [frame] = _generated_frames(info.value, "<dispatch codegentest::explode")
    assert frame.name == "explode"
    assert frame.line == "return fn(x, k=k)"
    assert "return fn(x, k=k)" in "".join(traceback.format_exception(info.value))


def test_a_traceback_through_a_device_guard_shows_its_source_line(exploding_op):
    op, kernel = exploding_op
    guarded = device_guard.guard_factory(op, "privateuseone")(kernel, device_guard.get_guard_impl("npu"))
    assert guarded.__name__ == "explode_device_guard" and guarded.__wrapped__ is kernel
    with pytest.raises(ValueError, match="boom") as info:
        guarded(npusim.ones(1, device="npu"))
    [frame] = _generated_frames(info.value, "<device guard codegentest::explode")
    assert frame.line == "return _fn(x, k=k)"


def test_a_traceback_through_a_capacity_check_shows_its_source_line(exploding_op):
    from npusim.backend import capacity
    _, kernel = exploding_op
    checked = capacity._checked(kernel, capacity._same_as_self, 1, "codegentest::explode")
    with pytest.raises(ValueError, match="boom") as info:
        checked(npusim.ones(1, device="npu"))
    [frame] = _generated_frames(info.value, "<capacity check codegentest::explode")
    assert frame.line == "return _kernel(x, k=k)"
    assert "def kernel_with_capacity_check(x, *, k=_default1):" in codegen.source_of("codegentest::explode")


def test_overloads_with_one_signature_share_one_compiled_template():
    neg, abs_ = npusim.ops.aten.neg.default.fn, npusim.ops.aten.abs.default.fn
    assert neg.__code__.co_code == abs_.__code__.co_code
    assert neg.__code__.co_filename != abs_.__code__.co_filename
    assert codegen.source_of(neg) == codegen.source_of(abs_)


def test_signature_of_a_schema_and_of_a_callable():
    schema = npusim.ops.aten.add.Tensor._schema
    sig = codegen.Signature.of_schema(schema, reserved=("other",))
    assert sig.parameters == "self, other, *, alpha=_d_alpha"
    assert (sig.call, sig.args_tuple, sig.kwargs_dict) == ("self, other, alpha=alpha", "(self, other, )",
                                                          "{'alpha': alpha}")
    assert sig.fresh("other") == "_other"
    assert codegen.Signature.of_callable(inspect.signature(lambda *a: 0)) is None
    sig = codegen.Signature.of_callable(inspect.signature(lambda a, b=3, *, c=4: 0))
    assert sig.parameters == "a, b=_d_b, *, c=_d_c" and sig.defaults == {"_d_b": 3, "_d_c": 4}
