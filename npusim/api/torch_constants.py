"""torch's numeric constants at the top level: ``pi``, ``e``, ``inf``, ``nan`` and ``newaxis`` (None, as NumPy's)."""
from __future__ import annotations

import math

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None

__all__ = ["pi", "e", "inf", "nan", "newaxis"]
