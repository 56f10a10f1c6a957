"""c10: the basics every layer stands on: devices, dtypes, dispatch keys, the device guard, streams,
storages, generators, device hooks and memory formats."""
