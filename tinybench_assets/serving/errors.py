"""Errors the server answers in the OpenAI schema: ``{"error": {"message", "type", "param", "code"}}``."""

from __future__ import annotations


class ServingError(Exception):
    """A request the server answers with an error: HTTP ``status`` and an OpenAI-style body."""

    def __init__(self, status: int, message: str, type_: str = "invalid_request_error", param=None, code=None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type_, param, code

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad_request(message: str, param: str | None = None, code: str | None = None) -> ServingError:
    return ServingError(400, message, "invalid_request_error", param, code)


def scrub(text: str, secrets) -> str:
    """``text`` with every secret (an upstream's key) replaced by ``***``."""
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text
