"""The torch API above the dispatcher: the ``npusim.*`` functions and the Tensor methods, written with
torch's Python signatures. Each picks the aten overload its arguments call for and dispatches it; nothing
here knows a device."""
