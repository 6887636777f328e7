"""``tinybench serve`` and ``tinybench calibrate`` end to end: a two-model router (RouteLLM's MMLU, Mixtral and GPT-4)
on the static encoder, the server as a real uvicorn process on a free port, two fake upstreams as real HTTP servers
answering in the OpenAI schema with their own name; questions sent with a plain HTTP client. Every answer comes from
the model ``tinybench route`` chooses; ``/v1/route`` equals ``tinybench route --json``; a threshold calibrated on one
half of the questions sends the asked share of the other half to the strong model; bad requests and dead or slow
upstreams get their errors while the server stays up; no key is ever in a response or the server's log."""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import numpy as np
import pandas as pd
import pytest

from tinybench_assets.cli import main
from tinybench_assets.core.routing.routers import LogisticRouter
from tinybench_assets.core.routing.served import ServedRouter
from tinybench_assets.core.routing.threshold import (
    ThresholdPolicy,
    calibrate_cost,
    calibrate_share,
    gains,
    threshold_picks,
)
from tinybench_assets.io import static_encoder as static
from tinybench_assets.serving.names import parse_model
from tinybench_assets.testing.serve_process import ServeProcess, free_port
from tinybench_assets_tests.conftest import SHARED, _need_shared
from tinybench_assets_tests.test_io.test_static_encoder import small_static_model

WEAK, STRONG = "mistralai/Mixtral-8x7B-Instruct-v0.1", "gpt-4-1106-preview"
KEYS = {"FAKE_WEAK_KEY": "sk-weak-0123456789abcdef", "FAKE_STRONG_KEY": "sk-strong-fedcba9876543210"}
ROUTER = "router:routellm/mmlu"


class FakeUpstream(ThreadingHTTPServer):
    """An OpenAI-compatible chat endpoint on a free loopback port answering as ``name``: ``[slow]`` in the question
    sleeps past the server's timeout, ``[badkey]`` answers 401 with the key it got echoed back."""

    daemon_threads = True

    def __init__(self, name: str):
        self.name, self.calls = name, []
        super().__init__(("127.0.0.1", free_port()), _Handler)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def handle_error(self, request, client_address):  # a client that gave up on a slow answer: not a failure here
        pass

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        up: FakeUpstream = self.server
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        auth = self.headers.get("authorization", "")
        up.calls.append({"path": self.path, "body": body, "auth": auth})
        text = body["messages"][-1]["content"]
        if "[slow]" in text:
            time.sleep(3.0)
        if "[badkey]" in text:
            return self._send(401, json.dumps({"error": {"message": f"Incorrect API key provided: {auth}"}}).encode())
        content = f"answer from {up.name}"
        if body.get("stream"):
            chunks = [{"model": up.name, "choices": [{"delta": {"content": w}}]} for w in content.split()]
            sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            return self._send(200, sse.encode(), "text/event-stream")
        answer = {
            "id": "x",
            "object": "chat.completion",
            "model": up.name,
            "choices": [{"message": {"content": content}}],
        }
        return self._send(200, json.dumps(answer).encode())


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """Artifacts with a logistic router for routellm.mmlu on a small static encoder (trained on 800 questions), and
    the questions it has not seen, in two halves of 1,500."""
    _need_shared()
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("serve")
    mp.setenv("TINYBENCH_ARTIFACTS", str(root / "artifacts"))
    mp.setattr(static, "_distil", small_static_model)
    enc = static.StaticEncoder.ensure(threads=1)
    df = pd.read_csv(SHARED / "routellm" / "mmlu.csv").drop_duplicates("prompt")
    df = df.sample(frac=1.0, random_state=0).reset_index(drop=True)
    train, rest = df.iloc[:800], df.iloc[800:3800].reset_index(drop=True)
    Y = train[[WEAK, STRONG]].to_numpy(dtype=float)
    router = LogisticRouter(C=4.0).fit(enc.encode(train["prompt"].tolist()), Y)
    meta = {"models": [WEAK, STRONG], "prior": Y.mean(axis=0).tolist(), "encoder": enc.encoder_id}
    meta.update({"margin": 0.0, "served": "logistic", "config": {"C": 4.0}, "partition": "routellm.mmlu"})
    (root / "artifacts" / "routellm").mkdir(parents=True)
    ServedRouter(router, meta).save(root / "artifacts" / "routellm" / "router_mmlu.npz")
    halves = []
    for i, part in enumerate((rest.iloc[:1500], rest.iloc[1500:])):
        f = root / f"half{i}.csv"
        pd.DataFrame({"id": [f"q{i}.{j}" for j in range(len(part))], "question": part["prompt"]}).to_csv(f, index=False)
        halves.append(f)
    yield {"root": root, "halves": halves, "texts": rest["prompt"].tolist()}
    mp.undo()


