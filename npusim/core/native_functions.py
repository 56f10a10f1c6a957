"""The aten operators npusim defines, in PyTorch's schema language.

The schemas are PyTorch 2.13's own, so overload names, argument names,
defaults and aliasing match ``torch.ops.aten``. Kernels are registered
separately, per dispatch key, by the CPU registration and by backends.
"""

SCHEMAS = """
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
log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor
_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
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
cat(Tensor[] tensors, int dim=0) -> Tensor
cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)
stack(Tensor[] tensors, int dim=0) -> Tensor
stack.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)
split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]
split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]
chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]
unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]
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
"""
