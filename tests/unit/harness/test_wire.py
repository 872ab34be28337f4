"""The wire protocol: frames and messages (wire.py)."""

import json
import unittest

from sandbox_harness import errors, wire


class FrameTest(unittest.TestCase):
    def test_encode_layout(self):
        self.assertEqual(wire.encode_frame(b"1", b"hi"), b"\x00\x00\x00\x02" + b"1" + b"hi")
        self.assertEqual(wire.encode_frame(b"J", b""), b"\x00\x00\x00\x00J")

    def test_roundtrip_split_at_every_position(self):
        stream = (wire.encode_json_frame({"ev": "a", "x": "\u00e9"}) + wire.encode_frame(b"1", b"out")
                  + wire.encode_frame(b"2", b"") + wire.encode_json_frame({"ev": "b"}))
        for cut in range(len(stream) + 1):
            d = wire.FrameDecoder()
            d.feed(stream[:cut])
            frames = d.frames()
            d.feed(stream[cut:])
            frames += d.frames()
            self.assertEqual([k for k, _ in frames], [b"J", b"1", b"2", b"J"])
            self.assertEqual(json.loads(frames[0][1]), {"ev": "a", "x": "\u00e9"})
            self.assertEqual(frames[1][1], b"out")
            self.assertEqual(d.pending, 0)

    def test_unknown_kind_and_oversize(self):
        d = wire.FrameDecoder()
        d.feed(b"\x00\x00\x00\x01Xa")
        with self.assertRaises(errors.ProtocolError):
            d.frames()
        d = wire.FrameDecoder(max_payload=10)
        d.feed(b"\x00\x00\x00\x0bJ")
        with self.assertRaises(errors.ProtocolError):
            d.frames()

    def test_frames_before_error(self):
        d = wire.FrameDecoder()
        d.feed(wire.encode_frame(b"J", b"{}") + wire.encode_frame(b"1", b"x") + b"\x00\x00\x00\x01Zq")
        frames, error = d.frames_before_error()
        self.assertEqual(frames, [(b"J", b"{}"), (b"1", b"x")])
        self.assertIsInstance(error, errors.ProtocolError)
        with self.assertRaises(errors.ProtocolError):
            d.frames()

    def test_decode_message(self):
        self.assertEqual(wire.decode_message(b"J", b'{"op":"ping"}'), {"op": "ping"})
        for bad in (b"{nope", b"[1]", b'{"op":1}', b'{"x":1}', b"\xff"):
            with self.assertRaises(errors.ProtocolError):
                wire.decode_message(b"J", bad)
        with self.assertRaises(errors.ProtocolError):
            wire.decode_message(b"1", b'{"op":"ping"}')

    def test_json_is_always_valid_utf8(self):
        data = wire.encode_json({"value": "a\udc80b", "list": ["\ud800"]})
        obj = json.loads(data.decode("utf-8"))  # strict UTF-8
        self.assertEqual(obj["value"], "a\\udc80b")
        self.assertEqual(obj["list"], ["\\ud800"])
