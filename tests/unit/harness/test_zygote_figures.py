"""Figures end to end, with the fake matplotlib."""

import unittest

from harness_testing import FAKE_MPL, Zygote, figure_labels


class FigureCaptureTest(unittest.TestCase):
    """Figures end to end with the fake matplotlib: those shown, then those still open when the
    code ends, once each, in both pool modes and in sessions, preloaded or imported by the cell."""

    IMPORT = "import matplotlib.pyplot as plt\n"

    def zygote(self, preloaded, **config):
        config.setdefault("preload", ["matplotlib"] if preloaded else [])
        z = Zygote(self, boot_path=FAKE_MPL, **config)
        ready = z.frames("ready")[-1][1]
        self.assertEqual(ready["errors"], [])
        self.assertEqual(ready["preloaded"], ["matplotlib"] if preloaded else [])
        return z

    def run_figures(self, z, code, **fields):
        _, err, ev = z.run(self.IMPORT + code, **fields)
        return figure_labels(ev), ev[-1], err

    def test_pool_modes(self):
        cases = [
            # (code, labels, verdict)
            ("plt.plot([3, 1, 2])", ["1"], "ok"),
            ("plt.plot([3, 1, 2])\nx = 1", ["1"], "ok"),
            ("plt.figure(label='a'); plt.show()\nplt.figure(label='b'); plt.plot([2])",
             ["a", "b"], "ok"),
            ("plt.plot([1]); plt.close()", [], "ok"),
            ("plt.figure(label='a'); plt.figure(label='b'); plt.close(1)", ["b"], "ok"),
            ("plt.plot([1])\nraise ValueError('after the plot')", ["1"], "error"),
            ("import sys\nplt.plot([1])\nsys.exit(3)", ["1"], "error"),
            ("import atexit\nplt.plot([1])\natexit.register(plt.close, 'all')", [], "ok"),
            ("import atexit\natexit.register(lambda: plt.figure(label='x'))", ["x"], "ok"),
        ]
        for mode in ("recycle", "fresh"):
            for preloaded in (True, False):
                for code, labels, verdict in cases:
                    with self.subTest(mode=mode, preloaded=preloaded, code=code):
                        z = self.zygote(preloaded, mode=mode)
                        got, done, err = self.run_figures(z, code)
                        self.assertEqual((got, done["verdict"], done["images_truncated"]),
                                         (labels, verdict, False), err)
                        if mode == "recycle":  # the next run starts with no figure
                            z.frames("ready")
                            got, done, _ = self.run_figures(z, "x = 2")
                            self.assertEqual((got, done["verdict"]), ([], "ok"))

    def test_max_figures_bounds_open_figures(self):
        for preloaded in (True, False):
            z = self.zygote(preloaded, image={"max_figures": 2})
            got, done, _ = self.run_figures(z, "plt.figure(label='a'); plt.show()\n"
                                               "for n in 'bcd':\n    plt.figure(label=n)")
            self.assertEqual((got, done["images_truncated"]), (["a", "b"], True))
            z.frames("ready")
            got, done, _ = self.run_figures(z, "plt.figure(label='e')")
            self.assertEqual((got, done["images_truncated"]), (["e"], False))

    def test_figure_byte_bounds(self):
        # The fake PNG is ~30 bytes plus its label: a figure over max_bytes is dropped, and
        # one that would pass the cell's max_total_bytes; both marked, the others come back.
        z = self.zygote(True, image={"max_bytes": 1024, "max_total_bytes": 1400})
        got, done, err = self.run_figures(
            z, "plt.figure(label='b' * 1100); plt.figure(label='s'); "
               "plt.figure(label='m' * 700); plt.figure(label='n' * 700)")
        self.assertEqual(([len(g) for g in got], done["images_truncated"]), ([1, 700], True), err)

    def test_session_cells(self):
        for preloaded in (True, False):
            with self.subTest(preloaded=preloaded):
                z = self.zygote(preloaded, mode="session")
                got, done, err = self.run_figures(z, "plt.plot([3, 1, 2])", id="a")
                self.assertEqual((got, done["verdict"]), (["1"], "ok"), err)
                z.frames("ready")
                got, done, _ = self.run_figures(z, "y = 1", id="b")
                self.assertEqual(got, [], "an earlier cell's figure is not returned again")
                z.frames("ready")
                got, _, _ = self.run_figures(z, "plt.figure(label='s'); plt.show()\n"
                                                "plt.figure(label='o')", id="c")
                self.assertEqual(got, ["s", "o"])
                z.frames("ready")
                got, done, _ = self.run_figures(z, "plt.figure(label='e')\n1 / 0", id="d")
                self.assertEqual((got, done["verdict"], done["session_reset"]),
                                 (["e"], "error", False))
                z.frames("ready")
                got, _, _ = self.run_figures(z, "plt.figure(label='c'); plt.close('all')", id="e")
                self.assertEqual(got, [])
