"""Autocast: the per-device autocast state (``npusim.autocast``) and the AutocastCPU policies."""
