"""``npusim.distributed.algorithms``: training algorithms over process groups (``torch.distributed.algorithms``).

``ddp_comm_hooks`` holds DistributedDataParallel's communication hooks; ``GradBucket``, the bucket a hook
gets, is ``npusim.distributed.GradBucket``.
"""