def cli_json(capsys, *argv) -> list | dict:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_threshold_rule_and_calibration_on_three_models():
    """The strongest model where its P(correct) beats every other model's by the threshold, else the most likely
    other model; calibration hits the asked share, or the most strong calls within a cost; an out-of-distribution
    question always goes to the strongest model."""
    P = np.array([[0.9, 0.8, 0.5], [0.2, 0.7, 0.9], [0.1, 0.2, 0.3], [0.6, 0.6, 0.95]])
    prior, cost = np.array([0.5, 0.6, 0.8]), np.array([2.0, 1.0, 5.0])
    assert np.allclose(gains(P, prior), [-0.4, 0.2, 0.1, 0.35])
    assert ThresholdPolicy(0.15).picks(P, None, prior).tolist() == [0, 2, 1, 2]
    assert ThresholdPolicy(-1.0).picks(P, cost, prior).tolist() == [2, 2, 2, 2]
    assert threshold_picks(0.5, P, prior, ood=[1, 0, 0, 0]).tolist() == [2, 1, 1, 1]  # a tie: the better prior
    rng = np.random.default_rng(0)
    big = rng.random((1000, 3))
    for share in (0.0, 0.1, 0.5, 1.0):
        cal = calibrate_share(big, prior, share)
        assert abs(cal.strong_share - share) < 0.002 and cal.mean_cost is None
        assert (threshold_picks(cal.threshold, big, prior) == 2).mean() == cal.strong_share
    ood = rng.random(1000) < 0.2  # out-of-distribution questions count among the strongest model's share
    cal = calibrate_share(big, prior, 0.3, ood)
    assert abs((threshold_picks(cal.threshold, big, prior, ood=ood) == 2).mean() - 0.3) < 0.002
    edge = np.array([[0.25, 0.5, 0.75]])  # a gain of exactly the threshold goes to the strongest model
    assert ThresholdPolicy(0.25).picks(edge, None, prior).tolist() == [2]
    cal = calibrate_cost(big, prior, cost, max_cost=2.5)
    assert cal.met and cal.mean_cost <= 2.5 and calibrate_cost(big, prior, cost, 2.0).strong_share < cal.strong_share
    assert not calibrate_cost(big, prior, cost, max_cost=0.5).met


def test_lone_question_gets_its_batch_similarities():
    """A question's neighbours and similarities alone equal its row of a batch (bitwise), with the reference rows
    normalized once (unit_rows) or each call, and through the memo an ensemble's kNN members share."""
    from tinybench_assets.core.routing.knn import nearest, normalize_rows, unit_rows

    g = np.random.default_rng(3)
    R, Q = normalize_rows(g.normal(size=(3000, 300))), g.normal(size=(9, 300)).astype(np.float32)
    idx, sim = nearest(Q, R, 20)
    for i in range(len(Q)):
        for unit in (None, unit_rows(R)):
            q = Q[i : i + 1].copy()
            for _ in range(2):  # the second call is served by the memo
                a, s = nearest(q, R, 20, ref_unit=unit)
                assert np.array_equal(a[0], idx[i]) and np.array_equal(s[0], sim[i])
    assert unit_rows(R) is unit_rows(R) and np.array_equal(unit_rows(R), normalize_rows(R))


def test_model_names():
    n = parse_model("router:routellm/mmlu?objective=quality_at_min_cost&threshold=0.4")
    assert (n.board, n.scenario, n.objective, n.threshold, n.router_id) == (
        "routellm",
        "mmlu",
        "quality_at_min_cost",
        "0.4",
        ROUTER,
    )
    assert parse_model("router:routerdc").scenario is None
    for bad in ("gpt-4", "router:", "router:a/b/c", "router:a?color=red", "router:a?tolerance=x", None):
        with pytest.raises(Exception, match="model"):
            parse_model(bad)


