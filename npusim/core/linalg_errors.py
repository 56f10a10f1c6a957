"""``LinAlgError``: raised when a matrix is singular or not positive-definite (a RuntimeError, as in torch)."""


class LinAlgError(RuntimeError):
    pass


LinAlgError.__module__ = "npusim.linalg"
