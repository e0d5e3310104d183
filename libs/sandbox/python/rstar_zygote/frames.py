"""The byte protocol between the pool (libs/sandbox/src/zygote.frames.ts) and the zygote.

The host writes requests on the zygote's fd 0 and reads responses on its original fd 1; the zygote
handles one request at a time. The first line it writes is `{"ready": true, ...}`. A request is 8 hex
digits (the header's length), a JSON header, then the payload it announces:
  {"op": "exec", "payload": [codeBytes, inputBytes], "timeoutMs", "memoryMb", "outputChars",
   "hardOutputBytes", "session", "known", "echo"}  + the program's and stdin's UTF-8 bytes
  {"op": "ping"} | {"op": "end_session", "session"}
A response is one JSON line: {"status", "exitCode", "signal", "wallMs", "cpuMs", "stderrNotes",
"sessionReset", "sessionKept", "outputBytes", "streams": [[headBytes, tailBytes, totalBytes] for
stdout, stderr]}, followed by those raw bytes (stdout head, stdout tail, stderr head, stderr tail).
The zygote never decodes a program, its stdin or its output (see callmem); a zygote error answers
{"status": "sandbox_error", "stdout": "", "stderr": <why>} with no streams.
"""
import json

from .callmem import NO_CALL_BYTES, CallBytes, read_exact, write_all


def send(fd, obj, streams=()):
    """One response on `fd`: its JSON line, then the raw bytes of `streams` (Captures, stdout first),
    whose lengths the line gives under "streams"."""
    if streams:
        obj["streams"] = [c.lengths() for c in streams]
    write_all(fd, (json.dumps(obj) + "\n").encode())
    for c in streams:
        c.write_to(fd)


def read_request(fd):
    """The next request on `fd`: (header dict, CallBytes), or None at EOF. Framing: 8 hex digits giving
    the header's length, the header (JSON; `"payload": [codeBytes, inputBytes]` when the request
    carries a program), then the payload bytes, read straight into a call mapping."""
    size = bytearray(8)
    if not read_exact(fd, memoryview(size)):
        return None
    header = bytearray(int(size, 16))
    if not read_exact(fd, memoryview(header)):
        return None
    req = json.loads(header)
    code_len, input_len = req.get("payload") or (0, 0)
    if not code_len and not input_len:
        return req, NO_CALL_BYTES
    body = CallBytes(int(code_len), int(input_len))
    if not body.fill(fd):
        body.close()
        return None
    return req, body
