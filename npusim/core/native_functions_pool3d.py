"""Schemas of the 3-d adaptive max pooling operators."""

SCHEMAS = """
adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)
adaptive_max_pool3d_backward(Tensor grad_output, Tensor self, Tensor indices) -> Tensor
"""