def test_calibrate_and_threshold_errors(project, capsys, monkeypatch, tmp_path):
    """Bad input to calibrate and to route --threshold: exit 2, one line naming the problem; a threshold saved for
    another version of the router is refused."""
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(project["root"] / "artifacts"))
    board = ["--leaderboard", "routellm", "--scenario", "mmlu", "--threads", "1"]
    q = ["--questions", str(project["halves"][0])]
    for argv, match in (
        (["calibrate", *board, *q], "give --strong-share X (0 to 1) or --max-cost C"),
        (["calibrate", *board, *q, "--strong-share", "1.5"], "a share between 0 and 1"),
        (["calibrate", *board, *q, "--max-cost", "0.01"], "trained without costs"),
        (["calibrate", *board, *q, "--strong-share", "0.2", "--name", "9lives"], "threshold name '9lives'"),
        (["route", *board, "--threshold", "nosuch", "x?"], "no threshold named 'nosuch'"),
        (["route", *board, "--threshold", "0.5", "--objective", "accuracy", "x?"], "takes no objective accuracy"),
        (["route", *board, "--threshold", "0.5", "--tolerance", "1", "x?"], "drop --tolerance"),
    ):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and match in err, err
    # a threshold saved for another version of the router file is refused
    router = project["root"] / "artifacts" / "routellm" / "router_mmlu.npz"
    copy = tmp_path / "router_mmlu.npz"
    copy.write_bytes(router.read_bytes())
    assert main(["calibrate", "--router", str(copy), *q, "--strong-share", "0.2", "--threads", "1"]) == 0
    assert (tmp_path / "router_mmlu.threshold.strong20.json").is_file()
    copy.write_bytes(router.read_bytes() + b"\0")  # not the file it was calibrated on
    capsys.readouterr()
    assert main(["route", "--router", str(copy), "--threshold", "strong20", "--threads", "1", "x?"]) == 2
    assert "calibrated on another version" in capsys.readouterr().err


def write_upstreams(path, fakes) -> None:
    lines = ["timeout_s: 2", "models:"]
    for model, (fake, env) in fakes.items():
        lines += [f"  {model}:", f"    base_url: {fake.url}", f"    model: {fake.name}", f"    api_key_env: {env}"]
    path.write_text("\n".join(lines) + "\n")


