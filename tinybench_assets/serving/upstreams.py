"""Where each model's requests go: a YAML file mapping every model a router may choose to an OpenAI-compatible
endpoint.

    timeout_s: 60                          # optional: seconds to wait for an upstream's answer (default 60)
    models:
      gpt-4-1106-preview:                  # the model's name on the leaderboard (what the router chooses)
        base_url: https://api.openai.com/v1
        model: gpt-4-1106-preview          # optional: the upstream's own name for it (default: the key above)
        api_key_env: OPENAI_API_KEY        # optional: the environment variable holding its key (none: no key sent)
        timeout_s: 120                     # optional: this upstream's own timeout

Keys are never in the file, only the names of the variables that hold them; they are read when a request is
forwarded and never logged or returned. A bad file is an error naming the file, the entry and the problem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TIMEOUT_S = 60.0
ENTRY_KEYS = ("base_url", "model", "api_key_env", "timeout_s")


class UpstreamConfigError(ValueError):
    """The upstreams file cannot be used: its message names the file, the entry and the problem."""


@dataclass(frozen=True)
class Upstream:
    """One model's upstream: where its requests go and what they carry."""

    name: str  # the model's name on the leaderboard
    base_url: str
    model: str
    api_key_env: str | None
    timeout_s: float

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def key(self) -> str | None:
        """The key from its environment variable (None: no variable named); KeyError naming the variable when it is
        not set."""
        if not self.api_key_env:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise KeyError(self.api_key_env)
        return value


def _timeout(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise UpstreamConfigError(f"{where}: timeout_s must be a positive number of seconds, got {value!r}")
    return float(value)


def read_upstreams(path: str | Path) -> dict[str, Upstream]:
    """model name -> Upstream, from the YAML file (module docstring)."""
    import yaml

    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as e:
        raise UpstreamConfigError(
            f"{path}: cannot read the upstreams file ({e.strerror or type(e).__name__})"
        ) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise UpstreamConfigError(f"{path}: not valid YAML{where}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), dict) or not doc["models"]:
        raise UpstreamConfigError(f"{path}: needs a 'models:' mapping of model name -> base_url, model, api_key_env")
    unknown = sorted(set(doc) - {"models", "timeout_s"})
    if unknown:
        raise UpstreamConfigError(f"{path}: unknown top-level key(s) {', '.join(unknown)} (models, timeout_s)")
    default_timeout = _timeout(doc.get("timeout_s", DEFAULT_TIMEOUT_S), f"{path}: timeout_s")
    out = {}
    for name, entry in doc["models"].items():
        where = f"{path}: models.{name}"
        if not isinstance(entry, dict):
            raise UpstreamConfigError(f"{where}: needs base_url (and optionally model, api_key_env, timeout_s)")
        extra = sorted(set(entry) - set(ENTRY_KEYS))
        if extra:
            raise UpstreamConfigError(f"{where}: unknown key(s) {', '.join(map(str, extra))} ({', '.join(ENTRY_KEYS)})")
        url = entry.get("base_url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise UpstreamConfigError(f"{where}: base_url must be an http:// or https:// URL, got {url!r}")
        env = entry.get("api_key_env")
        if env is not None and (not isinstance(env, str) or not env.strip()):
            raise UpstreamConfigError(f"{where}: api_key_env must name an environment variable, got {env!r}")
        model = entry.get("model", name)
        if not isinstance(model, str) or not model:
            raise UpstreamConfigError(f"{where}: model must be the upstream's model name, got {model!r}")
        timeout = _timeout(entry["timeout_s"], f"{where}.timeout_s") if "timeout_s" in entry else default_timeout
        out[str(name)] = Upstream(str(name), url, model, env, timeout)
    return out
