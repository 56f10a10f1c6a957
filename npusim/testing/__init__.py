"""``npusim.testing`` (torch.testing): ``assert_close`` and ``make_tensor``."""
from ._comparison import assert_allclose, assert_close  # noqa: F401
from ._creation import make_tensor  # noqa: F401
