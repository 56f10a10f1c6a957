"""cupyx.scipy for the CuPy stand-in: only linalg."""
