"""As matplotlib.pyplot, reduced to figure(), plot(), get_fignums(), close() and show(). A
figure renders as a PNG signature and IHDR chunk followed by b"fig:" and its label."""

import struct

from matplotlib._pylab_helpers import Gcf


class Figure:
    def __init__(self, num, label):
        self.number = num
        self.label = label

    def get_size_inches(self):
        return (6.4, 4.8)

    def savefig(self, buf, format=None, dpi=100, pil_kwargs=None):
        w, h = self.get_size_inches()
        buf.write(b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR"
                  + struct.pack(">II", int(w * dpi), int(h * dpi)) + b"fig:" + self.label.encode())


_current = [None]


def figure(num=None, label=""):
    if num is not None and num in Gcf.figs:
        _current[0] = Gcf.figs[num]
        return _current[0]
    if num is None:
        num = max(Gcf.figs, default=0) + 1
    fig = Figure(num, label or str(num))
    Gcf.figs[num] = fig
    _current[0] = fig
    return fig


def gcf():
    if _current[0] is None or _current[0].number not in Gcf.figs:
        return figure()
    return _current[0]


def plot(*args, **kwargs):
    gcf()
    return ["<line>"]


def get_fignums():
    return sorted(Gcf.figs)


def close(fig=None):
    if fig == "all":
        Gcf.destroy_all()
        return
    if fig is None:
        fig = gcf()
    num = fig.number if isinstance(fig, Figure) else fig
    Gcf.figs.pop(num, None)


def show(*args, **kwargs):
    pass  # the harness replaces it
