"""The model side of the development server: versions under a base directory, loaded as TF
Serving loads them, validated requests, warmup, and TF Serving's "latest" version policy.

Each version is a `SessionBundle` (`keras_bert.export.session_bundle`): the `serve`
MetaGraph imported into a Session, variables restored by the SaverDef, signatures run by
their `signature_def` tensor names; TF Text is present as its kernel libraries only. So
this server can serve only what TensorFlow Serving can. This module uses no Keras or model
code. Transport code (`server.py`, `rest.py`) turns requests into `name -> np.ndarray`
inputs and calls `ServedVersion.run` (`served_version.py`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time

import grpc
from tensorflow_serving.apis import get_model_status_pb2

from keras_bert.devserver.served_version import (
    DEFAULT_MAX_CONCURRENT_CALLS,
    DEFAULT_MAX_ROWS,
    DEFAULT_MAX_STRING_BYTES,
    ServedVersion,
    ServingError,
    not_found,
    tensor_proto_to_array,
)
from keras_bert.export.versions import existing_versions
from keras_bert.export.warmup import WARMUP_FILE

log = logging.getLogger("keras_bert.devserver")

START, LOADING, AVAILABLE, UNLOADING, END = "START", "LOADING", "AVAILABLE", "UNLOADING", "END"


@dataclasses.dataclass
class VersionState:
    """What `GetModelStatus` reports for one version."""

    state: str
    error_code: str = "OK"
    error_message: str = ""


def status_response(store: ModelStore, name: str, version: int | None):
    """The `GetModelStatusResponse` of `name` (one version, or all of them)."""
    response = get_model_status_pb2.GetModelStatusResponse()
    states = get_model_status_pb2.ModelVersionStatus.State
    for number, state in store.status(name, version):
        entry = response.model_version_status.add(version=number, state=states.Value(state.state))
        entry.status.error_code = grpc.StatusCode[state.error_code].value[0]
        entry.status.error_message = state.error_message
    return response


class ModelStore:
    """The versions of one model under `base_dir`, served with TF Serving's latest policy.

    `poll()` loads the highest version that has not failed to load (replaying its warmup
    requests first), makes it AVAILABLE, then unloads the one it replaces; `start()` polls
    every `poll_seconds` in a daemon thread. Requests hold a reference to the version they
    resolved, so an unload never interrupts them. `batching` (keyword arguments of `Batcher`,
    or None for none) merges concurrent requests to a signature into one call.

    Limits that keep the server alive under abuse: a request holds at most `max_rows` rows
    and strings of at most `max_string_bytes`; at most `max_concurrent_calls` model calls
    run at once (further requests wait their turn). `session_config` (a `ConfigProto`, or None
    for TensorFlow's defaults) builds each version's Session: its thread pools.
    """

    def __init__(self, base_dir: str, model_name: str, poll_seconds: float = 2.0,
                 warmup: bool = True, max_string_bytes: int = DEFAULT_MAX_STRING_BYTES,
                 batching: dict | None = None, max_rows: int = DEFAULT_MAX_ROWS,
                 max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS,
                 session_config=None):
        if min(max_string_bytes, max_rows, max_concurrent_calls) < 1:
            raise ValueError("request limits must be positive")
        self.base_dir = os.path.abspath(base_dir)
        self.max_rows = max_rows
        self.gate = threading.BoundedSemaphore(max_concurrent_calls)
        self.batching = batching
        self.session_config = session_config
        self.model_name = model_name
        self.poll_seconds = poll_seconds
        self.warmup = warmup
        self.max_string_bytes = max_string_bytes
        self.current: ServedVersion | None = None
        self.states: dict[int, VersionState] = {}
        self.warmup_counts: dict[int, int] = {}
        self._failed: set[int] = set()
        self._lock = threading.Lock()
        self._poll_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # Requests ---------------------------------------------------------------------------

    def check_name(self, name: str) -> None:
        """NOT_FOUND unless `name` is this store's model."""
        if name != self.model_name:
            raise not_found(f"model '{name}' not found; this server serves "
                            f"'{self.model_name}'")

    def get(self, name: str, version: int | None = None) -> ServedVersion:
        """The AVAILABLE version `version` (default: the latest) of model `name`."""
        self.check_name(name)
        current = self.current
        if current is None:
            raise ServingError(grpc.StatusCode.UNAVAILABLE,
                               f"model '{name}' has no available version yet (base directory "
                               f"{self.base_dir})")
        if version is not None and version != current.version:
            raise not_found(f"version {version} of model '{name}' is not available; serving "
                            f"version {current.version}")
        return current

    def status(self, name: str, version: int | None = None) -> list[tuple[int, VersionState]]:
        """`(version, state)` pairs, newest first (one pair when `version` is given)."""
        self.check_name(name)
        with self._lock:
            states = sorted(self.states.items(), reverse=True)
        if version is not None:
            states = [(v, s) for v, s in states if v == version]
            if not states:
                raise not_found(f"version {version} of model '{name}' was never loaded")
        elif not states:
            raise not_found(f"model '{name}' has no versions under {self.base_dir}")
        return states

    # Versions ---------------------------------------------------------------------------

    def poll(self) -> bool:
        """Loads the latest version if it changed; True when the served version changed."""
        with self._poll_lock:
            versions = [v for v in existing_versions(self.base_dir) if v not in self._failed]
            current = self.current
            target = versions[-1] if versions else None
            if target == (current.version if current else None):
                return False
            if target is None:
                log.warning("model '%s': no versions left under %s; unloading version %d",
                            self.model_name, self.base_dir, current.version)
                self._unload(current)
                return True
            if not self._load(target):
                return False
            if current is not None:
                self._unload(current)
            return True

    def _set_state(self, version: int, state: str, error_code: str = "OK",
                   error_message: str = "") -> None:
        with self._lock:
            self.states[version] = VersionState(state, error_code, error_message)

    def _load(self, version: int) -> bool:
        path = os.path.join(self.base_dir, str(version))
        self._set_state(version, LOADING)
        log.info("model '%s': loading version %d from %s", self.model_name, version, path)
        started = time.monotonic()
        served = None
        try:
            served = ServedVersion(version, path, self.max_string_bytes, self.batching,
                                   self.max_rows, self.gate, self.session_config)
            if self.warmup:
                served.warmup_requests = self._run_warmup(served)
        except Exception as e:  # noqa: BLE001 - a bad export must not stop the server
            log.exception("model '%s': version %d failed to load", self.model_name, version)
            if served is not None:
                served.close()
            self._failed.add(version)
            self._set_state(version, END, "UNKNOWN", f"failed to load: {e}")
            return False
        with self._lock:
            self.warmup_counts[version] = served.warmup_requests
            self.current = served
            self.states[version] = VersionState(AVAILABLE)
        log.info("model '%s': version %d is AVAILABLE (%.1fs, %d warmup request(s))",
                 self.model_name, version, time.monotonic() - started, served.warmup_requests)
        return True

    def _unload(self, served: ServedVersion) -> None:
        self._set_state(served.version, UNLOADING)
        with self._lock:
            if self.current is served:
                self.current = None
        served.close()
        self._set_state(served.version, END)
        log.info("model '%s': version %d unloaded", self.model_name, served.version)

    def _run_warmup(self, served: ServedVersion) -> int:
        """Replays the version's warmup `PredictLog`s; returns how many ran."""
        from keras_bert.export.warmup import read_warmup

        if not os.path.exists(os.path.join(served.path, WARMUP_FILE)):
            return 0
        count = 0
        for record in read_warmup(served.path):
            if not record.HasField("predict_log"):
                log.warning("warmup: skipping a non-predict record in version %d",
                            served.version)
                continue
            request = record.predict_log.request
            inputs = {name: tensor_proto_to_array(proto, name)
                      for name, proto in request.inputs.items()}
            served.run(request.model_spec.signature_name, inputs, request.output_filter)
            count += 1
        log.info("warmup: replayed %d request(s) for model '%s' version %d", count,
                 self.model_name, served.version)
        return count

    def start(self) -> ModelStore:
        """Loads the latest version now, then polls in a daemon thread."""
        self.poll()
        if self.current is None:
            log.warning("model '%s': no loadable version under %s yet; waiting for one",
                        self.model_name, self.base_dir)
        self._thread = threading.Thread(target=self._poll_loop, name="model-poller",
                                        daemon=True)
        self._thread.start()
        return self

    def _poll_loop(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - keep polling whatever happens
                log.exception("model '%s': polling %s failed", self.model_name, self.base_dir)

    def stop(self) -> None:
        """Stops polling (the served version stays loaded until the store is dropped)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
