"""The part of cupyx npusim uses, for the CuPy stand-in (see cupy/__init__.py)."""
