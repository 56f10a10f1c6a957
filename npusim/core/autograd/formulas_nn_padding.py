"""Backward formulas of padding: constant, reflection and replication (and of their backward ops)."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative


@derivative("constant_pad_nd", save=("pad",))
def constant_pad_backward(ctx, g):
    # the gradient of padding is a crop and that of a crop a zero padding: the same op, amounts negated
    return aten.constant_pad_nd.default(g, [-p for p in ctx.pad], 0)


def _mode_pad_formulas(name):
    forward = getattr(aten, name).default
    backward = getattr(aten, name + "_backward").default

    @derivative(name, save=("self", "padding"))
    def pad_backward(ctx, g):
        return backward(g, ctx.self, ctx.padding)

    @derivative(name + "_backward", inputs=("grad_output",), save=("padding",))
    def pad_double_backward(ctx, gg):
        return forward(gg, ctx.padding)


for _name in ("reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d", "replication_pad2d",
              "replication_pad3d"):
    _mode_pad_formulas(_name)
