"""The stack walk that finds the user's frames: npusim's modules, package files and generated code are skipped."""
import sys
import warnings

import npusim
from npusim.core.c10 import codegen, user_frames


def test_generated_prefixes_cover_every_kind_of_generated_code():
    assert codegen.GENERATED_PREFIXES == tuple(f"<{k} " for k in codegen.KINDS)
    assert {"dispatch", "device guard", "capacity check", "complex check"} == set(codegen.KINDS)


def test_this_frame_is_the_users_and_a_dispatch_frame_is_npusims():
    assert not user_frames.is_internal(sys._getframe())
    x = npusim.ones(2)
    fn = npusim.ops.aten.add.Tensor.__call__
    assert fn.__code__.co_filename.startswith("<dispatch aten::add.Tensor ")
    frame_of_generated = []

    class Probe:     # a Tensor slot holding an object that is not a number: its error path runs in the frame
        @property
        def _ks(self):
            frame_of_generated.append(sys._getframe(1))
            raise AttributeError
    try:
        fn(x, Probe())
    except TypeError:
        pass
    assert frame_of_generated and frame_of_generated[0].f_code.co_filename.startswith("<dispatch ")
    assert user_frames.is_internal(frame_of_generated[0])


def _warn_from_npusim_like_code():
    # stands in for a kernel: a frame whose globals name an npusim module
    code = compile("def inner():\n    return user_stacklevel()\n", "<not npusim's file>", "exec")
    ns = {"__name__": "npusim.fake_kernel", "user_stacklevel": user_frames.user_stacklevel}
    exec(code, ns)
    return ns["inner"]


def test_user_stacklevel_names_the_first_frame_outside_npusim():
    inner = _warn_from_npusim_like_code()
    gen = {"__name__": "npusim.fake_caller", "inner": inner}
    exec(compile("def middle():\n    return inner()\n", "<fake>", "exec"), gen)
    level = gen["middle"]()   # inner (level 1) <- middle (npusim, level 2) <- this test (level 3)
    assert level == 3


def test_user_stacklevel_points_warnings_at_the_users_line():
    def warn_here():    # a frame of this test file: user code, so it warns at its caller's level 2
        warnings.warn("x", UserWarning, stacklevel=user_frames.user_stacklevel())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        warn_here(); line = sys._getframe().f_lineno  # noqa: E702
    assert w[0].filename == __file__ and w[0].lineno == line


def test_user_frames_keeps_user_frames_innermost_first_and_respects_limit():
    def a():
        return user_frames.user_frames(skip=-1)   # from a itself outwards
    frames = a()
    assert frames[0].f_code.co_name == "a"
    assert frames[1].f_code is sys._getframe().f_code
    assert all(not user_frames.is_internal(f) for f in frames)
    assert len(user_frames.user_frames(limit=1)) == 1


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return w


def test_indexing_warnings_name_the_users_line(monkeypatch):
    from npusim.native import indexing as indexing_ops
    monkeypatch.setattr(indexing_ops, "_scatter_reduce_warned", False)     # torch warns once per process
    expanded = npusim.zeros(3).expand(2, 3)
    w = _warnings_of(lambda: expanded.index_put_((npusim.tensor([0]),), npusim.tensor(1.0)))
    w += _warnings_of(lambda: npusim.zeros(3)[npusim.tensor([1, 0, 1], dtype=npusim.uint8)])
    w += _warnings_of(lambda: npusim.zeros(2, 3).scatter_(1, npusim.tensor([[0]]), npusim.ones(1, 1), reduce="add"))
    assert [str(r.message).split()[:2] for r in w] == [["Use", "of"], ["indexing", "with"], ["The", "reduce"]]
    assert all(r.filename == __file__ for r in w), [(r.filename, r.lineno) for r in w]
