"""The aten operators npusim defines, in PyTorch's schema language: one table, grouped by family.

The schemas are PyTorch 2.13's own, so overload names, argument names, defaults and aliasing match
``torch.ops.aten``. Kernels are registered separately, per dispatch key, by the CPU registration and by
backends; composite ones (``linear``, ``layer_norm``, most of ``torch.linalg``...) decompose into other ops,
so their gradients come from the parts. Lines starting with ``#`` head a family.
"""

SCHEMAS = """
# == elementwise: arithmetic, comparison, logical and bitwise ops, where, clamp, lerp, the unary math ops
add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)
sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)
rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
mul.Tensor(Tensor self, Tensor other) -> Tensor
mul.Scalar(Tensor self, Scalar other) -> Tensor
mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
div.Tensor(Tensor self, Tensor other) -> Tensor
div.Scalar(Tensor self, Scalar other) -> Tensor
div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor
div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor
div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)
div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)
div_.Scalar_mode(Tensor(a!) self, Scalar other, *, str? rounding_mode) -> Tensor(a!)
pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor
pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
pow.Scalar(Scalar self, Tensor exponent) -> Tensor
pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)
pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)
pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)
pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)
pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)
remainder.Tensor(Tensor self, Tensor other) -> Tensor
remainder.Scalar(Tensor self, Scalar other) -> Tensor
remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
remainder.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
remainder.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
remainder_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
remainder_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
fmod.Tensor(Tensor self, Tensor other) -> Tensor
fmod.Scalar(Tensor self, Scalar other) -> Tensor
fmod.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
fmod.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
fmod_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
fmod_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
floor_divide(Tensor self, Tensor other) -> Tensor
floor_divide.Scalar(Tensor self, Scalar other) -> Tensor
floor_divide.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
floor_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
floor_divide_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
maximum(Tensor self, Tensor other) -> Tensor
maximum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
minimum(Tensor self, Tensor other) -> Tensor
minimum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
atan2(Tensor self, Tensor other) -> Tensor
atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
atan2_(Tensor(a!) self, Tensor other) -> Tensor(a!)
eq.Tensor(Tensor self, Tensor other) -> Tensor
eq.Scalar(Tensor self, Scalar other) -> Tensor
eq.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
eq.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
eq_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
eq_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
ne.Tensor(Tensor self, Tensor other) -> Tensor
ne.Scalar(Tensor self, Scalar other) -> Tensor
ne.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
ne.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
ne_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
ne_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
lt.Tensor(Tensor self, Tensor other) -> Tensor
lt.Scalar(Tensor self, Scalar other) -> Tensor
lt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
lt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
lt_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
lt_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
le.Tensor(Tensor self, Tensor other) -> Tensor
le.Scalar(Tensor self, Scalar other) -> Tensor
le.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
le.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
le_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
le_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
gt.Tensor(Tensor self, Tensor other) -> Tensor
gt.Scalar(Tensor self, Scalar other) -> Tensor
gt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
gt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
gt_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
gt_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
ge.Tensor(Tensor self, Tensor other) -> Tensor
ge.Scalar(Tensor self, Scalar other) -> Tensor
ge.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
ge.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
ge_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
ge_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
logical_and(Tensor self, Tensor other) -> Tensor
logical_and.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
logical_and_(Tensor(a!) self, Tensor other) -> Tensor(a!)
logical_or(Tensor self, Tensor other) -> Tensor
logical_or.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
logical_or_(Tensor(a!) self, Tensor other) -> Tensor(a!)
logical_xor(Tensor self, Tensor other) -> Tensor
logical_xor.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
logical_xor_(Tensor(a!) self, Tensor other) -> Tensor(a!)
logical_not(Tensor self) -> Tensor
logical_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
logical_not_(Tensor(a!) self) -> Tensor(a!)
bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor
bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor
bitwise_and.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_and.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_and_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
bitwise_and_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor
bitwise_or.Scalar(Tensor self, Scalar other) -> Tensor
bitwise_or.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_or.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_or_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
bitwise_or_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor
bitwise_xor.Scalar(Tensor self, Scalar other) -> Tensor
bitwise_xor.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_xor.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
bitwise_xor_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
bitwise_xor_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
bitwise_not(Tensor self) -> Tensor
bitwise_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
bitwise_not_(Tensor(a!) self) -> Tensor(a!)
lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor
lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor
lerp.Scalar_out(Tensor self, Tensor end, Scalar weight, *, Tensor(a!) out) -> Tensor(a!)
lerp.Tensor_out(Tensor self, Tensor end, Tensor weight, *, Tensor(a!) out) -> Tensor(a!)
lerp_.Scalar(Tensor(a!) self, Tensor end, Scalar weight) -> Tensor(a!)
lerp_.Tensor(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)
where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor
where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor
where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor
where(Tensor condition) -> Tensor[]
where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor
clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)
clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out) -> Tensor(a!)
clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)
clamp_.Tensor(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)
clamp_min(Tensor self, Scalar min) -> Tensor
clamp_min.Tensor(Tensor self, Tensor min) -> Tensor
clamp_max(Tensor self, Scalar max) -> Tensor
clamp_max.Tensor(Tensor self, Tensor max) -> Tensor
clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)
clamp_max_(Tensor(a!) self, Scalar max) -> Tensor(a!)
neg(Tensor self) -> Tensor
neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
neg_(Tensor(a!) self) -> Tensor(a!)
abs(Tensor self) -> Tensor
abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
abs_(Tensor(a!) self) -> Tensor(a!)
exp(Tensor self) -> Tensor
exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
exp_(Tensor(a!) self) -> Tensor(a!)
log(Tensor self) -> Tensor
log.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
log_(Tensor(a!) self) -> Tensor(a!)
log1p(Tensor self) -> Tensor
log1p.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
log1p_(Tensor(a!) self) -> Tensor(a!)
expm1(Tensor self) -> Tensor
expm1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
expm1_(Tensor(a!) self) -> Tensor(a!)
sqrt(Tensor self) -> Tensor
sqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
sqrt_(Tensor(a!) self) -> Tensor(a!)
rsqrt(Tensor self) -> Tensor
rsqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
rsqrt_(Tensor(a!) self) -> Tensor(a!)
sin(Tensor self) -> Tensor
sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
sin_(Tensor(a!) self) -> Tensor(a!)
cos(Tensor self) -> Tensor
cos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
cos_(Tensor(a!) self) -> Tensor(a!)
tan(Tensor self) -> Tensor
tan.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
tan_(Tensor(a!) self) -> Tensor(a!)
tanh(Tensor self) -> Tensor
tanh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
tanh_(Tensor(a!) self) -> Tensor(a!)
sigmoid(Tensor self) -> Tensor
sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
sigmoid_(Tensor(a!) self) -> Tensor(a!)
erf(Tensor self) -> Tensor
erf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
erf_(Tensor(a!) self) -> Tensor(a!)
floor(Tensor self) -> Tensor
floor.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
floor_(Tensor(a!) self) -> Tensor(a!)
ceil(Tensor self) -> Tensor
ceil.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
ceil_(Tensor(a!) self) -> Tensor(a!)
round(Tensor self) -> Tensor
round.decimals(Tensor self, *, int decimals) -> Tensor
round.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
round.decimals_out(Tensor self, *, int decimals, Tensor(a!) out) -> Tensor(a!)
round_(Tensor(a!) self) -> Tensor(a!)
round_.decimals(Tensor(a!) self, *, int decimals) -> Tensor(a!)
trunc(Tensor self) -> Tensor
trunc.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
trunc_(Tensor(a!) self) -> Tensor(a!)
sign(Tensor self) -> Tensor
sign.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
sign_(Tensor(a!) self) -> Tensor(a!)
reciprocal(Tensor self) -> Tensor
reciprocal.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
reciprocal_(Tensor(a!) self) -> Tensor(a!)
exp2(Tensor self) -> Tensor
exp2.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
exp2_(Tensor(a!) self) -> Tensor(a!)
log2(Tensor self) -> Tensor
log2.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
log2_(Tensor(a!) self) -> Tensor(a!)
log10(Tensor self) -> Tensor
log10.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
log10_(Tensor(a!) self) -> Tensor(a!)
sinh(Tensor self) -> Tensor
sinh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
sinh_(Tensor(a!) self) -> Tensor(a!)
cosh(Tensor self) -> Tensor
cosh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
cosh_(Tensor(a!) self) -> Tensor(a!)
asin(Tensor self) -> Tensor
asin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
asin_(Tensor(a!) self) -> Tensor(a!)
acos(Tensor self) -> Tensor
acos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
acos_(Tensor(a!) self) -> Tensor(a!)
atan(Tensor self) -> Tensor
atan.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
atan_(Tensor(a!) self) -> Tensor(a!)
square(Tensor self) -> Tensor
square.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
square_(Tensor(a!) self) -> Tensor(a!)
sgn(Tensor self) -> Tensor
sgn.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
sgn_(Tensor(a!) self) -> Tensor(a!)
angle(Tensor self) -> Tensor
angle.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
isnan(Tensor self) -> Tensor
isinf(Tensor self) -> Tensor
isfinite(Tensor self) -> Tensor
nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor
nan_to_num.out(Tensor self, float? nan=None, float? posinf=None, float? neginf=None, *, Tensor(a!) out) -> Tensor(a!)
nan_to_num_(Tensor(a!) self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor(a!)
relu(Tensor self) -> Tensor
relu_(Tensor(a!) self) -> Tensor(a!)
# == reductions: sum, mean, prod, max / min, var / std, norm, all / any, logsumexp, cumsum / cumprod, softmax
sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
mean(Tensor self, *, ScalarType? dtype=None) -> Tensor
mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
prod(Tensor self, *, ScalarType? dtype=None) -> Tensor
prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
prod.int_out(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
max(Tensor self) -> Tensor
max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)
max.other(Tensor self, Tensor other) -> Tensor
min(Tensor self) -> Tensor
min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
min.dim_min(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) min, Tensor(b!) min_indices) -> (Tensor(a!) values, Tensor(b!) indices)
min.other(Tensor self, Tensor other) -> Tensor
amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor
amax.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor
amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
argmax.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
argmin.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor
var.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False, Tensor(a!) out) -> Tensor(a!)
std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor
std.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False, Tensor(a!) out) -> Tensor(a!)
var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)
std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)
norm.Scalar(Tensor self, Scalar p=2) -> Tensor
norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor
norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype) -> Tensor
norm.out(Tensor self, Scalar? p, int[1] dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
all(Tensor self) -> Tensor
all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor
all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor
all.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
any(Tensor self) -> Tensor
any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor
any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor
any.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor
logsumexp.out(Tensor self, int[1] dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor
cumsum.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
cumsum_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)
cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor
cumprod.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
cumprod_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)
softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor
_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor
log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor
_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor
# == linalg_products: matmul and the products it reduces to, the fused forms, outer, einsum
matmul(Tensor self, Tensor other) -> Tensor
matmul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
mm(Tensor self, Tensor mat2) -> Tensor
mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
bmm(Tensor self, Tensor mat2) -> Tensor
bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
addmm_(Tensor(a!) self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor(a!)
dot(Tensor self, Tensor tensor) -> Tensor
dot.out(Tensor self, Tensor tensor, *, Tensor(a!) out) -> Tensor(a!)
vdot(Tensor self, Tensor other) -> Tensor
outer(Tensor self, Tensor vec2) -> Tensor
mv(Tensor self, Tensor vec) -> Tensor
mv.out(Tensor self, Tensor vec, *, Tensor(a!) out) -> Tensor(a!)
addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor
baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor
# == structure: cat and stack
cat(Tensor[] tensors, int dim=0) -> Tensor
cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)
stack(Tensor[] tensors, int dim=0) -> Tensor
stack.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)
# == views: the splits
split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]
split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]
chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]
unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]
# == indexing: gather / scatter, index_select, masked_select, nonzero, advanced indexing, masked_fill
gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor
gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, Tensor(a!) out) -> Tensor(a!)
scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor
scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor
scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor
scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor
scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)
scatter_.value(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)
scatter_.reduce(Tensor(a!) self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor(a!)
scatter_.value_reduce(Tensor(a!) self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor(a!)
scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor
scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)
scatter_add.out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out) -> Tensor(a!)
index_select(Tensor self, int dim, Tensor index) -> Tensor
index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out) -> Tensor(a!)
masked_select(Tensor self, Tensor mask) -> Tensor
masked_select.out(Tensor self, Tensor mask, *, Tensor(a!) out) -> Tensor(a!)
nonzero(Tensor self) -> Tensor
nonzero.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
index.Tensor(Tensor self, Tensor?[] indices) -> Tensor
index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor
index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)
masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor
masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor
masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)
masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)
# == sorting: sort, argsort, topk, unique
sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
sort.values(Tensor self, int dim=-1, bool descending=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
sort.values_stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor
argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor
topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)
topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)
unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)
unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)
# == structure: flip, roll, tril / triu, repeat, repeat_interleave, tile
flip(Tensor self, int[] dims) -> Tensor
roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor
tril(Tensor self, SymInt diagonal=0) -> Tensor
tril.out(Tensor self, SymInt diagonal=0, *, Tensor(a!) out) -> Tensor(a!)
tril_(Tensor(a!) self, SymInt diagonal=0) -> Tensor(a!)
triu(Tensor self, SymInt diagonal=0) -> Tensor
triu.out(Tensor self, SymInt diagonal=0, *, Tensor(a!) out) -> Tensor(a!)
triu_(Tensor(a!) self, SymInt diagonal=0) -> Tensor(a!)
repeat(Tensor self, SymInt[] repeats) -> Tensor
repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor
repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor
repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor
tile(Tensor self, SymInt[] dims) -> Tensor
# == views
view(Tensor(a) self, SymInt[] size) -> Tensor(a)
view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)
reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)
permute(Tensor(a) self, int[] dims) -> Tensor(a)
transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
t(Tensor(a) self) -> Tensor(a)
expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)
squeeze(Tensor(a) self) -> Tensor(a)
squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)
squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)
unsqueeze(Tensor(a) self, int dim) -> Tensor(a)
flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)
unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)
narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)
select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)
slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)
as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)
contiguous(Tensor(a) self, *, MemoryFormat memory_format=0) -> Tensor(a)
clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor
detach(Tensor(a) self) -> Tensor(a)
alias(Tensor(a) self) -> Tensor(a)
diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)
# == factories: copies and fills, then the factories
copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)
fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)
fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)
zero_(Tensor(a!) self) -> Tensor(a!)
_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor
_local_scalar_dense(Tensor self) -> Scalar
resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)
empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out) -> Tensor(a!)
linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
eye(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
eye.m(SymInt n, SymInt m, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
# == random: draws from the generators' Philox streams, and dropout
rand(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
rand.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randn(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randn.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randint(SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randint.generator(SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randint.low_generator(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randperm(SymInt n, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randperm.generator(SymInt n, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor
normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor
normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor
normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
normal_(Tensor(a!) self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor(a!)
uniform_(Tensor(a!) self, float from=0., float to=1., *, Generator? generator=None) -> Tensor(a!)
bernoulli(Tensor self, *, Generator? generator=None) -> Tensor
bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor
bernoulli.Tensor(Tensor self, Tensor p, *, Generator? generator=None) -> Tensor
bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, Generator? generator=None) -> Tensor(a!)
bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)
multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor
random_(Tensor(a!) self, *, Generator? generator=None) -> Tensor(a!)
random_.from(Tensor(a!) self, int from, int? to, *, Generator? generator=None) -> Tensor(a!)
random_.to(Tensor(a!) self, int to, *, Generator? generator=None) -> Tensor(a!)
exponential_(Tensor(a!) self, float lambd=1., *, Generator? generator=None) -> Tensor(a!)
cauchy_(Tensor(a!) self, float median=0., float sigma=1., *, Generator? generator=None) -> Tensor(a!)
log_normal_(Tensor(a!) self, float mean=1., float std=2., *, Generator? generator=None) -> Tensor(a!)
geometric_(Tensor(a!) self, float p, *, Generator? generator=None) -> Tensor(a!)
rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
rand_like.generator(Tensor self, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
randn_like.generator(Tensor self, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
randint_like(Tensor self, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
randint_like.generator(Tensor self, SymInt high, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
randint_like.low_generator_dtype(Tensor self, SymInt low, SymInt high, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
dropout(Tensor input, float p, bool train) -> Tensor
native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)

# == nn: the ops behind npusim.nn.functional, A-Z across the nn_* families, then later forms by family
acosh(Tensor self) -> Tensor
adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor
adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)
adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)
addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor
addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)
addcdiv.out(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1, Tensor(a!) out) -> Tensor(a!)
addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor
addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)
addcmul.out(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1, Tensor(a!) out) -> Tensor(a!)
addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
asinh(Tensor self) -> Tensor
atanh(Tensor self) -> Tensor
avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor
avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor
batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor
binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor
binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=1) -> Tensor
cdist(Tensor x1, Tensor x2, float p=2., int? compute_mode=None) -> Tensor
chain_matmul(Tensor[] matrices) -> Tensor
constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor
conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] dilation=[1], SymInt groups=1) -> Tensor
conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor
conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor
convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor
cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor
cross(Tensor self, Tensor other, int? dim=None) -> Tensor
cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100, float label_smoothing=0.) -> Tensor
dist(Tensor self, Tensor other, Scalar p=2) -> Tensor
elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor
elu_(Tensor(a!) self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor(a!)
embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor
erfinv(Tensor self) -> Tensor
gelu(Tensor self, *, str approximate="none") -> Tensor
gelu_(Tensor(a!) self, *, str approximate="none") -> Tensor(a!)
glu(Tensor self, int dim=-1) -> Tensor
group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enabled=True) -> Tensor
hardsigmoid(Tensor self) -> Tensor
hardswish(Tensor self) -> Tensor
hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor
hardtanh_(Tensor(a!) self, Scalar min_val=-1, Scalar max_val=1) -> Tensor(a!)
huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.) -> Tensor
kl_div(Tensor self, Tensor target, int reduction=1, *, bool log_target=False) -> Tensor
l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor
layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor
leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor
leaky_relu_(Tensor(a!) self, Scalar negative_slope=0.01) -> Tensor(a!)
linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor
log_sigmoid(Tensor self) -> Tensor
logit(Tensor self, float? eps=None) -> Tensor
max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor
max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> Tensor
max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
mish(Tensor self) -> Tensor
mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor
mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor
native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)
native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)
native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)
native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)
nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor
nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)
nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor
one_hot(Tensor self, int num_classes=-1) -> Tensor
pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor
prelu(Tensor self, Tensor weight) -> Tensor
relu6(Tensor self) -> Tensor
rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor
scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor
_scaled_dot_product_attention_math(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, Tensor? dropout_mask=None, *, float? scale=None, bool enable_gqa=False) -> (Tensor, Tensor)
selu(Tensor self) -> Tensor
selu_(Tensor(a!) self) -> Tensor(a!)
silu(Tensor self) -> Tensor
silu_(Tensor(a!) self) -> Tensor(a!)
smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.) -> Tensor
softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor
tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor
threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor
threshold_(Tensor(a!) self, Scalar threshold, Scalar value) -> Tensor(a!)
threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor
silu_backward(Tensor grad_output, Tensor self) -> Tensor
hardswish_backward(Tensor grad_output, Tensor self) -> Tensor
hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor
hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, Scalar max_val) -> Tensor
leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope, bool self_is_result) -> Tensor
elu_backward(Tensor grad_output, Scalar alpha, Scalar scale, Scalar input_scale, bool is_result, Tensor self_or_result) -> Tensor
softplus_backward(Tensor grad_output, Tensor self, Scalar beta, Scalar threshold) -> Tensor
# == nn_activation: in-place forms and celu
hardsigmoid_(Tensor(a!) self) -> Tensor(a!)
hardswish_(Tensor(a!) self) -> Tensor(a!)
mish_(Tensor(a!) self) -> Tensor(a!)
relu6_(Tensor(a!) self) -> Tensor(a!)
celu(Tensor self, Scalar alpha=1.) -> Tensor
celu_(Tensor(a!) self, Scalar alpha=1.) -> Tensor(a!)
# == nn_loss: nll_loss's backward
nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor
# == nn_embedding: embedding's backward and renorm
embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor
embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> Tensor(a!)
# == nn_padding: reflection, replication and circular padding
reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor
reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor
reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor
reflection_pad1d_backward(Tensor grad_output, Tensor self, SymInt[2] padding) -> Tensor
reflection_pad2d_backward(Tensor grad_output, Tensor self, SymInt[4] padding) -> Tensor
reflection_pad3d_backward(Tensor grad_output, Tensor self, SymInt[6] padding) -> Tensor
replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor
replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor
replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor
replication_pad1d_backward(Tensor grad_output, Tensor self, SymInt[2] padding) -> Tensor
replication_pad2d_backward(Tensor grad_output, Tensor self, SymInt[4] padding) -> Tensor
replication_pad3d_backward(Tensor grad_output, Tensor self, SymInt[6] padding) -> Tensor
_pad_circular(Tensor self, SymInt[] pad) -> Tensor
# == nn_dropout: the dropout family
dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
alpha_dropout(Tensor input, float p, bool train) -> Tensor
alpha_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
feature_dropout(Tensor input, float p, bool train) -> Tensor
feature_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
feature_alpha_dropout(Tensor input, float p, bool train) -> Tensor
feature_alpha_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
# == nn_pooling: upsampling
upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor
upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor
# == nn_conv: convolution's backward and the transposed convolutions
convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)
conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, SymInt[1] dilation=[1]) -> Tensor
conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) -> Tensor
conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) -> Tensor
# == nn_pooling: the pooling backward ops
max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor
avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor
_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor
max_pool3d_with_indices_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] stride, int[3] padding, int[3] dilation, bool ceil_mode, Tensor indices) -> Tensor
avg_pool3d_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] stride, int[3] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor
_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor
_adaptive_avg_pool3d_backward(Tensor grad_output, Tensor self) -> Tensor
adaptive_max_pool2d_backward(Tensor grad_output, Tensor self, Tensor indices) -> Tensor
upsample_nearest2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size, float? scales_h=None, float? scales_w=None) -> Tensor
upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor

# == reductions: nan-skipping reductions and order statistics
nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
median(Tensor self) -> Tensor
median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
nanmedian(Tensor self) -> Tensor
nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)
kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)
aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)
# == reductions: quantiles and histograms
quantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor
quantile.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor
nanquantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor
nanquantile.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor
histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)
histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)
_histogramdd_bin_edges(Tensor self, int[] bins, *, float[]? range=None, Tensor? weight=None, bool density=False) -> Tensor[]
_histogramdd_from_bin_cts(Tensor self, int[] bins, *, float[]? range=None, Tensor? weight=None, bool density=False) -> Tensor
_histogramdd_from_bin_tensors(Tensor self, Tensor[] bins, *, Tensor? weight=None, bool density=False) -> Tensor
# == structure: gradient, nonzero_static, the out-of-place fill, empty_permuted
gradient.scalarint(Tensor self, *, Scalar? spacing=None, int? dim=None, int edge_order=1) -> Tensor[]
gradient.scalararray(Tensor self, *, Scalar spacing, int[] dim, int edge_order=1) -> Tensor[]
gradient.array(Tensor self, *, int[] dim, int edge_order=1) -> Tensor[]
gradient.scalarrayint(Tensor self, *, Scalar[] spacing, int? dim=None, int edge_order=1) -> Tensor[]
gradient.scalarrayarray(Tensor self, *, Scalar[] spacing, int[] dim, int edge_order=1) -> Tensor[]
gradient.tensorarrayint(Tensor self, *, Tensor[] spacing, int? dim=None, int edge_order=1) -> Tensor[]
gradient.tensorarray(Tensor self, *, Tensor[] spacing, int[] dim, int edge_order=1) -> Tensor[]
nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor
fill.Scalar(Tensor self, Scalar value) -> Tensor
fill.Tensor(Tensor self, Tensor value) -> Tensor
empty_permuted(SymInt[] size, int[] physical_layout, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
# == views: strided views in place and scattered, slice_inverse, the unsafe split by sizes
as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a!)
as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor
slice_inverse(Tensor(a) self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)
unsafe_split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]
# == scans: running extrema and logcumsumexp
cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)
cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)
logcumsumexp(Tensor self, int dim) -> Tensor
# == indexing: index_add / copy / fill, masked_scatter, scatter_reduce, take, put
index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor
index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor(a!)
index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor
index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)
index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor
index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor
index_fill_.int_Tensor(Tensor(a!) self, int dim, Tensor index, Tensor value) -> Tensor(a!)
index_fill_.int_Scalar(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)
masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor
masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)
scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor
scatter_reduce_.two(Tensor(a!) self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor(a!)
take(Tensor self, Tensor index) -> Tensor
take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor
put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor
put_(Tensor(a!) self, Tensor index, Tensor source, bool accumulate=False) -> Tensor(a!)
# == structure: diagonals, diff, trace, rot90, kron, inner, ger
diag(Tensor self, int diagonal=0) -> Tensor
diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor
diagflat(Tensor self, int offset=0) -> Tensor
diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor
trace(Tensor self) -> Tensor
rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor
kron(Tensor self, Tensor other) -> Tensor
inner(Tensor self, Tensor other) -> Tensor
ger(Tensor self, Tensor vec2) -> Tensor
# == reductions: histc and bincount
histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor
bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor
# == structure: tensor_split and the directional splits
tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]
tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]
tensor_split.tensor_indices_or_sections(Tensor(a -> *) self, Tensor tensor_indices_or_sections, int dim=0) -> Tensor(a)[]
hsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]
hsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]
vsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]
vsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]
dsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]
dsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]
# == views: the unsafe splits
unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]
unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]
# == structure: unfold, broadcast_to, ravel
unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)
broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)
ravel(Tensor(a) self) -> Tensor(a)
# == views: in-place shape changes
swapaxes_(Tensor(a!) self, int axis0, int axis1) -> Tensor(a!)
swapdims_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)
transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)
t_(Tensor(a!) self) -> Tensor(a!)
squeeze_(Tensor(a!) self) -> Tensor(a!)
squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)
squeeze_.dims(Tensor(a!) self, int[] dim) -> Tensor(a!)
unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)
# == structure: sum_to_size, size predicates, new_empty_strided, the *_scatter ops
sum_to_size(Tensor self, SymInt[] size) -> Tensor
is_nonzero(Tensor self) -> bool
is_same_size(Tensor self, Tensor other) -> bool
new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor
slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor
diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor

# == linalg_factorizations: decompositions, solvers and the ops built on them
linalg_det(Tensor A) -> Tensor
linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)
linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)
linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor info)
linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)
linalg_qr(Tensor A, str mode="reduced") -> (Tensor Q, Tensor R)
_linalg_eigh(Tensor A, str UPLO="L", bool compute_v=True) -> (Tensor eigenvalues, Tensor eigenvectors)
_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)
linalg_inv(Tensor A) -> Tensor
inverse(Tensor self) -> Tensor
det(Tensor self) -> Tensor
logdet(Tensor self) -> Tensor
slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)
linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor
linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor
cholesky(Tensor self, bool upper=False) -> Tensor
cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor
cholesky_inverse(Tensor self, bool upper=False) -> Tensor
qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)
linalg_eigh(Tensor self, str UPLO="L") -> (Tensor eigenvalues, Tensor eigenvectors)
linalg_eigvalsh(Tensor self, str UPLO="L") -> Tensor
linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)
linalg_svdvals(Tensor A, *, str? driver=None) -> Tensor
svd(Tensor self, bool some=True, bool compute_uv=True) -> (Tensor U, Tensor S, Tensor V)
linalg_pinv.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor
pinverse(Tensor self, float rcond=1.0000000000000001e-15) -> Tensor
linalg_matrix_rank.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor
linalg_matrix_power(Tensor self, int n) -> Tensor
matrix_power(Tensor self, int n) -> Tensor
linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None) -> (Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)
linalg_multi_dot(Tensor[] tensors) -> Tensor

# == elementwise_math: inverse hyperbolics, special functions, float and integer binary math, predicates
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

# == searching: searchsorted, bucketize, isin
searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor
searchsorted.Scalar(Tensor sorted_sequence, Scalar self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor
bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor
bucketize.Scalar(Scalar self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor
isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, bool invert=False) -> Tensor
isin.Tensor_Scalar(Tensor elements, Scalar test_element, *, bool assume_unique=False, bool invert=False) -> Tensor
isin.Scalar_Tensor(Scalar element, Tensor test_elements, *, bool assume_unique=False, bool invert=False) -> Tensor
# == elementwise_math: frexp
frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)

# == nn_pooling: 3-d adaptive max pooling
adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)
adaptive_max_pool3d_backward(Tensor grad_output, Tensor self, Tensor indices) -> Tensor

# == special: the torch.special primitives with kernels of their own
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
special_airy_ai(Tensor x) -> Tensor
special_airy_ai.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)
special_bessel_j0(Tensor self) -> Tensor
special_bessel_j0.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_bessel_j1(Tensor self) -> Tensor
special_bessel_j1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_bessel_y0(Tensor self) -> Tensor
special_bessel_y0.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_bessel_y1(Tensor self) -> Tensor
special_bessel_y1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_modified_bessel_i0(Tensor self) -> Tensor
special_modified_bessel_i0.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_modified_bessel_i1(Tensor self) -> Tensor
special_modified_bessel_i1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_modified_bessel_k0(Tensor self) -> Tensor
special_modified_bessel_k0.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_modified_bessel_k1(Tensor self) -> Tensor
special_modified_bessel_k1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
special_scaled_modified_bessel_k0(Tensor x) -> Tensor
special_scaled_modified_bessel_k0.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)
special_scaled_modified_bessel_k1(Tensor x) -> Tensor
special_scaled_modified_bessel_k1.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)
special_spherical_bessel_j0(Tensor x) -> Tensor
special_spherical_bessel_j0.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_t(Tensor x, Tensor n) -> Tensor
special_chebyshev_polynomial_t.x_scalar(Scalar x, Tensor n) -> Tensor
special_chebyshev_polynomial_t.n_scalar(Tensor x, Scalar n) -> Tensor
special_chebyshev_polynomial_t.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_t.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_t.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_u(Tensor x, Tensor n) -> Tensor
special_chebyshev_polynomial_u.x_scalar(Scalar x, Tensor n) -> Tensor
special_chebyshev_polynomial_u.n_scalar(Tensor x, Scalar n) -> Tensor
special_chebyshev_polynomial_u.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_u.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_u.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_v(Tensor x, Tensor n) -> Tensor
special_chebyshev_polynomial_v.x_scalar(Scalar x, Tensor n) -> Tensor
special_chebyshev_polynomial_v.n_scalar(Tensor x, Scalar n) -> Tensor
special_chebyshev_polynomial_v.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_v.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_v.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_w(Tensor x, Tensor n) -> Tensor
special_chebyshev_polynomial_w.x_scalar(Scalar x, Tensor n) -> Tensor
special_chebyshev_polynomial_w.n_scalar(Tensor x, Scalar n) -> Tensor
special_chebyshev_polynomial_w.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_w.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_chebyshev_polynomial_w.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_t(Tensor x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_t.x_scalar(Scalar x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_t.n_scalar(Tensor x, Scalar n) -> Tensor
special_shifted_chebyshev_polynomial_t.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_t.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_t.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_u(Tensor x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_u.x_scalar(Scalar x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_u.n_scalar(Tensor x, Scalar n) -> Tensor
special_shifted_chebyshev_polynomial_u.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_u.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_u.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_v(Tensor x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_v.x_scalar(Scalar x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_v.n_scalar(Tensor x, Scalar n) -> Tensor
special_shifted_chebyshev_polynomial_v.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_v.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_v.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_w(Tensor x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_w.x_scalar(Scalar x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_w.n_scalar(Tensor x, Scalar n) -> Tensor
special_shifted_chebyshev_polynomial_w.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_w.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_shifted_chebyshev_polynomial_w.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
special_hermite_polynomial_h(Tensor x, Tensor n) -> Tensor
special_hermite_polynomial_h.x_scalar(Scalar x, Tensor n) -> Tensor
special_hermite_polynomial_h.n_scalar(Tensor x, Scalar n) -> Tensor
special_hermite_polynomial_h.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_hermite_polynomial_h.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_hermite_polynomial_h.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
special_hermite_polynomial_he(Tensor x, Tensor n) -> Tensor
special_hermite_polynomial_he.x_scalar(Scalar x, Tensor n) -> Tensor
special_hermite_polynomial_he.n_scalar(Tensor x, Scalar n) -> Tensor
special_hermite_polynomial_he.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_hermite_polynomial_he.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_hermite_polynomial_he.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
special_laguerre_polynomial_l(Tensor x, Tensor n) -> Tensor
special_laguerre_polynomial_l.x_scalar(Scalar x, Tensor n) -> Tensor
special_laguerre_polynomial_l.n_scalar(Tensor x, Scalar n) -> Tensor
special_laguerre_polynomial_l.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_laguerre_polynomial_l.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_laguerre_polynomial_l.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
special_legendre_polynomial_p(Tensor x, Tensor n) -> Tensor
special_legendre_polynomial_p.x_scalar(Scalar x, Tensor n) -> Tensor
special_legendre_polynomial_p.n_scalar(Tensor x, Scalar n) -> Tensor
special_legendre_polynomial_p.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_legendre_polynomial_p.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
special_legendre_polynomial_p.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)
igamma(Tensor self, Tensor other) -> Tensor
igamma.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
igamma_(Tensor(a!) self, Tensor other) -> Tensor(a!)
igammac(Tensor self, Tensor other) -> Tensor
igammac.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
igammac_(Tensor(a!) self, Tensor other) -> Tensor(a!)
mvlgamma(Tensor self, int p) -> Tensor
mvlgamma.out(Tensor self, int p, *, Tensor(a!) out) -> Tensor(a!)
mvlgamma_(Tensor(a!) self, int p) -> Tensor(a!)
special_multigammaln(Tensor self, int p) -> Tensor
special_multigammaln.out(Tensor self, int p, *, Tensor(a!) out) -> Tensor(a!)

# == linalg_triangular: triangular solves, the LU family, Householder products, matrix exponential
linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) -> Tensor
linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor LU, Tensor pivots, Tensor info)
lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)
linalg_matrix_exp(Tensor self) -> Tensor
triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)
linalg_lu_factor(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots)
linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)
linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False) -> Tensor
lu_solve(Tensor self, Tensor LU_data, Tensor LU_pivots) -> Tensor
linalg_householder_product(Tensor input, Tensor tau) -> Tensor
orgqr(Tensor self, Tensor input2) -> Tensor
matrix_exp(Tensor self) -> Tensor
# == linalg_triangular: Householder QR in LAPACK's layout, and the LDL (Bunch-Kaufman) family
geqrf(Tensor self) -> (Tensor a, Tensor tau)
ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False) -> Tensor
linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False) -> (Tensor LD, Tensor pivots, Tensor info)
linalg_ldl_factor(Tensor self, *, bool hermitian=False) -> (Tensor LD, Tensor pivots)
linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor

# == random: the rejection / inversion samplers
_standard_gamma(Tensor self, Generator? generator=None) -> Tensor
_sample_dirichlet(Tensor self, Generator? generator=None) -> Tensor
poisson(Tensor self, Generator? generator=None) -> Tensor
binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor

# == spectral: the three FFT primitives, torch.fft's composites over them, the frequency helpers, stft / istft
_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor
_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor
_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor
fft_fft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_ifft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_rfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_irfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_hfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_ihfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_fft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_ifft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_rfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_irfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_hfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_ihfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_fftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_ifftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_rfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_irfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_hfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_ihfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_fftfreq(int n, float d=1., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
fft_rfftfreq(int n, float d=1., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
fft_fftshift(Tensor self, int[1]? dim=None) -> Tensor
fft_ifftshift(Tensor self, int[1]? dim=None) -> Tensor
stft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor
stft.center(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, str pad_mode="reflect", bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor
istft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, bool normalized=False, bool? onesided=None, int? length=None, bool return_complex=False) -> Tensor

# == linalg_eig: the eigendecomposition of general (non-symmetric) matrices, complex valued
linalg_eig(Tensor self) -> (Tensor eigenvalues, Tensor eigenvectors)
_linalg_eigvals(Tensor self) -> Tensor
linalg_eigvals(Tensor self) -> Tensor

# == nn_fractional_pooling: fractional max pooling, 2-d and 3-d
fractional_max_pool2d(Tensor self, int[2] kernel_size, int[2] output_size, Tensor random_samples) -> (Tensor, Tensor)
fractional_max_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] output_size, Tensor indices) -> Tensor
fractional_max_pool3d(Tensor self, int[3] kernel_size, int[3] output_size, Tensor random_samples) -> (Tensor, Tensor)
fractional_max_pool3d_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] output_size, Tensor indices) -> Tensor

# == complex_views: the parts of complex tensors as views, conjugation, building complex tensors
real(Tensor(a) self) -> Tensor(a)
imag(Tensor(a) self) -> Tensor(a)
view_as_real(Tensor(a) self) -> Tensor(a)
view_as_complex(Tensor(a) self) -> Tensor(a)
view_as_real_copy(Tensor self) -> Tensor
view_as_real_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
view_as_complex_copy(Tensor self) -> Tensor
view_as_complex_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
conj(Tensor(a) self) -> Tensor(a)
_conj(Tensor(a) self) -> Tensor(a)
conj_physical(Tensor self) -> Tensor
conj_physical.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
conj_physical_(Tensor(a!) self) -> Tensor(a!)
_conj_physical(Tensor self) -> Tensor
_conj_physical.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
resolve_conj(Tensor(a) self) -> Tensor(a)
resolve_neg(Tensor(a) self) -> Tensor(a)
is_conj(Tensor self) -> bool
is_neg(Tensor self) -> bool
adjoint(Tensor(a) self) -> Tensor(a)
polar(Tensor abs, Tensor angle) -> Tensor
polar.out(Tensor abs, Tensor angle, *, Tensor(a!) out) -> Tensor(a!)
complex(Tensor real, Tensor imag) -> Tensor
complex.out(Tensor real, Tensor imag, *, Tensor(a!) out) -> Tensor(a!)
# == nn_rnn: the fused LSTM and GRU cells, their backward ops and differentiable compositions, mkldnn_rnn_layer
_thnn_fused_lstm_cell(Tensor input_gates, Tensor hidden_gates, Tensor cx, Tensor? input_bias=None, Tensor? hidden_bias=None) -> (Tensor, Tensor, Tensor)
_thnn_fused_lstm_cell_backward_impl(Tensor? grad_hy, Tensor? grad_cy, Tensor cx, Tensor cy, Tensor workspace, bool has_bias) -> (Tensor, Tensor, Tensor)
_thnn_fused_lstm_cell_backward(Tensor? grad_hy, Tensor? grad_cy, Tensor cx, Tensor cy, Tensor workspace, bool has_bias) -> (Tensor, Tensor, Tensor, Tensor, Tensor)
_thnn_differentiable_lstm_cell_backward(Tensor? grad_hy, Tensor? grad_cy, Tensor input_gates, Tensor hidden_gates, Tensor? input_bias, Tensor? hidden_bias, Tensor cx, Tensor cy) -> (Tensor, Tensor, Tensor, Tensor, Tensor)
_thnn_fused_gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx, Tensor? input_bias=None, Tensor? hidden_bias=None) -> (Tensor, Tensor)
_thnn_fused_gru_cell_backward(Tensor grad_hy, Tensor workspace, bool has_bias) -> (Tensor, Tensor, Tensor, Tensor, Tensor)
_thnn_differentiable_gru_cell_backward(Tensor grad_hy, Tensor input_gates, Tensor hidden_gates, Tensor hx, Tensor? input_bias, Tensor? hidden_bias) -> (Tensor, Tensor, Tensor, Tensor, Tensor)
mkldnn_rnn_layer(Tensor input, Tensor weight0, Tensor weight1, Tensor weight2, Tensor weight3, Tensor hx_, Tensor cx_, bool reverse, int[] batch_sizes, int mode, int hidden_size, int num_layers, bool has_biases, bool bidirectional, bool batch_first, bool train) -> (Tensor, Tensor, Tensor, Tensor)
mkldnn_rnn_layer_backward(Tensor input, Tensor weight1, Tensor weight2, Tensor weight3, Tensor weight4, Tensor hx_, Tensor cx_tmp, Tensor output, Tensor hy_, Tensor cy_, Tensor? grad_output, Tensor? grad_hy, Tensor? grad_cy, bool reverse, int mode, int hidden_size, int num_layers, bool has_biases, bool train, bool bidirectional, int[] batch_sizes, bool batch_first, Tensor workspace) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)
# == hash_tensor: the XOR of the elements' 64-bit patterns, as uint64
hash_tensor(Tensor self, int[1] dim=[], *, bool keepdim=False, int mode=0) -> Tensor
hash_tensor.out(Tensor self, int[1] dim=[], *, bool keepdim=False, int mode=0, Tensor(a!) out) -> Tensor(a!)
# == amp: the gradient scaler's ops, unscaling with the inf/NaN check and the scale's update
_amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, Tensor inv_scale) -> ()
_amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf, float scale_growth_factor, float scale_backoff_factor, int growth_interval) -> Tensor(a!)
# == linalg_products: the grouped scaled product of float8 matrices (no kernel: torch 2.13 has none on the CPU)
_scaled_grouped_mm_v2(Tensor self, Tensor mat2, Tensor[] scale_a, int[] recipe_a, int[] swizzle_a, Tensor[] scale_b, int[] recipe_b, int[] swizzle_b, Tensor? offs=None, Tensor? bias=None, ScalarType? out_dtype=None, int[] contraction_dim=[], bool use_fast_accum=False) -> Tensor
"""


def schema_lines():
    """Every schema in the table, in order."""
    for line in SCHEMAS.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            yield line