def test_server_routes_forwards_calibrates_and_survives_faults(project, capsys, tmp_path, monkeypatch):
    t0 = time.perf_counter()
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(project["root"] / "artifacts"))  # conftest gives each test its own
    half0, half1 = project["halves"]
    board = ["--leaderboard", "routellm", "--scenario", "mmlu", "--threads", "1"]
    # a threshold calibrated on one half sends the asked share of the other half to the strong model
    cal = cli_json(capsys, "calibrate", *board, "--questions", str(half0), "--strong-share", "0.3", "--json")
    assert cal["name"] == "strong30" and abs(cal["strong_share"] - 0.3) < 0.002 and cal["strongest_model"] == STRONG
    routes = cli_json(capsys, "route", *board, "--questions", str(half1), "--threshold", "strong30", "--json")
    share = np.mean([r["chosen_model"] == STRONG for r in routes])
    assert abs(share - 0.3) <= 0.03, f"{share:.3f} of the other half went to the strong model"
    texts = dict(zip(pd.read_csv(half1)["id"], pd.read_csv(half1)["question"]))
    sample = [r for r in routes if r["chosen_model"] == STRONG][:6] + [r for r in routes if r["chosen_model"] == WEAK][
        :6
    ]

    fakes = {WEAK: FakeUpstream("fake-mixtral"), STRONG: FakeUpstream("fake-gpt4")}
    write_upstreams(
        tmp_path / "up.yaml", {WEAK: (fakes[WEAK], "FAKE_WEAK_KEY"), STRONG: (fakes[STRONG], "FAKE_STRONG_KEY")}
    )
    server = ServeProcess(["--upstreams", str(tmp_path / "up.yaml")], {**os.environ, **KEYS}, tmp_path / "serve.log")
    seen = []  # every response body, checked for keys at the end
    try:
        server.start()
        with httpx2.Client(base_url=server.url, timeout=30) as c:

            def post(path, **kw):
                r = c.post(path, **kw)
                seen.append(r.text)
                return r

            assert ROUTER in [m["id"] for m in c.get("/v1/models").json()["data"]]
            # every answer comes from the model tinybench route chose for that question
            for r in sample:
                msgs = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": texts[r["id"]]}]
                resp = post("/v1/chat/completions", json={"model": f"{ROUTER}?threshold=strong30", "messages": msgs})
                assert resp.status_code == 200, resp.text
                fake = fakes[r["chosen_model"]]
                assert resp.json()["model"] == r["chosen_model"] == resp.headers["x-tinybench-model"]
                assert resp.json()["choices"][0]["message"]["content"] == f"answer from {fake.name}"
                call = fake.calls[-1]
                assert call["body"]["model"] == fake.name and call["body"]["messages"] == msgs
                assert call["auth"] == f"Bearer {KEYS['FAKE_WEAK_KEY' if fake is fakes[WEAK] else 'FAKE_STRONG_KEY']}"
            assert len(fakes[WEAK].calls) == len(fakes[STRONG].calls) == 6
            # /v1/route is tinybench route --json for the same question, with and without a threshold
            qfile = tmp_path / "few.csv"
            pd.DataFrame({"question": [texts[r["id"]] for r in sample]}).to_csv(qfile, index=False)
            for opt, flags in (("", []), ("?threshold=strong30", ["--threshold", "strong30"])):
                want = cli_json(capsys, "route", *board, "--questions", str(qfile), "--json", *flags)
                for w, r in zip(want, sample):
                    got = post("/v1/route", json={"model": ROUTER + opt, "question": texts[r["id"]]}).json()
                    assert got["router"] == ROUTER and got["chosen_model"] == w["chosen_model"]
                    assert got["question"] == w["question"] and got["expected_accuracy"] == pytest.approx(
                        w["expected_accuracy"], abs=1e-9
                    )
                    assert list(got["p"]) == list(w["p"])
                    np.testing.assert_allclose([got["p"][m] for m in w["p"]], list(w["p"].values()), rtol=0, atol=1e-9)
            # concurrent requests are decided together (one batch), each as it is alone
            alone = {
                r["id"]: post("/v1/route", json={"model": ROUTER, "question": texts[r["id"]]}).json() for r in sample
            }
            with ThreadPoolExecutor(len(sample)) as pool:
                together = pool.map(
                    lambda r: c.post("/v1/route", json={"model": ROUTER, "question": texts[r["id"]]}), sample
                )
                for r, resp in zip(sample, list(together)):
                    assert resp.json()["chosen_model"] == alone[r["id"]]["chosen_model"]
                    got, want = resp.json()["p"], alone[r["id"]]["p"]
                    np.testing.assert_allclose([got[m] for m in want], list(want.values()), rtol=0, atol=1e-9)
            # streaming passes the upstream's server-sent events through
            q = texts[sample[0]["id"]]
            resp = post(
                "/v1/chat/completions",
                json={
                    "model": f"{ROUTER}?threshold=strong30",
                    "stream": True,
                    "messages": [{"role": "user", "content": q}],
                },
            )
            assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
            assert resp.headers["x-tinybench-model"] == STRONG and resp.text.endswith("data: [DONE]\n\n")
            assert [json.loads(x[6:])["model"] for x in resp.text.split("\n\n") if x.startswith("data: {")] == [
                "fake-gpt4"
            ] * 3
            # bad requests: 400 with an OpenAI-style error body
            user = [{"role": "user", "content": "What is 2 + 2?"}]
            for kw, match in (
                ({"content": b"{not json"}, "not valid JSON"),
                ({"json": {"model": "router:routellm/nope", "messages": user}}, "no router router:routellm/nope"),
                ({"json": {"model": "gpt-4", "messages": user}}, "name a router"),
                ({"json": {"model": ROUTER, "messages": [{"role": "user", "content": "  "}]}}, "empty"),
                ({"json": {"model": ROUTER, "messages": [{"role": "system", "content": "x"}]}}, "no message with role"),
                ({"json": {"model": ROUTER + "?threshold=nosuch", "messages": user}}, "no threshold named 'nosuch'"),
                ({"json": {"model": ROUTER + "?objective=max_cost", "messages": user}}, "trained without costs"),
            ):
                resp = post("/v1/chat/completions", **kw)
                assert resp.status_code == 400 and match in resp.json()["error"]["message"], resp.text
                assert resp.json()["error"]["type"] == "invalid_request_error"

            # faults: an upstream's 4xx comes back without the key; a slow one is 504, a dead one 502, naming the model
            def chat(text):
                d = post("/v1/route", json={"model": f"{ROUTER}?threshold=strong30", "question": text}).json()
                resp = post(
                    "/v1/chat/completions",
                    json={"model": f"{ROUTER}?threshold=strong30", "messages": [{"role": "user", "content": text}]},
                )
                return d["chosen_model"], resp

            model, resp = chat(q + " [badkey]")
            assert resp.status_code == 401 and "Incorrect API key" in resp.text and "***" in resp.text
            model, resp = chat(q + " [slow]")
            assert resp.status_code == 504 and model in resp.json()["error"]["message"], resp.text
            weak_q = texts[sample[-1]["id"]]
            fakes[WEAK].stop()
            model, resp = chat(weak_q)
            assert model == WEAK and resp.status_code == 502 and WEAK in resp.json()["error"]["message"], resp.text
            assert chat(q)[1].status_code == 200 and c.get("/health").json()["status"] == "ok" and server.alive()
    finally:
        server.stop()
        for f in fakes.values():
            if f.thread.is_alive():
                f.stop()
    assert not server.alive()
    log = server.log.read_text()
    assert "tinybench serve:" in log
    for key in KEYS.values():
        assert key not in log and not any(key in t for t in seen)
    assert time.perf_counter() - t0 < 30
