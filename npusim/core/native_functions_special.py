"""Schemas of the torch.special primitives npusim computes with kernels of its own (PyTorch 2.13's
schemas, so overload and argument names match ``torch.ops.aten``). The other torch.special functions
compose from existing ops in ``npusim.special``."""

SCHEMAS = """
special_ndtr(Tensor self) -> Tensor
special_ndtr.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_log_ndtr(Tensor self) -> Tensor
special_log_ndtr.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_ndtri(Tensor self) -> Tensor
special_ndtri.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_erfcx(Tensor self) -> Tensor
special_erfcx.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_i0e(Tensor self) -> Tensor
special_i0e.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_i1e(Tensor self) -> Tensor
special_i1e.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_entr(Tensor self) -> Tensor
special_entr.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_xlog1py(Tensor self, Tensor other) -> Tensor
special_xlog1py.other_scalar(Tensor self, Scalar other) -> Tensor
special_xlog1py.self_scalar(Scalar self, Tensor other) -> Tensor
special_xlog1py.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
special_xlog1py.self_scalar_out(Scalar self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
special_xlog1py.other_scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
special_zeta(Tensor self, Tensor other) -> Tensor
special_zeta.other_scalar(Tensor self, Scalar other) -> Tensor
special_zeta.self_scalar(Scalar self, Tensor other) -> Tensor
special_zeta.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
special_zeta.self_scalar_out(Scalar self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
special_zeta.other_scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
"""
