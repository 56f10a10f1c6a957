"""npusim.utils.tensorboard.SummaryWriter writes TensorBoard event files from tensors on any device."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import npusim

pytest.importorskip("tensorboardX")
from npusim.utils.tensorboard import SummaryWriter  # noqa: E402


def read_events(directory):
    """Every Event in the event files under ``directory`` (TFRecord framing: length, crc, data, crc)."""
    from tensorboardX.proto.event_pb2 import Event
    events = []
    for path in sorted(directory.rglob("events.out.tfevents.*")):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            pos += 12
            events.append((path.relative_to(directory), Event.FromString(data[pos:pos + length])))
            pos += length + 4
    return events


def values(events):
    return [(str(path.parent), e.step, v) for path, e in events if e.HasField("summary") for v in e.summary.value]


def test_scalars_histograms_text_and_hparams_from_any_device(device, tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        assert w.get_logdir() == str(tmp_path)
        for step in range(3):
            w.add_scalar("train/loss", npusim.tensor(1.0 / (step + 1), device=device), step)
        w.add_histogram("weights", npusim.arange(100.0, device=device), 7)
        w.add_text("notes", "a run on " + device, 2)
        w.add_scalars("pair", {"a": npusim.tensor(1.5, device=device), "b": 2.5}, 4)
        w.add_hparams({"lr": 0.1, "layers": 2}, {"hparam/loss": npusim.tensor(0.25, device=device)})
    got = values(read_events(tmp_path))
    scalars = [(s, v.simple_value) for d, s, v in got if v.tag == "train/loss"]
    assert scalars == [(0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3))]
    hist = next(v.histo for d, s, v in got if v.tag == "weights")
    assert (hist.min, hist.max, hist.num, hist.sum) == (0.0, 99.0, 100, 4950.0)
    text = next(v for d, s, v in got if v.tag.startswith("notes"))
    assert b"a run on " + device.encode() in text.tensor.string_val[0]
    pair = sorted((d, v.simple_value) for d, s, v in got if v.tag == "pair")
    assert pair == [("pair/a", 1.5), ("pair/b", 2.5)]
    hparam_loss = [v.simple_value for d, s, v in got if v.tag == "hparam/loss"]
    assert hparam_loss == [0.25]


def test_images_are_pngs_of_the_tensor(device, tmp_path):
    pytest.importorskip("PIL")
    img = npusim.zeros(3, 4, 5, device=device)
    img[0] = 1.0                                   # a red image, CHW floats in [0, 1] as torch takes them
    with SummaryWriter(str(tmp_path)) as w:
        w.add_image("red", img, 0)
    image = next(v.image for d, s, v in values(read_events(tmp_path)) if v.tag == "red")
    assert (image.height, image.width, image.colorspace) == (4, 5, 3)
    import io
    from PIL import Image
    pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)))
    assert pixels.shape == (4, 5, 3) and (pixels == [255, 0, 0]).all()


def test_graph_export_is_refused_with_the_reason(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(RuntimeError, match="add_graph is not supported by npusim: it traces the model"):
            w.add_graph(npusim.nn.Linear(2, 2), npusim.ones(1, 2))
