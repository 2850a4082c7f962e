"""Small HTTP servers on 127.0.0.1 that answer the routes the hubs' client libraries call, so
that the tests of `keras_bert.checkpoints.hub_ids` run the real `huggingface_hub` and
`kagglehub` without the internet. Each serves the files of one repository (a dict of
repository path -> local file) and records the requests it answered.

- `HubServer`: the Hugging Face Hub's routes that `snapshot_download` / `hf_hub_download`
  call (`huggingface_hub` reads `HF_ENDPOINT`): the repository's revision and tree listings
  (`/api/models/ORG/NAME/revision/REV`, `/api/models/ORG/NAME/tree/REV`) and the file route
  (`HEAD`/`GET /ORG/NAME/resolve/REV/PATH`, with the commit and ETag headers), and the Hub's
  `X-Error-Code` for an unknown repository, revision or file.
- `KaggleServer`: Kaggle's model API as `kagglesdk` posts to it
  (`/api/v1/models.ModelApiService/{GetModelInstance, ListModelInstanceVersionFiles,
  DownloadModelInstanceVersion}`). `kagglesdk` reaches a fixed address per
  `KAGGLE_API_ENVIRONMENT` (`LOCALHOST`: http://localhost); `requests` sends its calls
  through `HTTP_PROXY`, which points here, so the test needs no fixed port.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import threading
import urllib.parse


class _Server:
    """A threaded HTTP server of `handler_class` on a free port of 127.0.0.1."""

    def __init__(self, handler_class):
        handler = type("Handler", (handler_class,), {"owner": self})
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.requests: list[tuple[str, str]] = []  # (method, path) answered
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self) -> None:
        """Stops serving and closes the port (a later connection is refused)."""
        if self._thread.is_alive():
            self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    owner: _Server

    def log_message(self, *args):  # quiet: the tests read `owner.requests`
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict | None = None,
              content_type: str = "application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class HubServer(_Server):
    """One Hugging Face model repository `repo_id` at commit `sha` holding `files`."""

    def __init__(self, repo_id: str, files: dict[str, str], sha: str = "a" * 40):
        super().__init__(_HubHandler)
        self.repo_id, self.files, self.sha = repo_id, files, sha
        self._blob_ids: dict[str, str] = {}

    def downloads(self) -> set[str]:
        """The repository paths whose contents were sent (`GET .../resolve/...`)."""
        marker = f"/{self.repo_id}/resolve/"
        return {urllib.parse.unquote(path.split(marker, 1)[1].split("/", 1)[1])
                for method, path in self.requests if method == "GET" and marker in path}

    def blob_id(self, path: str) -> str:
        """The file's id in the listing and its ETag (a hash of its contents)."""
        if path not in self._blob_ids:
            with open(self.files[path], "rb") as f:
                self._blob_ids[path] = hashlib.sha1(f.read()).hexdigest()
        return self._blob_ids[path]


class _HubHandler(_Handler):
    owner: HubServer

    def do_HEAD(self):
        self._route()

    def do_GET(self):
        self._route()

    def _route(self):
        server = self.owner
        server.requests.append((self.command, self.path))
        path = urllib.parse.urlsplit(self.path).path
        api = f"/api/models/{server.repo_id}/"
        resolve = f"/{server.repo_id}/resolve/"
        if path.startswith(api):
            kind, _, rest = path[len(api):].partition("/")
            revision = urllib.parse.unquote(rest.split("/", 1)[0])
            if not self._known_revision(revision):
                return
            if kind == "revision":
                return self._json({"id": server.repo_id, "modelId": server.repo_id,
                                   "sha": server.sha, "private": False,
                                   "siblings": [{"rfilename": p} for p in server.files]})
            if kind == "tree":
                return self._json([{"type": "file", "path": p, "oid": server.blob_id(p),
                                    "size": os.path.getsize(f)}
                                   for p, f in server.files.items()])
        elif path.startswith(resolve):
            revision, _, name = path[len(resolve):].partition("/")
            if not self._known_revision(urllib.parse.unquote(revision)):
                return
            name = urllib.parse.unquote(name)
            if name not in server.files:
                return self._send(404, headers={"X-Error-Code": "EntryNotFound"})
            with open(server.files[name], "rb") as f:
                body = f.read()
            return self._send(200, body, {"X-Repo-Commit": server.sha,
                                          "ETag": f'"{server.blob_id(name)}"'},
                              content_type="application/octet-stream")
        self._send(404, headers={"X-Error-Code": "RepoNotFound"})

    def _known_revision(self, revision: str) -> bool:
        if revision in ("main", self.owner.sha):
            return True
        self._send(404, headers={"X-Error-Code": "RevisionNotFound"})
        return False

    def _json(self, value):
        self._send(200, json.dumps(value).encode())


