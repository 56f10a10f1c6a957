"""Docstrings for the public functions and Tensor methods that have none of their own, installed at import.

As torch's ``_torch_docs`` and ``_tensor_docs`` do, the text lives in one table: each entry is one line saying
what the function does (``help()`` prints the Python signature above it, which torch's docstrings spell out
because its functions are builtins). Derived entries need no line of their own: an in-place ``name_`` is the
in-place version of ``name``, a ``name_copy`` is ``name``'s result in memory of its own, an alias names what it
stands for, and a Tensor method without a line is described by the function of its name (``Tensor.add`` ->
``npusim.add``).
"""
from __future__ import annotations

import inspect

ONE_LINE = {
    # arithmetic and pointwise
    "add": "Adds ``other``, scaled by ``alpha``, to ``input``: out = input + alpha * other (broadcasting).",
    "sub": "Subtracts ``other``, scaled by ``alpha``, from ``input``: out = input - alpha * other (broadcasting).",
    "rsub": "Subtracts ``input``, scaled by ``alpha``, from ``other``: out = other - alpha * input.",
    "div": "Divides ``input`` by ``other`` elementwise; ``rounding_mode`` None (true division), 'trunc' or 'floor'.",
    "remainder": "The elementwise remainder of ``input`` / ``other``, with the sign of the divisor (Python's %).",
    "pow": "Raises ``input`` to the power ``exponent`` elementwise (either may be a number).",
    "float_power": "Raises ``input`` to the power ``exponent`` elementwise, computing in double precision.",
    "round": "Rounds each element to ``decimals`` decimal places (halves to even).",
    "clamp": "Clamps every element of ``input`` into the range [``min``, ``max``] (either bound may be None).",
    "clamp_min": "Clamps every element of ``input`` to be at least ``min``.",
    "clamp_max": "Clamps every element of ``input`` to be at most ``max``.",
    "lerp": "Linear interpolation: out = input + weight * (end - input).",
    "where": "Elements of ``input`` where ``condition`` is True and of ``other`` elsewhere (broadcasting); with only "
             "``condition``, the indices of its nonzero elements.",
    "nan_to_num": "Replaces NaN, positive and negative infinity in ``input`` by ``nan``, ``posinf`` and ``neginf``.",
    "isclose": "Whether each element of ``input`` is close to ``other``: |input - other| <= atol + rtol * |other|.",
    "allclose": "Whether every element of ``input`` is close to ``other`` (see ``isclose``).",
    "equal": "True if the two tensors have the same size and elements, False otherwise.",
    "copysign": "``input``'s magnitudes with the signs of ``other``, elementwise.",
    "xlogy": "Computes input * log(other) elementwise, 0 where input is 0.",
    "logit": "The logit log(p / (1 - p)) of each element, with ``eps`` clamping the input to [eps, 1 - eps].",
    "polygamma": "The ``n``-th derivative of the digamma function at each element of ``input``.",
    "i1": "The modified Bessel function of the first kind of order 1, elementwise.",
    "sigmoid": "The logistic sigmoid 1 / (1 + exp(-x)) of each element.",
    "tanh": "The hyperbolic tangent of each element.",
    "addcmul": "out = input + value * tensor1 * tensor2, elementwise.",
    "addcdiv": "out = input + value * tensor1 / tensor2, elementwise.",
    # reductions
    "sum": "The sum of the elements of ``input``, over ``dim`` (all dims if not given), keeping reduced dims if "
           "``keepdim``.",
    "nansum": "The sum of the elements of ``input`` over ``dim``, NaN counted as zero.",
    "mean": "The mean of the elements of ``input`` over ``dim`` (all dims if not given).",
    "nanmean": "The mean of the non-NaN elements of ``input`` over ``dim``.",
    "prod": "The product of the elements of ``input``, over ``dim`` if given.",
    "max": "The largest element of ``input``; with ``dim``, a (values, indices) tuple of the maxima along it; with "
           "another tensor, the elementwise maximum.",
    "min": "The smallest element of ``input``; with ``dim``, a (values, indices) tuple of the minima along it; with "
           "another tensor, the elementwise minimum.",
    "amax": "The maximum of ``input`` over the dims ``dim`` (values only; gradient shared evenly among ties).",
    "amin": "The minimum of ``input`` over the dims ``dim`` (values only; gradient shared evenly among ties).",
    "aminmax": "A (min, max) tuple of ``input``'s extremes, over ``dim`` if given.",
    "argmax": "The index of the largest element, of the flattened ``input`` or along ``dim``.",
    "argmin": "The index of the smallest element, of the flattened ``input`` or along ``dim``.",
    "var": "The variance of ``input`` over ``dim``, with ``correction`` (1: Bessel's unbiased estimate).",
    "std": "The standard deviation of ``input`` over ``dim``, with ``correction`` (1: Bessel's unbiased estimate).",
    "var_mean": "A (variance, mean) tuple of ``input`` over ``dim`` (see ``var``).",
    "std_mean": "A (standard deviation, mean) tuple of ``input`` over ``dim`` (see ``std``).",
    "norm": "The matrix or vector norm of ``input`` (``p`` 'fro', 'nuc' or a number) over ``dim``.",
    "all": "Whether every element of ``input`` is True (nonzero), over ``dim`` if given.",
    "any": "Whether any element of ``input`` is True (nonzero), over ``dim`` if given.",
    "logsumexp": "log(sum(exp(input))) over ``dim``, computed stably.",
    "logcumsumexp": "The cumulative log(sum(exp(x))) of ``input`` along ``dim``.",
    "cumsum": "The cumulative sum of ``input`` along ``dim``.",
    "cumprod": "The cumulative product of ``input`` along ``dim``.",
    "cummax": "A (values, indices) tuple of the running maximum of ``input`` along ``dim``.",
    "cummin": "A (values, indices) tuple of the running minimum of ``input`` along ``dim``.",
    "count_nonzero": "The number of nonzero elements of ``input``, over ``dim`` if given.",
    "median": "The median of ``input`` (the lower of the two middle values); with ``dim``, (values, indices).",
    "nanmedian": "The median of ``input`` ignoring NaN; with ``dim``, (values, indices).",
    "mode": "A (values, indices) tuple of the most frequent value of ``input`` along ``dim``.",
    "kthvalue": "A (values, indices) tuple of the ``k``-th smallest element of ``input`` along ``dim``.",
    "histc": "A histogram of ``input`` with ``bins`` equal bins between ``min`` and ``max``.",
    "bincount": "The count of each value in the non-negative int tensor ``input`` (summed ``weights`` if given).",
    "softmax": "Softmax along ``dim``: exp(x) / sum(exp(x)), each slice summing to 1.",
    "log_softmax": "The logarithm of softmax along ``dim``, computed stably.",
    "softmin": "Softmin along ``dim``: softmax of -x.",
    "trace": "The sum of the main diagonal of the 2-D ``input``.",
    "dist": "The ``p``-norm of (input - other).",
    # linear algebra
    "matmul": "The matrix product of two tensors, with the dot / matrix-vector / batched cases and broadcasting of "
              "batch dims.",
    "mm": "The matrix product of the 2-D tensors ``input`` and ``mat2``.",
    "bmm": "The batched matrix product of the 3-D tensors ``input`` and ``mat2``.",
    "dot": "The dot product of two 1-D tensors.",
    "vdot": "The dot product of two 1-D tensors (the first conjugated; the same for real tensors).",
    "mv": "The product of the matrix ``input`` and the vector ``vec``.",
    "outer": "The outer product of the 1-D tensors ``input`` and ``vec2``.",
    "inner": "The inner product over the last dims of ``input`` and ``other``.",
    "kron": "The Kronecker product of ``input`` and ``other``.",
    "addmm": "beta * input + alpha * (mat1 @ mat2).",
    "addmv": "beta * input + alpha * (mat @ vec).",
    "addr": "beta * input + alpha * outer(vec1, vec2).",
    "baddbmm": "beta * input + alpha * bmm(batch1, batch2).",
    "addbmm": "beta * input + alpha * the sum over the batch of bmm(batch1, batch2).",
    "cross": "The cross product of 3-vectors along ``dim`` of ``input`` and ``other``.",
    "cdist": "The ``p``-norm distance between each pair of rows of ``x1`` and ``x2`` (batched).",
    "det": "The determinant of a square matrix (or batch of them).",
    "logdet": "The log-determinant of a square matrix (NaN for a negative determinant).",
    "slogdet": "A (sign, log|det|) tuple of a square matrix (or batch of them).",
    "inverse": "The inverse of a square matrix (or batch of them).",
    "pinverse": "The Moore-Penrose pseudo-inverse of a matrix, singular values below ``rcond`` dropped.",
    "matrix_power": "The ``n``-th power of a square matrix (negative ``n``: of its inverse).",
    "matrix_exp": "The matrix exponential of a square matrix (or batch of them).",
    "cholesky": "The Cholesky factor of a symmetric positive-definite matrix (``upper`` for U, else L).",
    "cholesky_solve": "Solves A X = B given the Cholesky factor of A (``upper`` says which).",
    "cholesky_inverse": "The inverse of A given its Cholesky factor (``upper`` says which).",
    "cholesky_ex": "The Cholesky factor and an ``info`` tensor (nonzero where a matrix is not positive-definite).",
    "qr": "The QR decomposition (Q, R) of a matrix; ``some`` for the reduced one.",
    "svd": "The singular value decomposition (U, S, V) of a matrix; ``some`` for the reduced one.",
    "svdvals": "The singular values of a matrix (or batch of them), in descending order.",
    "eigvalsh": "The eigenvalues of a symmetric matrix, in ascending order (``UPLO`` says which triangle is read).",
    "triangular_solve": "Solves A X = b for a triangular A; returns (solution, A).",
    "lu_solve": "Solves A X = B given A's LU factorisation (``LU_data``, ``LU_pivots``).",
    "lu_factor_ex": "The LU factorisation (LU, pivots) of a matrix and an ``info`` tensor instead of errors.",
    "solve_ex": "The solution of A X = B and an ``info`` tensor (nonzero where A is singular) instead of errors.",
    "orgqr": "The Q of a QR factorisation from Householder reflectors (``input``, ``tau``), as LAPACK's orgqr.",
    # shape and joining
    "cat": "Concatenates a sequence of tensors along ``dim`` (all the same shape except in that dim).",
    "stack": "Stacks a sequence of same-shaped tensors along a new dim ``dim``.",
    "hstack": "Stacks tensors horizontally (along dim 1, or dim 0 for 1-D tensors).",
    "vstack": "Stacks tensors vertically (along dim 0, 1-D tensors as rows).",
    "split": "Splits a tensor into chunks of ``split_size_or_sections`` along ``dim`` (views).",
    "split_with_sizes": "Splits a tensor into parts of the given ``split_sizes`` along ``dim`` (views).",
    "chunk": "Splits a tensor into ``chunks`` near-equal pieces along ``dim`` (views).",
    "tensor_split": "Splits a tensor into parts along ``dim`` by a count or by indices (views).",
    "hsplit": "Splits a tensor horizontally (``tensor_split`` along dim 1, or 0 for 1-D).",
    "vsplit": "Splits a tensor vertically (``tensor_split`` along dim 0).",
    "dsplit": "Splits a tensor depthwise (``tensor_split`` along dim 2).",
    "unsafe_split": "``split`` whose results are not tracked as views of ``input``.",
    "unsafe_chunk": "``chunk`` whose results are not tracked as views of ``input``.",
    "unbind": "A tuple of the slices of ``input`` along ``dim``, that dim removed.",
    "reshape": "A tensor with ``input``'s elements and shape ``shape`` (a view when possible, else a copy).",
    "flatten": "Flattens the dims ``start_dim`` to ``end_dim`` of ``input`` into one.",
    "unflatten": "Expands dim ``dim`` of ``input`` into the shape ``sizes``.",
    "ravel": "A contiguous 1-D tensor of ``input``'s elements.",
    "squeeze": "Removes dims of size 1 (only ``dim`` if given); a view.",
    "unsqueeze": "Inserts a dim of size 1 at ``dim``; a view.",
    "transpose": "Swaps dims ``dim0`` and ``dim1``; a view.",
    "t": "Transposes a tensor of 2 or fewer dims; a view.",
    "permute": "Reorders the dims of ``input`` as ``dims``; a view.",
    "movedim": "Moves the dims ``source`` of ``input`` to the positions ``destination``; a view.",
    "narrow": "The slice of ``input`` from ``start`` of ``length`` elements along ``dim``; a view.",
    "select": "The slice of ``input`` at ``index`` along ``dim``, that dim removed; a view.",
    "diagonal": "The diagonal ``offset`` of the 2-D planes of dims ``dim1``, ``dim2``; a view.",
    "as_strided": "A view of ``input``'s storage with ``size``, ``stride`` and ``storage_offset``.",
    "broadcast_to": "``input`` broadcast to ``size``; a view.",
    "broadcast_tensors": "The given tensors broadcast to their common shape (views).",
    "flip": "Reverses the order of elements along the dims ``dims`` (a copy).",
    "fliplr": "Reverses the order of columns (dim 1).",
    "flipud": "Reverses the order of rows (dim 0).",
    "roll": "Rolls the elements by ``shifts`` along ``dims`` (the flattened tensor if none).",
    "rot90": "Rotates by 90 degrees ``k`` times in the plane of ``dims``.",
    "tril": "The lower triangle of the matrices of ``input`` (below diagonal ``diagonal``), the rest zero.",
    "triu": "The upper triangle of the matrices of ``input`` (above diagonal ``diagonal``), the rest zero.",
    "diag": "A 1-D tensor's square diagonal matrix, or a 2-D tensor's diagonal ``diagonal``.",
    "diag_embed": "Matrices whose diagonals (``offset``, in dims ``dim1``, ``dim2``) are the last dim of ``input``.",
    "diagflat": "A 2-D matrix with the flattened ``input`` on diagonal ``offset``.",
    "diff": "The ``n``-th forward difference along ``dim`` (with ``prepend``/``append`` joined first).",
    "repeat_interleave": "Repeats each element of ``input`` ``repeats`` times along ``dim``.",
    "tile": "Repeats ``input`` as tiles, ``dims`` times along each dim.",
    "clone": "A copy of ``input`` with its own memory, laid out as ``memory_format`` (preserve_format by default).",
    "detach": "A view of ``input`` out of the autograd graph (requires_grad False).",
    # indexing
    "gather": "Values of ``input`` along ``dim`` at the positions of ``index``.",
    "scatter": "A copy of ``input`` with ``src`` (or ``value``) written along ``dim`` at ``index`` (``reduce`` to "
               "combine).",
    "scatter_add": "A copy of ``input`` with ``src`` added along ``dim`` at ``index``.",
    "scatter_reduce": "A copy of ``input`` with ``src`` reduced in along ``dim`` at ``index`` ('sum', 'prod', "
                      "'mean', 'amax', 'amin'; ``include_self`` to count input).",
    "index_select": "The slices of ``input`` along ``dim`` at the 1-D ``index``.",
    "index_add": "A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim``.",
    "index_copy": "A copy of ``input`` with ``source``'s slices copied to ``index`` along ``dim``.",
    "index_fill": "A copy of ``input`` with ``value`` at ``index`` along ``dim``.",
    "index_put": "A copy of ``input`` with ``values`` put at the tuple of ``indices`` (added if ``accumulate``).",
    "index_reduce": "A copy of ``input`` with ``source`` reduced in at ``index`` along ``dim`` ('prod', 'mean', "
                    "'amax', 'amin').",
    "masked_select": "A 1-D tensor of the elements of ``input`` where ``mask`` is True.",
    "masked_fill": "A copy of ``input`` with ``value`` where ``mask`` is True.",
    "masked_scatter": "A copy of ``input`` with ``source``'s elements, in order, where ``mask`` is True.",
    "nonzero": "The indices of the nonzero elements (one row each, or a tuple of index tensors if ``as_tuple``).",
    "argwhere": "The indices of the nonzero elements, one row each.",
    "take": "The elements of ``input``, as a flat tensor, at ``index``.",
    "take_along_dim": "Values of ``input`` at ``indices`` along ``dim`` (broadcasting; the flattened input if None).",
    "put": "A copy of ``input`` with ``source`` at the flat positions ``index`` (added if ``accumulate``).",
    "select_scatter": "A copy of ``input`` with ``src`` embedded at ``index`` along ``dim``.",
    "slice_scatter": "A copy of ``input`` with ``src`` embedded in the slice ``start:end:step`` of ``dim``.",
    "diagonal_scatter": "A copy of ``input`` with ``src`` embedded on the diagonal ``offset`` of dims ``dim1``, "
                        "``dim2``.",
    # sorting and sets
    "sort": "A (values, indices) tuple of ``input`` sorted along ``dim`` (``descending``, ``stable``).",
    "argsort": "The indices that sort ``input`` along ``dim``.",
    "topk": "A (values, indices) tuple of the ``k`` largest (or smallest) elements along ``dim``.",
    "unique": "The unique elements of ``input`` (sorted), with ``return_inverse`` and ``return_counts`` if asked.",
    "unique_consecutive": "``input`` with consecutive duplicates removed (inverse and counts if asked).",
    # predicates and info
    "is_tensor": "True if ``obj`` is an npusim tensor.",
    "is_floating_point": "True if ``input``'s dtype is a floating-point dtype.",
    "is_nonzero": "True if the single-element ``input`` is nonzero.",
    "is_same_size": "True if ``input`` and ``other`` have the same shape.",
    "numel": "The number of elements of ``input``.",
    "asarray": "Converts ``obj`` (a tensor, NumPy array, buffer, scalar or sequence) to a tensor, sharing memory "
               "when it can.",
    "are_deterministic_algorithms_enabled": "True if ``use_deterministic_algorithms`` is on.",
    "is_deterministic_algorithms_warn_only_enabled": "True if deterministic algorithms are set to only warn.",
    "get_deterministic_debug_mode": "The deterministic debug mode: 0 (off), 1 (warn) or 2 (error).",
    "get_float32_matmul_precision": "The float32 matrix multiplication precision: 'highest', 'high' or 'medium'.",
    "is_warn_always_enabled": "True if ``set_warn_always`` is on.",
    # random
    "poisson": "Samples from a Poisson distribution with rate ``input`` for each element.",
    "binomial": "Samples from binomial distributions with ``count`` trials and probability ``prob``.",
    # nn.functional and its torch-namespace twins
    "dropout": "Zeroes each element with probability ``p`` in training, scaling the rest by 1 / (1 - p).",
    "dropout1d": "Zeroes whole channels (1-D feature maps) with probability ``p`` in training.",
    "dropout2d": "Zeroes whole channels (2-D feature maps) with probability ``p`` in training.",
    "dropout3d": "Zeroes whole channels (3-D feature maps) with probability ``p`` in training.",
    "alpha_dropout": "Dropout that keeps the mean and variance of SELU activations (training only).",
    "feature_alpha_dropout": "Alpha dropout of whole channels (training only).",
    "layer_norm": "Layer normalisation over the last dims ``normalized_shape``, with optional ``weight`` and "
                  "``bias``.",
    "group_norm": "Group normalisation over ``num_groups`` groups of channels, with optional ``weight`` and "
                  "``bias``.",
    "batch_norm": "Batch normalisation per channel; in training uses batch statistics and updates ``running_mean`` "
                  "and ``running_var`` with ``momentum``.",
    "instance_norm": "Instance normalisation: each channel of each sample normalised on its own.",
    "rms_norm": "Root-mean-square normalisation over the last dims ``normalized_shape``, times ``weight``.",
    "embedding": "The rows of ``weight`` at the indices of ``input`` (``padding_idx`` rows get no gradient).",
    "linear": "The affine map input @ weight.T + bias.",
    "one_hot": "A one-hot encoding of the int64 ``tensor`` with ``num_classes`` classes.",
    "max_pool1d": "1-D max pooling over windows of ``kernel_size``.",
    "max_pool2d": "2-D max pooling over windows of ``kernel_size`` (``stride``, ``padding``, ``dilation``, "
                  "``ceil_mode``).",
    "max_pool3d": "3-D max pooling over windows of ``kernel_size``.",
    "avg_pool1d": "1-D average pooling over windows of ``kernel_size``.",
    "lp_pool2d": "2-D power-average pooling: (sum of x**p over each window) ** (1 / p).",
    "lp_pool3d": "3-D power-average pooling: (sum of x**p over each window) ** (1 / p).",
    "constant_pad_nd": "Pads ``input`` with ``value``, ``pad`` giving (before, after) amounts from the last dim.",
    "cosine_similarity": "The cosine similarity of ``x1`` and ``x2`` along ``dim``.",
    "relu": "Rectified linear unit: max(0, x) elementwise.",
    "relu6": "min(max(0, x), 6) elementwise.",
    "elu": "Exponential linear unit: x if x > 0 else alpha * (exp(x) - 1).",
    "selu": "Scaled exponential linear unit, with its fixed alpha and scale.",
    "celu": "Continuously differentiable ELU: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).",
    "gelu": "Gaussian error linear unit x * Phi(x) (``approximate='tanh'`` for the tanh form).",
    "silu": "Sigmoid linear unit (swish): x * sigmoid(x).",
    "mish": "x * tanh(softplus(x)).",
    "glu": "Gated linear unit: the first half of ``input`` along ``dim`` times sigmoid of the second half.",
    "hardtanh": "Clamps each element to [``min_val``, ``max_val``].",
    "hardsigmoid": "A piecewise-linear sigmoid: relu6(x + 3) / 6.",
    "hardswish": "x * relu6(x + 3) / 6.",
    "hardshrink": "x where |x| > ``lambd``, else 0.",
    "tanhshrink": "x - tanh(x).",
    "softsign": "x / (1 + |x|).",
    "softplus": "log(1 + exp(beta * x)) / beta, linear above ``threshold``.",
    "logsigmoid": "log(sigmoid(x)), computed stably.",
    "leaky_relu": "x if x > 0 else ``negative_slope`` * x.",
    "prelu": "x if x > 0 else ``weight`` * x, a learnt slope per channel.",
    "rrelu": "Randomised leaky ReLU: a random slope in [``lower``, ``upper``] in training, their mean otherwise.",
    "threshold": "x if x > ``threshold`` else ``value``.",
    "mse_loss": "The mean squared error between ``input`` and ``target`` (``reduction``: 'mean', 'sum' or 'none').",
    "l1_loss": "The mean absolute error between ``input`` and ``target``.",
    "huber_loss": "The Huber loss: squared error below ``delta``, linear (scaled by ``delta``) above.",
    "smooth_l1_loss": "The smooth L1 loss: squared error / (2 * beta) below ``beta``, absolute error - beta / 2 "
                      "above.",
    "kl_div": "The Kullback-Leibler divergence of ``target`` from ``input`` (log-probabilities).",
    "binary_cross_entropy_with_logits": "Binary cross entropy of sigmoid(``input``) against ``target``, computed "
                                        "stably (``pos_weight`` weighs positives).",
    "cosine_embedding_loss": "1 - cos(x1, x2) for y = 1, max(0, cos(x1, x2) - margin) for y = -1.",
    "margin_ranking_loss": "max(0, -y * (x1 - x2) + margin).",
    "hinge_embedding_loss": "x for y = 1, max(0, margin - x) for y = -1.",
    "poisson_nll_loss": "The negative log likelihood of ``target`` under a Poisson distribution of rate ``input``.",
    "triplet_margin_loss": "max(d(anchor, positive) - d(anchor, negative) + margin, 0) with the ``p``-norm "
                           "distance.",
    # factories, random draws, defaults and modes
    "rand": "A tensor of the given size filled with uniform random numbers in [0, 1).",
    "randn": "A tensor of the given size filled with standard normal random numbers (mean 0, variance 1).",
    "rand_like": "``rand`` with the size (and, unless given, dtype and device) of ``input``.",
    "randn_like": "``randn`` with the size (and, unless given, dtype and device) of ``input``.",
    "randperm": "A random permutation of the integers 0 to ``n`` - 1 (int64 unless ``dtype`` says otherwise).",
    "multinomial": "``num_samples`` indices drawn per row from the categorical distribution of weights ``input``, "
                   "with or without ``replacement``.",
    "empty_like": "An uninitialised tensor with the size (and, unless given, dtype and device) of ``input``.",
    "zeros_like": "A tensor of zeros with the size (and, unless given, dtype and device) of ``input``.",
    "ones_like": "A tensor of ones with the size (and, unless given, dtype and device) of ``input``.",
    "full_like": "A tensor filled with ``fill_value`` with the size (and, unless given, dtype and device) of "
                 "``input``.",
    "empty_strided": "An uninitialised tensor of the given ``size`` and ``stride``.",
    "scalar_tensor": "A 0-dimensional tensor holding ``s`` (float32 unless ``dtype`` says otherwise).",
    "get_default_device": "The device factories use when none is given (``set_default_device``'s).",
    "get_default_dtype": "The floating dtype factories use when none is given (float32 unless changed).",
    "set_rng_state": "Restore the cpu generator's state from a ``get_rng_state()`` byte tensor.",
    "is_grad_enabled": "True when operations record gradients (outside ``no_grad`` and inference mode).",
    "is_inference_mode_enabled": "True inside an ``inference_mode()`` block.",
    "is_autocast_cache_enabled": "True when autocast caches the casts of leaf tensors within its region.",
    "set_autocast_cache_enabled": "Turn autocast's cache of leaf-tensor casts on or off.",
    "autocast_increment_nesting": "Count one more entered autocast region; returns the new depth.",
    "autocast_decrement_nesting": "Count one autocast region left; returns the new depth (the cast cache is "
                                  "cleared when it reaches 0).",
}

