"""Typed errors of the trainer worker and the reference engine.

Every error carries a machine-readable ``code``, the ``field`` it is about (a dotted path into the
request, or an option name) and an HTTP ``status``; the message says what was wrong and how to fix it.
"""

from __future__ import annotations


class RstarWorkerError(Exception):
    """Base class: ``code`` (machine-readable), ``field`` (what it is about), ``status`` (HTTP)."""

    code = "worker_error"
    status = 500

    def __init__(self, message: str, field: str | None = None, *, code: str | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status

    def to_json(self) -> dict:
        out = {"code": self.code, "message": self.message}
        if self.field is not None:
            out["field"] = self.field
        return out


class RequestError(RstarWorkerError):
    """A request body or option that cannot be used (400)."""

    code = "invalid_request"
    status = 400


class BatchFormatError(RstarWorkerError):
    """A batch file that is not a valid rstar.grpo-batch v1 (JSON / JSON Lines) or v2 (safetensors)."""

    code = "batch_invalid"
    status = 422


class BatchHashMismatchError(RstarWorkerError):
    """The batch's content hash differs from the ``batchHash`` of the request: nothing is trained."""

    code = "batch_hash_mismatch"
    status = 422

    def __init__(self, expected: str, actual: str, uri: str):
        super().__init__(
            f"batch {uri} hashes to {actual} but the request says batchHash {expected}; "
            "re-send the batch that belongs to this step (the file changed or the hash was taken over other content)",
            "batchHash",
        )
        self.expected = expected
        self.actual = actual

    def to_json(self) -> dict:
        return {**super().to_json(), "expected": self.expected, "actual": self.actual}


class StepConflictError(RstarWorkerError):
    """A step already accepted/trained with another batch (409)."""

    code = "step_conflict"
    status = 409

    def __init__(self, run_id: str, step: int, stored: str, sent: str):
        super().__init__(
            f"run {run_id} step {step} was already accepted with batchHash {stored}; this request sends batchHash {sent}. "
            "A step is trained once: send the same batch again to read its result, or use the next step",
            "batchHash",
        )
        self.stored = stored
        self.sent = sent

    def to_json(self) -> dict:
        return {**super().to_json(), "storedBatchHash": self.stored, "sentBatchHash": self.sent}


class PolicyVersionError(RstarWorkerError):
    """The request's ``policyVersion`` is not a version this worker holds for the run (409)."""

    code = "policy_version_mismatch"
    status = 409


class ModelDirError(RstarWorkerError):
    """A model or checkpoint directory that is missing, incomplete or inconsistent."""

    code = "model_dir_invalid"
    status = 422


class TokenizerMissingError(ModelDirError):
    """A model directory without a usable tokenizer (``tokenizer.json`` / tokenizer config)."""

    code = "tokenizer_missing"


class CheckpointIntegrityError(ModelDirError):
    """A checkpoint whose files do not match its ``manifest.json`` or lacks the ``STABLE`` marker."""

    code = "checkpoint_integrity"


class NotFoundError(RstarWorkerError):
    code = "not_found"
    status = 404


class KvCapacityError(RequestError):
    """A generation request that can never fit in the engine's KV cache."""

    code = "kv_capacity_exceeded"
