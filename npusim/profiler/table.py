"""The text table of profiler events, in the layout of torch's ``key_averages().table()``."""
from __future__ import annotations

_SPACING = 2
_COLUMN = 12


def format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _time(time_us: float, unit) -> str:
    if unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if unit == "us":
        return f"{time_us:.3f}us"
    return format_time(time_us)


def format_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN" if time_us == 0 else "inf"
    return f"{time_us * 100.0 / total_us:.2f}%"


def format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{nbytes} B"


def _sort_key(sort_by: str) -> str:
    # torch's spelling: "cuda_time_total", "self_npu_time_total"... all mean the device columns
    for alias in ("cuda", "npu", "privateuse1", "xpu"):
        sort_by = sort_by.replace(alias, "device")
    return sort_by


def build_table(events, *, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, profile_memory=False,
                top_level_events_only=False, time_unit=None) -> str:
    if len(events) == 0:
        return ""
    from .events import DeviceType
    events = list(events)
    if sort_by is not None:
        attr = _sort_key(sort_by)
        events.sort(key=lambda e: getattr(e, attr), reverse=True)

    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage != 0 for e in events)
    has_shapes = any(e.input_shapes for e in events)
    stacks = [e.stack for e in events if e.stack]
    dev = "NPU"

    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    if profile_memory and has_device_mem:
        headers += [f"{dev} Mem", f"Self {dev} Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [_COLUMN] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if has_shapes:
        shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
        if max_shapes_column_width is not None:
            shapes_width = min(shapes_width, max_shapes_column_width)
        headers.append("Input Shapes")
        widths.append(shapes_width)
        aligns.append(">")
    src_width = 0
    if stacks:
        src_width = max(len(entry) for s in stacks for entry in s) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)
        headers.append("Source Location")
        widths.append(src_width)
        aligns.append("<")

    row_format = "".join("{: " + a + str(w) + "}" + " " * _SPACING for a, w in zip(aligns, widths))
    separator = "".join("-" * w + " " * _SPACING for w in widths)
    line_length = sum(w + _SPACING for w in widths) - _SPACING

    total_self_cpu = sum(e.self_cpu_time_total for e in events)
    total_self_device = sum(e.self_device_time_total for e in events if e.device_type is not DeviceType.CPU)

    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_events_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [separator, row_format.format(*headers), separator]

    def trim(path):
        if len(path) > src_width:
            path = path[len(path) - src_width:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, format_share(e.self_cpu_time_total, total_self_cpu), _time(e.self_cpu_time_total, time_unit),
               format_share(e.cpu_time_total, total_self_cpu), _time(e.cpu_time_total, time_unit),
               _time(e.cpu_time, time_unit)]
        if has_device_time:
            row += [_time(e.self_device_time_total, time_unit),
                    format_share(e.self_device_time_total, total_self_device),
                    _time(e.device_time_total, time_unit), _time(e.device_time, time_unit)]
        if profile_memory and has_device_mem:
            row += [format_memory(e.device_memory_usage), format_memory(e.self_device_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:widths[len(row)]])
        if stacks:
            row.append(trim(e.stack[0]) if e.stack else "")
        out.append(row_format.format(*row))
        if stacks and e.stack:
            blank = [""] * (len(headers) - 1)
            for entry in e.stack[1:]:
                out.append(row_format.format(*(blank + [trim(entry)])))
            out.append(row_format.format(*([""] * len(headers))))
    out.append(separator)
    out.append(f"Self CPU time total: {_time(total_self_cpu, time_unit)}")
    if has_device_time:
        out.append(f"Self {dev} time total: {_time(total_self_device, time_unit)}")
    return "\n".join(out) + "\n"
