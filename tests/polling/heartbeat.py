"""A heartbeat receiver for tests: a local HTTP server that records each GET of
PARTDASH_HEARTBEAT_URL (its path and when)."""

import http.server
import threading
import time

from tests.services import free_port


class HeartbeatReceiver(http.server.ThreadingHTTPServer):
    def __init__(self) -> None:
        self.paths: list[str] = []
        self.times: list[float] = []
        super().__init__(("127.0.0.1", free_port()), self.Handler)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.server.paths.append(self.path)
            self.server.times.append(time.monotonic())
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    def url(self, path: str = "/ping/abc") -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def start(self) -> "HeartbeatReceiver":
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
