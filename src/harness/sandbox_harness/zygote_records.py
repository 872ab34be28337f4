"""The zygote's reading of a run's records: the statuses I reports, and the records of the run
process U (started, image, file pieces, result, internal), each checked as the untrusted claim
it is before an event goes out; and the `done` event that closes a run."""

import json

from .checks import bound_traceback, checked_mime_type, result_path_error
from .config import is_int
from .osutil import log
from .verdicts import CORRUPT_RESULTS, RUN_SIDE_FAILURE
from .workdir import FILE_PIECE


class RunState:
    """What the zygote knows of one request to U while it relays it, and after."""

    def __init__(self, rid, limits):
        self.rid = rid
        self.limits = limits
        self.kill_reason = None
        self.kill_time = None
        self.internal = None
        self.out_bytes = 0
        self.output_cut = False
        self.result_bytes = 0
        self.ustatus = None
        self.gstatus = None
        self.cpu_ms = None
        self.max_rss_kb = None
        self.started = False
        self.result = {}
        self.images = 0
        self.image_bytes = 0  # decoded PNG bytes relayed
        self.images_truncated = False
        self.files = 0
        self.file_bytes = 0
        self.file_piece = None  # (path, bytes so far) of the file being relayed
        self.files_truncated = False
        self.corrupt = None
        self.claimed_failure = None  # U reported a failure after user code ran: an `error`
        self.code_ran_before = False
        self.stdin_w = None  # U's stdin channel when the run is interactive (zygote_input)
        self.input_seq = 0  # asks sent to the server
        self.input_pending = None  # the seq of the ask not answered yet
        self.claims_logged = 0  # refused claims of the run logged, up to CLAIMS_LOGGED
        self.claims_unlogged = 0  # and those past it, counted into one line at `done`


# The refused claims of one run the harness logs one by one: the run's code can make thousands,
# and each line reaches the server's log (which bounds them again).
CLAIMS_LOGGED = 3


