"""An ``autocast`` region sets and restores the thread's autocast state through the device's key, resolved once:
nesting, disabled regions inside enabled ones, the cache, a device changed after construction; and a region costs
a few Python frames (a training loop enters one, enabled or not, every step)."""
import sys

import npusim


def _state(dev):
    return (npusim.is_autocast_enabled(dev), npusim.get_autocast_dtype(dev), npusim.is_autocast_cache_enabled())


def test_nested_regions_restore_everything(device):
    dev = npusim.device(device).type
    before = _state(dev)
    with npusim.autocast(dev, dtype=npusim.bfloat16, cache_enabled=False):
        assert _state(dev) == (True, npusim.bfloat16, False)
        with npusim.autocast(dev, dtype=npusim.float16, enabled=False):
            assert _state(dev) == (False, npusim.float16, False)
            with npusim.autocast(dev, dtype=npusim.bfloat16, cache_enabled=True):
                assert _state(dev) == (True, npusim.bfloat16, True)
            assert _state(dev) == (False, npusim.float16, False)
        assert _state(dev) == (True, npusim.bfloat16, False)
    assert _state(dev) == before
    assert npusim.autocast_increment_nesting() == 1 and npusim.autocast_decrement_nesting() == 0


def test_a_device_changed_after_construction_is_honoured():
    region = npusim.autocast("cpu", dtype=npusim.bfloat16)
    region.device = "npu"
    with region:
        assert npusim.is_autocast_enabled("npu") and not npusim.is_autocast_enabled("cpu")
    assert not npusim.is_autocast_enabled("npu")


def test_a_disabled_region_costs_a_few_frames():
    def region():
        with npusim.autocast("npu", dtype=npusim.float16, enabled=False):
            pass
    region()
    frames = []

    def profile(frame, event, arg):
        if event == "call":
            frames.append(frame.f_code.co_name)
    sys.setprofile(profile)
    try:
        region()
    finally:
        sys.setprofile(None)
    assert len(frames) <= 24, frames      # ~45 before the key was resolved once