ALIASES = {"clip": "clamp", "concat": "cat", "concatenate": "cat", "divide": "div", "true_divide": "div",
           "subtract": "sub", "swapaxes": "transpose", "swapdims": "transpose", "moveaxis": "movedim",
           "ger": "outer"}

# Tensor methods and properties with no function of their name to refer to
TENSOR_ONE_LINE = {
    "H": "The conjugate transpose of a 2-D tensor (its transpose, for real tensors); a view.",
    "T": "The tensor with its dims reversed; a view.",
    "mH": "The conjugate transpose of the last two dims (their transpose, for real tensors); a view.",
    "mT": "The transpose of the last two dims; a view.",
    "backward": "Computes the gradient of this tensor with respect to the graph's leaves, accumulated in their "
                "``.grad`` (``gradient`` is required unless the tensor has one element).",
    "copy_": "Copies the elements of ``src`` into this tensor (broadcasting, casting, across devices); returns self.",
    "cpu": "This tensor on the cpu (itself if it is already there).",
    "npu": "This tensor on the npu (``device``: its index), a copy unless it is already there.",
    "data": "The tensor's data as a tensor out of the autograd graph; assigning replaces the data.",
    "data_ptr": "The address of the tensor's first element.",
    "device": "The device the tensor is on.",
    "dtype": "The tensor's data type.",
    "dim": "The number of dims.",
    "ndim": "The number of dims.",
    "ndimension": "The number of dims.",
    "element_size": "The size of one element in bytes.",
    "itemsize": "The size of one element in bytes.",
    "nbytes": "The number of bytes of the tensor's elements.",
    "expand": "A view of the tensor with its size-1 dims expanded to ``sizes`` (-1 keeps a size).",
    "expand_as": "``self.expand(other.size())``.",
    "fill_": "Fills the tensor with ``value``; returns self.",
    "fill_diagonal_": "Fills the main diagonal with ``fill_value`` (``wrap`` for tall matrices); returns self.",
    "get_device": "The device index of an npu tensor, -1 for a cpu tensor.",
    "grad": "The gradient accumulated by ``backward`` (None until one is computed).",
    "grad_fn": "The autograd node that made this tensor (None for leaves and tensors outside the graph).",
    "is_complex": "True if the dtype is a complex dtype.",
    "is_contiguous": "True if the tensor's elements lie contiguously in ``memory_format``'s order.",
    "is_cpu": "True if the tensor is on the cpu.",
    "is_cuda": "True if the tensor is on a CUDA device (never, in npusim).",
    "is_npu": "True if the tensor is on the npu.",
    "is_meta": "True if the tensor is on the meta device.",
    "is_leaf": "True for tensors not made by an op that autograd records (their ``.grad`` is kept).",
    "is_signed": "True if the dtype is signed.",
    "item": "The value of a one-element tensor as a Python number.",
    "layout": "The tensor's memory layout (always ``npusim.strided``).",
    "nelement": "The number of elements.",
    "new_empty": "A new uninitialised tensor of ``size`` with this tensor's dtype and device (unless given).",
    "new_empty_strided": "A new uninitialised tensor of ``size`` and ``stride`` with this tensor's dtype and device.",
    "new_full": "A new tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device.",
    "new_ones": "A new tensor of ``size`` filled with ones, with this tensor's dtype and device.",
    "new_zeros": "A new tensor of ``size`` filled with zeros, with this tensor's dtype and device.",
    "new_tensor": "A new tensor of ``data`` with this tensor's dtype and device (unless given).",
    "numpy": "The tensor as a NumPy array sharing its memory (cpu tensors; ``force`` copies otherwise).",
    "output_nr": "Which output of its ``grad_fn`` this tensor is.",
    "register_post_accumulate_grad_hook": "Registers ``hook(tensor)``, run after a gradient is accumulated into "
                                          "this leaf's ``.grad``.",
    "repeat": "The tensor repeated ``sizes`` times along each dim (a copy).",
    "requires_grad_": "Sets whether autograd records operations on this tensor; returns self.",
    "reshape_as": "``self.reshape(other.shape)``.",
    "resize_": "Resizes the tensor to ``sizes`` in place (new elements are uninitialised).",
    "resize_as_": "Resizes the tensor in place to ``other``'s size.",
    "retain_grad": "Keeps ``.grad`` for this non-leaf tensor at the next backward.",
    "retains_grad": "True if this non-leaf tensor keeps its ``.grad``.",
    "shape": "The tensor's size, an ``npusim.Size``.",
    "size": "The tensor's size (``npusim.Size``), or the size of ``dim``.",
    "split_with_sizes": "Splits the tensor into parts of ``split_sizes`` along ``dim`` (views).",
    "storage_offset": "The offset of the first element in the storage, in elements.",
    "stride": "The strides of the tensor in elements, or the stride of ``dim``.",
    "sum_to_size": "Sums the tensor down to ``size`` (which it must broadcast to).",
    "to": "The tensor with another ``dtype``, ``device`` or ``memory_format`` (itself when nothing changes).",
    "tolist": "The tensor's elements as (nested) Python lists of numbers.",
    "type": "The tensor's type name, or, with ``dtype``, the tensor cast to it.",
    "type_as": "``self.to(other.dtype)``.",
    "unfold": "A view of every slice of ``size`` elements, ``step`` apart, along ``dimension`` (a new last dim).",
    "untyped_storage": "The tensor's storage, untyped.",
    "view": "A view of the tensor with another shape (``-1`` inferred), or reinterpreted as another ``dtype``.",
    "view_as": "``self.view(other.size())``.",
    "narrow_copy": "A copy of ``narrow(dim, start, length)`` with its own memory.",
    "msort": "The tensor sorted along dim 0 (values only).",
    "multinomial": "Samples ``num_samples`` indices from the rows of probabilities (``replacement``).",
    "bernoulli": "Samples 0 or 1 per element, 1 with the probability of that element (or ``p``).",
    "bernoulli_": "Fills the tensor with 0 or 1 samples, 1 with probability ``p``; returns self.",
    "cauchy_": "Fills the tensor with Cauchy samples of ``median`` and ``sigma``; returns self.",
    "exponential_": "Fills the tensor with exponential samples of rate ``lambd``; returns self.",
    "geometric_": "Fills the tensor with geometric samples of success probability ``p``; returns self.",
    "log_normal_": "Fills the tensor with log-normal samples of ``mean`` and ``std``; returns self.",
    "normal_": "Fills the tensor with normal samples of ``mean`` and ``std``; returns self.",
    "uniform_": "Fills the tensor with uniform samples in [``from_``, ``to``); returns self.",
    "t_": "Transposes a tensor of 2 or fewer dims in place; returns self.",
    "corrcoef": "The Pearson correlation coefficients of the variables in the rows of the tensor.",
    "cov": "The covariance matrix of the variables in the rows of the tensor.",
    "renorm": "Each sub-tensor along ``dim`` rescaled to a ``p``-norm of at most ``maxnorm``.",
}

