"""Figure helpers (figures.py); the capture end to end is in test_zygote_figures."""

import struct
import unittest

from sandbox_harness import figures


class FigureTest(unittest.TestCase):
    def test_fit_dpi(self):
        self.assertEqual(figures.fit_dpi(6.4, 4.8, 100, 2000, 2000), 100)
        self.assertAlmostEqual(figures.fit_dpi(40, 2, 100, 2000, 2000), 50)
        self.assertAlmostEqual(figures.fit_dpi(2, 40, 100, 2000, 1000), 25)
        self.assertGreater(figures.fit_dpi(1e9, 1, 100, 10, 10), 0)
        self.assertEqual(figures.fit_dpi(0, 0, 72, 10, 10), 72)

    def test_png_size(self):
        png = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + struct.pack(">II", 640, 480) + b"..."
        self.assertEqual(figures.png_size(png), (640, 480))
        self.assertIsNone(figures.png_size(b"GIF89a" + b"\x00" * 30))

    def test_budget(self):
        b = figures.FigureBudget(2, 100, 1000)
        self.assertEqual([b.take(), b.take(), b.take()], [True, True, False])
        self.assertTrue(b.truncated)
        z = figures.FigureBudget(0, 100, 1000)
        self.assertFalse(z.take())

    def test_byte_budget(self):
        b = figures.FigureBudget(5, 100, 150)
        self.assertFalse(b.fits(101))  # over one figure's bound
        self.assertTrue(b.truncated)
        self.assertEqual([b.fits(100), b.fits(60), b.fits(50)], [True, False, True])
        self.assertFalse(b.take())  # the total is reached: nothing more is rendered
