"""The host framework, knowing no device: the Tensor and its basics (creation, indexing, printing, dlpack,
pickling, type promotion) at this level, on the layers below it: ``c10`` (devices, dtypes, keys, guard,
storage, generators), ``dispatch`` (the dispatcher and its tables), ``autograd``, ``autocast`` and
``runtime`` (thread pools, futures, fork)."""
