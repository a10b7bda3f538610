#!/usr/bin/env python3
"""A scripted, OpenAI-compatible chat-completions server for tests (stdlib only).

It listens on 127.0.0.1 (port 0 picks a free port; the chosen port is the first
line printed on stdout), answers POST .../chat/completions from a script, and
records every request it receives, one JSON object a line, into a file the test
reads back. It stops by itself after --idle seconds without a request.

The script is a JSON file: either a list of steps or {"steps": [...],
"mode": "cycle" | "order"}. In "order" mode (the default) steps are used once
each and the last one repeats; in "cycle" mode they wrap around. A step is:
  {"status": 200, "body": {...} | "text", "headers": {...}, "delay": 0.1}
  {"reply": "text", "prompt_tokens": 10, "completion_tokens": 5}   a normal answer
  {"echo": true}   a normal answer whose content is "echo:" + the last user message
  {"action": "reset"}          close the connection without any reply
  {"action": "truncated"}      half of a JSON reply (Content-Length matches the half)
  {"action": "slow", "delay": 5}  sleep (past the client's timeout) and then answer
  {"action": "non_json"}       a 200 reply whose body is not JSON
  {"action": "empty_choices"}  a 200 reply with "choices": []
  {"action": "edit_number", "factors": [0.5, 2.0]}  a valid SEARCH/REPLACE edit of the
      program in the prompt (the fenced block after "# Program to improve" or
      "# Current Program"): one line inside its EVOLVE-BLOCK that assigns a non-zero
      number (name=N, name = N) and occurs once gets N multiplied by a factor
      (line and factor chosen by the request's index); "no change" when there is no such line.
Any string body may contain $AUTH, replaced by the Authorization header's value
(to test that a client hides a key a server echoes back).

The record holds, per request: index, path, headers without Authorization,
has_authorization, auth_scheme ("Bearer"), the parsed JSON body, and the step
used. The value of the Authorization header is never written.
"""

