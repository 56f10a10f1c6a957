"""Makes every draw of the catalogue on the npu of this process and saves the values and generator states.

    python -m gpu_proof.rng_draws OUT.pickle

The RNG parity check runs it with NPUSIM_BACKEND=emulation and compares with the
same draws made in cuda mode. A draw that raises is saved as its error.
"""
from __future__ import annotations

import pickle
import sys

import numpy as np

from .rng_catalogue import catalogue

FIRST_SEED = 20240


def _host(npusim, t) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype is npusim.bfloat16:
        import ml_dtypes
        return t.float().numpy().astype(ml_dtypes.bfloat16)     # exact: every bfloat16 is a float32
    return t.numpy().copy()


def draw_all(npusim) -> dict:
    """{name: {"values": ndarray, "state": bytes}} or {name: {"error": text}}, with the npu mode."""
    results = {}
    for i, draw in enumerate(catalogue(npusim)):
        seed = FIRST_SEED + i
        try:
            if draw.default_generator:
                npusim.manual_seed(seed)
                g = None
                values = draw.make(npusim, g)
                state = npusim.npu.get_rng_state()
            else:
                g = npusim.Generator("npu").manual_seed(seed)
                values = draw.make(npusim, g)
                state = g.get_state()
            results[draw.name] = {"values": _host(npusim, values), "state": bytes(state.numpy().tobytes())}
        except Exception as e:
            results[draw.name] = {"error": f"{type(e).__name__}: {e}".splitlines()[0][:300]}
    return {"mode": npusim.npu.runtime_mode(), "draws": results}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    import npusim
    npusim.npu.set_fallback_mode("silent")
    with open(argv[0], "wb") as f:
        pickle.dump(draw_all(npusim), f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
