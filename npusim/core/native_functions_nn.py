"""The aten operators behind ``npusim.nn.functional``, in PyTorch's schema language (torch 2.13's own).

Composite ones (``linear``, ``layer_norm``, ``cross_entropy_loss``...) decompose into
other ops; the rest get kernels per device and derivative formulas.
"""

SCHEMAS = """
acosh(Tensor self) -> Tensor
adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor
adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)
adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)
addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor
addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)
addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor
addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)
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
native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)
native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)
native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)
nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor
nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)
nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor
one_hot(Tensor self, int num_classes=-1) -> Tensor
pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor
prelu(Tensor self, Tensor weight) -> Tensor
relu6(Tensor self) -> Tensor
rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor
scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor
selu(Tensor self) -> Tensor
selu_(Tensor(a!) self) -> Tensor(a!)
silu(Tensor self) -> Tensor
silu_(Tensor(a!) self) -> Tensor(a!)
smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.) -> Tensor
softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor
tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor
threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor
threshold_(Tensor(a!) self, Scalar threshold, Scalar value) -> Tensor(a!)
hardsigmoid_(Tensor(a!) self) -> Tensor(a!)
hardswish_(Tensor(a!) self) -> Tensor(a!)
mish_(Tensor(a!) self) -> Tensor(a!)
relu6_(Tensor(a!) self) -> Tensor(a!)
celu(Tensor self, Scalar alpha=1.) -> Tensor
celu_(Tensor(a!) self, Scalar alpha=1.) -> Tensor(a!)
nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor
embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor
embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> Tensor(a!)
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
dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
alpha_dropout(Tensor input, float p, bool train) -> Tensor
alpha_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
feature_dropout(Tensor input, float p, bool train) -> Tensor
feature_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
feature_alpha_dropout(Tensor input, float p, bool train) -> Tensor
feature_alpha_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor
upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor
convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)
conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, SymInt[1] dilation=[1]) -> Tensor
conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) -> Tensor
conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) -> Tensor
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
"""