import argparse
import json
import re
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, steps, mode, record_path):
        self.steps = steps
        self.mode = mode
        self.record_path = record_path
        self.lock = threading.Lock()
        self.count = 0
        self.last_activity = time.monotonic()

    def next_step(self):
        """Returns (index, step) for the next request, under the lock."""
        with self.lock:
            i = self.count
            self.count += 1
            self.last_activity = time.monotonic()
            if not self.steps:
                return i, {"reply": "ok"}
            if self.mode == "cycle":
                return i, self.steps[i % len(self.steps)]
            return i, self.steps[min(i, len(self.steps) - 1)]

    def record(self, entry):
        if not self.record_path:
            return
        line = json.dumps(entry, sort_keys=True) + "\n"
        with self.lock:
            with open(self.record_path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()


def completion(content, model, prompt_tokens, completion_tokens):
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


# A number assigned to a name ("iterations=1000", "rate = 0.5"): a parameter, not an index.
NUMBER = re.compile(r"(?<=[=])\s*(\d+(?:\.\d+)?)(?![\w.\[])")


def program_in_prompt(text):
    """The code of the fenced block that follows the program's heading."""
    for heading in ("# Program to improve", "# Current Program\n"):
        at = text.find(heading)
        if at < 0:
            continue
        start = text.find("```", at)
        if start < 0:
            continue
        start = text.find("\n", start) + 1
        end = text.find("\n```", start)
        if start > 0 and end > start:
            return text[start:end]
    return None


def number_edit(prompt, index, factors):
    """A SEARCH/REPLACE block changing one number inside the EVOLVE-BLOCK."""
    code = program_in_prompt(prompt)
    if code is None:
        return "no change"
    lines = code.split("\n")
    inside, candidates = False, []
    for line in lines:
        if "EVOLVE-BLOCK-START" in line:
            inside = True
            continue
        if "EVOLVE-BLOCK-END" in line:
            inside = False
        nonzero = [m for m in NUMBER.finditer(line) if float(m.group(1)) != 0]
        if inside and nonzero and lines.count(line) == 1 and line.strip():
            candidates.append(line)
    if not candidates:
        return "no change"
    line = candidates[index % len(candidates)]
    factor = factors[(index // len(candidates)) % len(factors)]
    m = [m for m in NUMBER.finditer(line) if float(m.group(1)) != 0][0]
    old = m.group(1)
    new = float(old) * factor
    text = ("%d" % max(1, round(new))) if "." not in old else ("%.4g" % new)
    if text == old:  # small integers: step by the request's index instead
        text = str(int(old) + 1 + index) if "." not in old else "%.4g" % (float(old) + 0.1)
    edited = line[: m.start(1)] + text + line[m.end(1) :]
    return (
        "Scale one constant of the search.\n"
        "<<<<<<< SEARCH\n%s\n=======\n%s\n>>>>>>> REPLACE\n" % (line, edited)
    )


def last_user_message(body):
    try:
        for m in reversed(body.get("messages", [])):
            if m.get("role") == "user":
                return str(m.get("content", ""))
    except AttributeError:
        pass
    return ""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once
    state = None  # set by main
    keepalive = True

    def log_message(self, fmt, *args):  # quiet
        pass

    def send_bytes(self, status, data, headers=None, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        if not self.keepalive:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def do_GET(self):
        self.send_bytes(404, b'{"error": {"message": "not found"}}')

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            body = json.loads(raw.decode("utf-8")) if raw else None
        except (ValueError, UnicodeDecodeError):
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        auth = self.headers.get("Authorization")
        index, step = self.state.next_step()
        headers = {k: v for k, v in self.headers.items() if k.lower() != "authorization"}
        self.state.record(
            {
                "index": index,
                "path": self.path,
                "headers": headers,
                "has_authorization": auth is not None,
                "auth_scheme": auth.split(" ", 1)[0] if auth else None,
                "body": body,
                "step": step,
            }
        )
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_bytes(404, b'{"error": {"message": "unknown path"}}')
            return
        model = body.get("model", "fake") if isinstance(body, dict) else "fake"
        delay = float(step.get("delay", 0))
        action = step.get("action")
        if action == "slow":
            time.sleep(delay if delay > 0 else 5.0)
            delay = 0
        elif delay > 0:
            time.sleep(delay)

        if action == "reset":
            # Close at once, with a TCP reset, having sent nothing.
            try:
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
            except OSError:
                pass
            self.close_connection = True
            self.connection.close()
            return
        if action == "truncated":
            full = json.dumps(completion("truncated", model, 3, 3)).encode()
            self.send_bytes(200, full[: len(full) // 2])
            return
        if action == "non_json":
            self.send_bytes(200, b"<html>Bad gateway, try later</html>", content_type="text/html")
            return
        if action == "empty_choices":
            data = completion("", model, 1, 0)
            data["choices"] = []
            self.send_bytes(200, json.dumps(data).encode())
            return

        status = int(step.get("status", 200))
        if "body" in step:
            b = step["body"]
            text = b if isinstance(b, str) else json.dumps(b)
            text = text.replace("$AUTH", auth or "")
            self.send_bytes(status, text.encode(), step.get("headers"))
            return
        if action == "edit_number":
            user = last_user_message(body if isinstance(body, dict) else {})
            content = number_edit(user, index, step.get("factors") or [0.5, 2.0, 1.5])
        elif step.get("echo"):
            content = "echo:" + last_user_message(body if isinstance(body, dict) else {})
        else:
            content = str(step.get("reply", "ok"))
        data = completion(
            content,
            model,
            int(step.get("prompt_tokens", 10)),
            int(step.get("completion_tokens", 5)),
        )
        self.send_bytes(status, json.dumps(data).encode(), step.get("headers"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--script", help="JSON script file (default: always answer 'ok')")
    ap.add_argument("--record", help="file to append one JSON line per request to")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--idle", type=float, default=30.0, help="stop after this many idle seconds")
    ap.add_argument("--no-keepalive", action="store_true", help="close after every reply")
    args = ap.parse_args()

    steps, mode = [], "order"
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            script = json.load(f)
        if isinstance(script, dict):
            steps = script.get("steps", [])
            mode = script.get("mode", "order")
        else:
            steps = script
    state = State(steps, mode, args.record)
    Handler.state = state
    Handler.keepalive = not args.no_keepalive

    ThreadingHTTPServer.request_queue_size = 256
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(server.server_address[1], flush=True)

    def watchdog():
        while True:
            time.sleep(0.2)
            with state.lock:
                idle = time.monotonic() - state.last_activity
            if idle > args.idle:
                server.shutdown()
                return

    threading.Thread(target=watchdog, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
