"""Schemas of the extra elementwise math ops: inverse hyperbolics, special functions, float and
integer binary math (xlogy, hypot, copysign, fmax, gcd, shifts...) and sign/infinity predicates.

PyTorch 2.13's own schemas, so overload and argument names match ``torch.ops.aten``. The functional
overloads of acosh, asinh, atanh, erfinv and logit are defined with the nn schemas.
"""

SCHEMAS = """
acosh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
acosh_(Tensor(a!) self) -> Tensor(a!)
asinh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
asinh_(Tensor(a!) self) -> Tensor(a!)
atanh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
atanh_(Tensor(a!) self) -> Tensor(a!)
erfc(Tensor self) -> Tensor
erfc.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
erfc_(Tensor(a!) self) -> Tensor(a!)
erfinv.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
erfinv_(Tensor(a!) self) -> Tensor(a!)
lgamma(Tensor self) -> Tensor
lgamma.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
lgamma_(Tensor(a!) self) -> Tensor(a!)
digamma(Tensor self) -> Tensor
digamma.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
digamma_(Tensor(a!) self) -> Tensor(a!)
polygamma(int n, Tensor self) -> Tensor
polygamma.out(int n, Tensor self, *, Tensor(a!) out) -> Tensor(a!)
polygamma_(Tensor(a!) self, int n) -> Tensor(a!)
i0(Tensor self) -> Tensor
i0.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
i0_(Tensor(a!) self) -> Tensor(a!)
special_i1(Tensor self) -> Tensor
special_i1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
sinc(Tensor self) -> Tensor
sinc.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
sinc_(Tensor(a!) self) -> Tensor(a!)
logit.out(Tensor self, float? eps=None, *, Tensor(a!) out) -> Tensor(a!)
logit_(Tensor(a!) self, float? eps=None) -> Tensor(a!)
xlogy.Tensor(Tensor self, Tensor other) -> Tensor
xlogy.Scalar_Other(Tensor self, Scalar other) -> Tensor
xlogy.Scalar_Self(Scalar self, Tensor other) -> Tensor
xlogy.OutTensor(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
xlogy.OutScalar_Self(Scalar self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
xlogy.OutScalar_Other(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
xlogy_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
xlogy_.Scalar_Other(Tensor(a!) self, Scalar other) -> Tensor(a!)
hypot(Tensor self, Tensor other) -> Tensor
hypot.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
hypot_(Tensor(a!) self, Tensor other) -> Tensor(a!)
copysign.Tensor(Tensor self, Tensor other) -> Tensor
copysign.Scalar(Tensor self, Scalar other) -> Tensor
copysign.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
copysign.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
copysign_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
copysign_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
fmax(Tensor self, Tensor other) -> Tensor
fmax.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
fmin(Tensor self, Tensor other) -> Tensor
fmin.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
frac(Tensor self) -> Tensor
frac.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
frac_(Tensor(a!) self) -> Tensor(a!)
heaviside(Tensor self, Tensor values) -> Tensor
heaviside.out(Tensor self, Tensor values, *, Tensor(a!) out) -> Tensor(a!)
heaviside_(Tensor(a!) self, Tensor values) -> Tensor(a!)
float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor
float_power.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
float_power.Scalar(Scalar self, Tensor exponent) -> Tensor
float_power.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)
float_power.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)
float_power.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)
float_power_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)
float_power_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)
logaddexp(Tensor self, Tensor other) -> Tensor
logaddexp.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
logaddexp2(Tensor self, Tensor other) -> Tensor
logaddexp2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
nextafter(Tensor self, Tensor other) -> Tensor
nextafter.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
nextafter_(Tensor(a!) self, Tensor other) -> Tensor(a!)
ldexp.Tensor(Tensor self, Tensor other) -> Tensor
ldexp.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
ldexp_(Tensor(a!) self, Tensor other) -> Tensor(a!)
deg2rad(Tensor self) -> Tensor
deg2rad.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
deg2rad_(Tensor(a!) self) -> Tensor(a!)
rad2deg(Tensor self) -> Tensor
rad2deg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
rad2deg_(Tensor(a!) self) -> Tensor(a!)
gcd(Tensor self, Tensor other) -> Tensor
gcd.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
gcd_(Tensor(a!) self, Tensor other) -> Tensor(a!)
lcm(Tensor self, Tensor other) -> Tensor
lcm.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
lcm_(Tensor(a!) self, Tensor other) -> Tensor(a!)
bitwise_left_shift.Tensor(Tensor self, Tensor other) -> Tensor
bitwise_left_shift.Tensor_Scalar(Tensor self, Scalar other) -> Tensor
bitwise_left_shift.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
bitwise_left_shift.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_left_shift.Tensor_Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_left_shift.Scalar_Tensor_out(Scalar self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_left_shift_.Tensor_Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
bitwise_left_shift_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
bitwise_right_shift.Tensor(Tensor self, Tensor other) -> Tensor
bitwise_right_shift.Tensor_Scalar(Tensor self, Scalar other) -> Tensor
bitwise_right_shift.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
bitwise_right_shift.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_right_shift.Tensor_Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_right_shift.Scalar_Tensor_out(Scalar self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_right_shift_.Tensor_Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
bitwise_right_shift_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
isneginf(Tensor self) -> Tensor
isneginf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
isposinf(Tensor self) -> Tensor
isposinf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
isreal(Tensor self) -> Tensor
signbit(Tensor self) -> Tensor
signbit.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
"""