_CASTS = ("bfloat16", "bool", "byte", "char", "double", "float", "half", "int", "long", "short")
_CAST_DTYPE = {"byte": "uint8", "char": "int8", "double": "float64", "float": "float32", "half": "float16",
               "int": "int32", "long": "int64", "short": "int16"}


def _line(name):
    """The one-line meaning of the function ``name``, from the table or derived from it; None if there is none."""
    if name in ONE_LINE:
        return ONE_LINE[name]
    if name in ALIASES:
        return f"Alias for ``npusim.{ALIASES[name]}``."
    if name.endswith("_copy") and name[:-5]:
        return f"The result of ``{name[:-5]}`` in memory of its own (a copy, not a view)."
    if name.endswith("_") and not name.endswith("__"):
        return f"In-place version of ``{name[:-1]}``."
    return None


def _has_doc(obj) -> bool:
    doc = getattr(obj, "__doc__", None)
    return isinstance(doc, str) and bool(doc.strip())


def _set(obj, text) -> None:
    try:
        obj.__doc__ = text
    except (AttributeError, TypeError):
        pass   # a builtin or slot wrapper keeps its own


def install_function_docs(namespace, names) -> None:
    """Give each public function of ``namespace`` (those in ``names``) without a docstring its line."""
    for name in names:
        obj = getattr(namespace, name, None)
        if obj is None or inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj) or _has_doc(obj):
            continue
        line = _line(name)
        if line is not None:
            _set(obj, line)


def _tensor_line(tensor_cls, functions, name):
    line = TENSOR_ONE_LINE.get(name)
    if line is None and name in _CASTS:
        line = f"``self.to(npusim.{_CAST_DTYPE.get(name, name)})``."
    if line is None:
        base = name[:-1] if name.endswith("_") else name
        fn = getattr(functions, base, None)
        if base != name and (hasattr(tensor_cls, base) or (fn is not None and callable(fn))):
            line = f"In-place version of ``Tensor.{base}``."
        elif fn is not None and callable(fn) and _has_doc(fn):
            line = f"See ``npusim.{name}``."
    return line


def install_tensor_docs(tensor_cls, functions) -> None:
    """Docstrings for the public Tensor methods and properties that have none: a table line, a cast, or a pointer
    to the function of the same name (``functions``: the npusim namespace)."""
    for name in dir(tensor_cls):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(tensor_cls, name)
        target = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
        if isinstance(target, type) or (getattr(target, "__doc__", None) or "").strip():
            continue
        line = _tensor_line(tensor_cls, functions, name)
        if line is None:
            continue
        if isinstance(target, property):
            setattr(tensor_cls, name, property(target.fget, target.fset, target.fdel, line))
        elif callable(target):
            _set(target, line)
