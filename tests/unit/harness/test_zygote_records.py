"""The zygote's reading of the run process's records (zygote_records.py): each one an untrusted
claim, checked before an event goes out."""

import base64
import unittest
from unittest import mock

import harness_config
from sandbox_harness import config, verdicts, zygote_records
from sandbox_harness.zygote_records import Records, RunState


def setUpModule():
    config.apply_config(config.parse_config(harness_config.config()))


class Sent:
    def __init__(self):
        self.sent = []

    def send(self, obj):
        self.sent.append(obj)


class Host(Records):
    def __init__(self, **overrides):
        self.cfg = config.parse_config(harness_config.config(overrides))
        self.chan = Sent()
        self.session = False

    def events(self, ev):
        return [e for e in self.chan.sent if e["ev"] == ev]


def piece(path, data, offset=0, last=True):
    return {"t": "file", "path": path, "mime_type": "text/plain", "offset": offset, "last": last,
            "data_b64": base64.b64encode(data).decode()}


class RecordsTest(unittest.TestCase):
    def state(self, z):
        return RunState("r", z.cfg["limits"])

    def test_started_once_and_internal_claims(self):
        z = Host()
        s = self.state(z)
        z._on_record(s, {"t": "internal", "message": "before"})
        self.assertIn("before", s.internal)  # U is still the harness's alone
        for _ in range(2):
            z._on_record(s, {"t": "started"})
        self.assertEqual(z.chan.sent, [{"ev": "started", "id": "r"}])
        z._on_record(s, {"t": "internal", "message": "after"})
        self.assertEqual(s.claimed_failure, verdicts.RUN_SIDE_FAILURE)  # the code's, maybe

    def test_images_within_bounds(self):
        z = Host(image={"max_figures": 1, "max_width_px": 100, "max_height_px": 100})
        s = self.state(z)
        for w, h in ((101, 10), (0, 10), (10, "10")):
            z._on_record(s, {"t": "image", "width": w, "height": h, "data_b64": ""})
        self.assertEqual(z.events("image"), [])
        z._on_record(s, {"t": "image", "width": 10, "height": 10, "data_b64": "QQ=="})
        z._on_record(s, {"t": "image", "width": 10, "height": 10, "data_b64": "QQ=="})
        self.assertEqual(len(z.events("image")), 1)
        self.assertTrue(s.images_truncated)

    def test_images_within_byte_bounds(self):
        # 1200 bytes each (1600 base64 characters): one figure may be 2000, all 3000.
        z = Host(image={"max_figures": 5, "max_bytes": 2000, "max_total_bytes": 3000})
        s = self.state(z)
        data = lambda n: base64.b64encode(b"x" * n).decode("ascii")
        z._on_record(s, {"t": "image", "width": 10, "height": 10, "data_b64": data(2001)})
        self.assertEqual(z.events("image"), [])  # over one figure's bound
        self.assertTrue(s.images_truncated)
        for _ in range(3):
            z._on_record(s, {"t": "image", "width": 10, "height": 10, "data_b64": data(1200)})
        self.assertEqual(len(z.events("image")), 2)  # the third passes the run's total
        self.assertEqual(s.image_bytes, 2400)

    def test_file_pieces(self):
        z = Host(files_out={"max_count": 3, "max_total_bytes": 10})
        s = self.state(z)
        z._on_record(s, piece("a", b"1234", last=False))
        z._on_record(s, piece("a", b"56", offset=4))
        self.assertEqual([(e["path"], e["offset"], e["last"]) for e in z.events("file")],
                         [("a", 0, False), ("a", 4, True)])
        self.assertFalse(s.files_truncated)
        z._on_record(s, piece("b", b"x", offset=3))  # out of order: dropped, marked
        self.assertTrue(s.files_truncated)
        for bad in ("../etc/passwd", "/abs", "a//b", "new\nline"):
            z._on_record(s, piece(bad, b"x"))
        z._on_record(s, piece("c", b"12345"))  # past max_total_bytes (a file all the same)
        z._on_record(s, piece("d", b"1"))  # the third
        z._on_record(s, piece("e", b""))  # past max_count
        self.assertEqual([e["path"] for e in z.events("file")], ["a", "a", "d"])

    def test_forged_claims_are_logged_a_few_times_then_counted(self):
        z = Host()
        s = self.state(z)
        z._on_record(s, {"t": "started"})
        with mock.patch("sandbox_harness.zygote_records.log") as log:
            for i in range(3000):
                z._on_record(s, {"t": "internal", "message": "forged %d\n" % i})
                z._on_record(s, dict(piece("../x%d" % i, b"x")))
            self.assertEqual(log.call_count, zygote_records.CLAIMS_LOGGED)
            self.assertNotIn("\n", "".join(c.args[0] for c in log.call_args_list))
            z._done_event(s, "ok", 0, None, "", 5)
            self.assertEqual(log.call_count, zygote_records.CLAIMS_LOGGED + 1)
            self.assertIn("%d more refused record(s)" % (6000 - zygote_records.CLAIMS_LOGGED),
                          log.call_args.args[0])

    def test_a_files_mime_type_is_a_plain_type_or_octet_stream(self):
        z = Host()
        s = self.state(z)
        z._on_record(s, dict(piece("a.txt", b"x"), mime_type="text/plain\r\nX-Injected: 1"))
        z._on_record(s, dict(piece("b.csv", b"x"), mime_type="text/csv"))
        self.assertEqual([e["mime_type"] for e in z.events("file")],
                         ["application/octet-stream", "text/csv"])

    def test_corrupt_and_done(self):
        z = Host(value_max_chars=16)
        s = self.state(z)
        z._on_result(s, b"not json")
        self.assertEqual(s.corrupt, verdicts.CORRUPT_RESULTS)
        s.result = {"value": "v" * 200, "traceback": {"type": "E", "message": "m",
                                                       "frames": "junk"}, "files_truncated": 1}
        done = z._done_event(s, "ok", 0, None, "", 5)
        self.assertEqual((done["value"], done["files_truncated"]), ("v" * 16, True))
        self.assertEqual(done["traceback"], {"type": "E", "message": "m", "frames": []})
        self.assertNotIn("cells", done)