def files_overhead(cfg):
    """Bytes of the file records beyond their base64 data: one record per piece (each file
    has at least one)."""
    fo = cfg["files_out"]
    return (fo["max_count"] + fo["max_total_bytes"] // FILE_PIECE + 1) * 2048


class Records:
    """The zygote's part that turns U's records into events (a mixin of Zygote)."""

    def _max_result_record(self):
        img = self.cfg["image"]
        per_image = img["max_bytes"] + (64 << 10)
        return max(per_image, FILE_PIECE) * 4 // 3 + (1 << 20) + self.cfg["value_max_chars"] * 8

    def _result_budget(self):
        img = self.cfg["image"]
        images = min(img["max_figures"] * img["max_bytes"], img["max_total_bytes"]) * 4 // 3 + \
            img["max_figures"] * (64 << 10)
        files = self.cfg["files_out"]["max_total_bytes"] * 4 // 3 + files_overhead(self.cfg)
        return (1 << 20) + images + files + self.cfg["value_max_chars"] * 8

    def _log_claim(self, state, text):
        if state.claims_logged < CLAIMS_LOGGED:
            state.claims_logged += 1
            log(text)
        else:
            state.claims_unlogged += 1

    def _on_status(self, state, payload):
        try:
            rec = json.loads(payload.decode("utf-8"))
        except ValueError:
            return
        t = rec.get("t")
        if t == "ustatus":
            state.ustatus = rec.get("status")
            state.cpu_ms = rec.get("cpu_ms")
            state.max_rss_kb = rec.get("max_rss_kb")
        elif t == "gstatus":
            state.gstatus = rec.get("status")
        elif t == "setup_error":
            state.internal = "set-up failed: %s" % rec.get("message")

    def _on_result(self, state, payload):
        """A record from the run process. It comes from the run's own process, so it is checked
        like untrusted data: only well-formed records within the configured bounds go out."""
        try:
            rec = json.loads(payload.decode("utf-8"))
        except ValueError:
            state.corrupt = CORRUPT_RESULTS
            return
        if isinstance(rec, dict):
            self._on_record(state, rec)

    def _on_record(self, state, rec):
        t = rec.get("t")
        rid = state.rid
        if t == "started" and not state.started:
            state.started = True
            self.chan.send({"ev": "started", "id": rid})
        elif t == "image":
            img = self.cfg["image"]
            w, h, data = rec.get("width"), rec.get("height"), rec.get("data_b64")
            if not (is_int(w) and is_int(h) and isinstance(data, str)
                    and 0 < w <= img["max_width_px"] and 0 < h <= img["max_height_px"]):
                return
            # Checked again (U is the code's process): a record over a figure's byte bound or the
            # run's total is dropped and marked, never relayed.
            n = len(data) // 4 * 3 - data[-2:].count("=")
            if (state.images >= img["max_figures"] or n > img["max_bytes"]
                    or state.image_bytes + n > img["max_total_bytes"]):
                state.images_truncated = True
                return
            state.images += 1
            state.image_bytes += n
            self.chan.send({"ev": "image", "id": rid, "mime_type": "image/png", "width": w,
                            "height": h, "data_b64": data})
        elif t == "file":
            self._on_file_piece(state, rec)
        elif t == "input":
            self._on_input_ask(state, rec)
        elif t == "result":
            state.result = rec
        elif t == "internal":
            message = ascii(rec.get("message"))[:2000]
            if state.started or state.code_ran_before:
                state.claimed_failure = RUN_SIDE_FAILURE
                self._log_claim(state, "run %r: the run process reported (after the code "
                                "started, so unverified): %s" % (rid, message))
            else:  # before the code: U is still the harness's alone
                state.internal = "harness error in the run: %s" % message

    def _on_file_piece(self, state, rec):
        """One piece of a returned file (send_file_pieces). Pieces of one file come in order,
        from offset 0 to the one marked last; a file failing a check from any piece on is
        dropped and marked (its later pieces too): the server keeps only files whose last
        piece arrived, so an incomplete one never passes on."""
        fo = self.cfg["files_out"]
        path, mime, data, offset, last = (rec.get("path"), rec.get("mime_type"),
                                          rec.get("data_b64"), rec.get("offset"), rec.get("last"))
        cur = state.file_piece  # (path, bytes so far) of the file being relayed, or None
        if not (isinstance(mime, str) and isinstance(data, str) and is_int(offset)
                and isinstance(last, bool) and len(data) <= (FILE_PIECE + 2) // 3 * 4
                and len(data) % 4 == 0):
            state.files_truncated = True
            state.file_piece = None
            return
        if offset == 0:
            if cur is not None:  # the previous file never ended: the server drops it
                state.files_truncated = True
            bad = result_path_error(path)
            if bad is not None:
                state.files_truncated = True
                state.file_piece = None
                self._log_claim(state, "run %r: dropped a file record whose path is %s: %s"
                                % (state.rid, bad, ascii(path)[:300]))
                return
            if state.files >= fo["max_count"]:
                state.files_truncated = True
                state.file_piece = None
                return
            state.files += 1
            cur = (path, 0)
        elif cur is None or cur[0] != path or cur[1] != offset:
            state.files_truncated = True  # out of order, or of a file already dropped
            state.file_piece = None
            return
        n = len(data) // 4 * 3 - data[-2:].count("=")
        if state.file_bytes + n > fo["max_total_bytes"]:
            state.files_truncated = True
            state.file_piece = None
            return
        state.file_bytes += n
        state.file_piece = None if last else (path, offset + n)
        self.chan.send({"ev": "file", "id": state.rid, "path": path, "offset": offset,
                        "last": last, "mime_type": checked_mime_type(mime),
                        "data_b64": data})

    def _done_event(self, state, verdict, exit_code, sig, detail, duration_ms, session_reset=False):
        if state.claims_unlogged:
            log("run %r: %d more refused record(s) not logged" % (state.rid, state.claims_unlogged))
        res = state.result
        value = res.get("value")
        if not isinstance(value, str):
            value = None
        elif len(value) > self.cfg["value_max_chars"] + 64:
            value = value[:self.cfg["value_max_chars"]]
        tb = bound_traceback(res.get("traceback"), self.cfg["traceback"])
        ev = {
            "ev": "done", "id": state.rid, "verdict": verdict, "exit_code": exit_code,
            "signal": int(sig) if sig is not None else None, "duration_ms": duration_ms,
            "value": value, "traceback": tb, "output_truncated": state.output_cut,
            "files_truncated": bool(res.get("files_truncated")) or state.files_truncated,
            "images_truncated": bool(res.get("images_truncated")) or state.images_truncated,
            "detail": detail, "cpu_ms": state.cpu_ms, "max_rss_kb": state.max_rss_kb,
            "session_reset": session_reset,
        }
        if self.session:
            ev["cells"] = self.prepared.cells if self.prepared else 0
        return ev
