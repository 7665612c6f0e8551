"""The local AWS emulator (moto's server), recording every request it serves.

Started by infra/tools.sh in place of `moto_server`. With AWS_CALL_LOG set to
a directory, each request is appended as one JSON line to
`$AWS_CALL_LOG/moto.jsonl`: method, path, query, the headers IAM needs
(authorization, x-amz-target, content-type) and the body. infra/iam/check.py
reads those lines back, keeps the calls signed by a function's role (the
tests sign each function's calls with its own access key id, see
tests/support/lib.rs `Role`), and evaluates each against the policies
template.yaml gives that role.

Everything else is moto's own `moto.server.main`.
"""

import base64
import io
import json
import os
import sys
import threading

from moto.moto_server.threaded_moto_server import DomainDispatcherApplication, create_backend_app
from moto.moto_server.werkzeug_app import MotoRequestHandler
from werkzeug.serving import run_simple

RECORDED_HEADERS = ("HTTP_AUTHORIZATION", "HTTP_X_AMZ_TARGET", "CONTENT_TYPE", "HTTP_HOST", "HTTP_X_AMZ_USER_AGENT")


class Recorder:
    """A WSGI middleware: records the request, then hands it to moto unchanged."""

    def __init__(self, app, path):
        self.app = app
        self.lock = threading.Lock()
        self.log = open(path, "a", encoding="utf-8")

    def __call__(self, environ, start_response):
        length = environ.get("CONTENT_LENGTH")
        if length:
            body = environ["wsgi.input"].read(int(length))
        elif environ.get("wsgi.input_terminated"):
            body = environ["wsgi.input"].read()
        else:
            body = b""
        environ["wsgi.input"] = io.BytesIO(body)
        try:
            text = body.decode("utf-8")
            encoded = {"body": text}
        except UnicodeDecodeError:
            encoded = {"body_base64": base64.b64encode(body).decode("ascii")}
        line = {
            "method": environ.get("REQUEST_METHOD"),
            "path": environ.get("PATH_INFO"),
            "query": environ.get("QUERY_STRING", ""),
            "headers": {name: environ[name] for name in RECORDED_HEADERS if name in environ},
            **encoded,
        }
        with self.lock:
            self.log.write(json.dumps(line) + "\n")
            self.log.flush()
        return self.app(environ, start_response)


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    log_dir = os.environ.get("AWS_CALL_LOG")
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        app = Recorder(app, os.path.join(log_dir, "moto.jsonl"))
    run_simple(host, port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
