"""cupyx.scipy.linalg for the CuPy stand-in: the routines npusim calls, as NumPy references."""
from cupy._vendor_linalg import solve_triangular  # noqa: F401
