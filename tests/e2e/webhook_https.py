"""webhook_https.py - what the end-to-end tests' webhooks (webhook_server.py,
conversion_webhook.py) share: an HTTPS server (http.server and ssl of the standard
library) on an ephemeral loopback port that answers the reviews POSTed to it.

listen(handler, ...) is the server; serve(kind, answer) reads CERT KEY PORTFILE LOG from the command line, writes the
port to PORTFILE once it listens (whole: through a rename), appends every review
received to LOG (one JSON line each: {"path": ..., "review": ..., "authorization": the
Authorization header or null}, so a test can look at what the server sent) and answers each with {"apiVersion": the review's, "kind":
kind, "response": answer(path, review)}.
"""
import http.server
import json
import os
import ssl
import sys


def serve(kind, answer):
    cert, key, portfile, log = sys.argv[1:5]

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            review = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            with open(log, "a") as fh:
                fh.write(json.dumps({"path": self.path, "review": review,
                                     "authorization": self.headers.get("Authorization")}) + "\n")
            out = json.dumps({"apiVersion": review["apiVersion"], "kind": kind,
                              "response": answer(self.path, review)}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    listen(Handler, cert, key, portfile)


def listen(handler, cert, key, portfile):
    """Serves handler over HTTPS (cert, key) on an ephemeral loopback port, written to
    portfile whole once it listens; never returns."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    with open(portfile + ".tmp", "w") as fh:
        fh.write(str(server.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()
