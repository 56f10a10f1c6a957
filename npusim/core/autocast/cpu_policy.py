"""CPU autocast: torch 2.13's AutocastCPU op lists, registered at import.

As in torch, core owns the cpu's policies and the fallthrough that lets every other
op skip the AutocastCPU key. Names npusim does not define yet are skipped and kept
in ``MISSING_OPS``; they are registered as soon as they exist in the op table at
import. Note the cpu lists differ from the npu's (torch's CUDA lists): on the cpu,
binary_cross_entropy and prod run in float32, and cat/stack/index_copy promote.
"""
from __future__ import annotations

from .state import register_autocast_policies
from ..dispatch.library import Library, fallthrough_kernel

CPU_AUTOCAST_POLICIES = {
    "lower_precision_fp": (
        "conv1d", "conv1d.padding", "conv2d", "conv2d.padding", "conv3d", "conv3d.padding", "bmm", "mm",
        "linalg_vecdot", "baddbmm", "addmm", "_addmm_activation", "addbmm", "linear", "_convolution.deprecated",
        "matmul", "conv_tbc", "mkldnn_rnn_layer", "conv_transpose1d", "conv_transpose2d.input",
        "conv_transpose3d.input", "prelu", "scaled_dot_product_attention", "_native_multi_head_attention",
    ),
    "fp32": (
        "avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "prod.dim_int", "quantile",
        "quantile.scalar", "nanquantile", "nanquantile.scalar", "stft", "stft.center", "cdist", "grid_sampler_2d",
        "_grid_sampler_2d_cpu_fallback", "grid_sampler_3d", "trace", "view_as_complex", "cholesky",
        "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse", "max_pool3d",
        "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d", "reflection_pad1d", "reflection_pad2d",
        "replication_pad1d", "replication_pad2d", "replication_pad3d", "mse_loss", "cosine_embedding_loss",
        "nll_loss", "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss",
        "cross_entropy_loss", "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss",
        "triplet_margin_loss", "multi_margin_loss", "ctc_loss.IntList", "ctc_loss.Tensor", "kl_div",
        "multilabel_margin_loss", "binary_cross_entropy_with_logits", "fft_fft", "fft_ifft", "fft_fft2",
        "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfft2", "fft_irfft2", "fft_rfftn",
        "fft_irfftn", "fft_hfft", "fft_ihfft", "linalg_cond", "linalg_cond.p_str", "linalg_matrix_rank",
        "linalg_matrix_rank.tol_tensor", "linalg_matrix_rank.atol_rtol_tensor",
        "linalg_matrix_rank.atol_rtol_float", "linalg_solve", "linalg_cholesky", "linalg_svdvals",
        "linalg_eigvals", "linalg_eigvalsh", "linalg_inv", "linalg_householder_product", "linalg_tensorinv",
        "linalg_tensorsolve", "fake_quantize_per_tensor_affine", "geqrf", "_lu_with_info", "qr", "svd",
        "triangular_solve", "fractional_max_pool2d", "fractional_max_pool3d", "adaptive_max_pool3d",
        "multilabel_margin_loss_forward", "linalg_qr", "linalg_cholesky_ex", "linalg_svd", "linalg_eig",
        "linalg_eigh", "linalg_lstsq", "linalg_inv_ex",
    ),
    "promote": ("stack", "cat", "index_copy"),
}

# TORCH_LIBRARY_IMPL(_, AutocastCPU, m) { m.fallback(makeFallthrough()); }
_fallthrough = Library("_", "IMPL")
_fallthrough.fallback(fallthrough_kernel, "AutocastCPU")

_kernels = Library("aten", "IMPL")
MISSING_OPS = register_autocast_policies(_kernels, "AutocastCPU", CPU_AUTOCAST_POLICIES)
