"""The GPU proof: checks that npusim's cuda mode works on a real NVIDIA GPU, run by ``bench/gpu_proof.py``.

Each check lives in its own module with a ``run(ctx) -> Result`` function and runs in a
child process of its own (``python -m gpu_proof.child NAME``), so a crash, a hang or a
device left in a bad state never reaches the others. ``checks.CHECKS`` lists them in
the order they run, with their time budgets.
"""
