"""The runtime: intra- and inter-op thread pools, futures, fork/wait and the thread-local state
they carry across threads."""