class KaggleServer(_Server):
    """One Kaggle model variation `handle` (OWNER/MODEL/FRAMEWORK/VARIATION) whose latest
    version `version` holds `files`."""

    def __init__(self, handle: str, files: dict[str, str], version: int = 1):
        super().__init__(_KaggleHandler)
        self.handle, self.files, self.version = handle, files, version

    def downloads(self) -> set[str]:
        """The paths whose contents were sent (`DownloadModelInstanceVersion` with a path)."""
        return {path for method, path in self.requests if method == "DOWNLOAD"}


class _KaggleHandler(_Handler):
    owner: KaggleServer
    _SERVICE = "/api/v1/models.ModelApiService/"

    def do_POST(self):
        server = self.owner
        # Through a proxy the request line holds the whole URL (http://localhost/api/...).
        path = urllib.parse.urlsplit(self.path).path
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        framework = str(body.get("framework", "")).removeprefix("MODEL_FRAMEWORK_")  # an enum
        handle = "/".join((str(body.get("ownerSlug")), str(body.get("modelSlug")), framework,
                           str(body.get("instanceSlug"))))
        server.requests.append(("POST", path))
        if not path.startswith(self._SERVICE) or handle.lower() != server.handle.lower():
            return self._send(404, json.dumps({"code": 404, "message": "Not found"}).encode())
        method = path[len(self._SERVICE):]
        if method == "GetModelInstance":
            return self._send(200, json.dumps({"slug": body["instanceSlug"],
                                               "versionNumber": server.version}).encode())
        if body.get("versionNumber") != server.version:
            return self._send(404, json.dumps({"code": 404, "message": "No version"}).encode())
        if method == "ListModelInstanceVersionFiles":
            return self._send(200, json.dumps({
                "files": [{"name": p, "size": os.path.getsize(f)}
                          for p, f in server.files.items()], "nextPageToken": ""}).encode())
        if method == "DownloadModelInstanceVersion" and body.get("path") in server.files:
            server.requests.append(("DOWNLOAD", body["path"]))
            with open(server.files[body["path"]], "rb") as f:
                return self._send(200, f.read(), content_type="application/octet-stream")
        self._send(404, json.dumps({"code": 404, "message": "Not found"}).encode())


def folder_files(folder: str) -> dict[str, str]:
    """Every file under `folder`, as repository path -> local path."""
    return {os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/"):
            os.path.join(root, name)
            for root, _, names in os.walk(folder) for name in names}


def hf_env(home: str, endpoint: str, offline: bool = False) -> dict[str, str]:
    """The environment of a process whose `huggingface_hub` downloads from `endpoint` (a
    `HubServer`'s url) into a cache under `home`, or reads that cache alone (`offline`),
    reaching 127.0.0.1 directly even where a proxy is set for the package registries."""
    env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HOME=home, HF_HUB_OFFLINE=str(int(offline)),
               HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_TELEMETRY="1")
    for name in ("HF_HUB_CACHE", "HF_TOKEN"):
        env.pop(name, None)
    env["NO_PROXY"] = env["no_proxy"] = ",".join(
        filter(None, ["127.0.0.1,localhost", os.environ.get("NO_PROXY", "")]))
    return env
