"""The Dagster UI in a real browser: headless Chromium (Debian's ``chromium`` package, /usr/bin/chromium, which
scripts/env.sh installs with apt-get) driven by Playwright's Python package with ``executable_path`` (never a
browser build downloaded by ``playwright install``).

The test builds a small store and Dagster instance in a temporary folder (30 openllm models of arc and mmlu;
``openllm.arc`` materialized through irt_model with its asset checks, see populate.py), starts
``dagster-webserver`` on 127.0.0.1 against the project's workspace.yaml with DAGSTER_HOME and the TINYBENCH_*
paths pointing there, and checks what a user sees:

* the asset graph (every group expanded) draws a node for every asset of the Definitions and an edge for every
  dependency, read off the page's SVG (node boxes and edge end points);
* irt_model's Partitions tab lists the scenario partitions; its Overview shows the latest materialization's
  metadata, and each Markdown plot opens as an <img> that really loaded (naturalWidth > 0); so does model_evaluation's
  (the evaluation's picture), whose Partitions tab lists the evaluation;
* the Checks tab of every materialized asset with checks shows each check and its latest result;
* raw_responses materialized from the UI (Materialize, one partition picked, Launch 1 run) finishes: the run
  page says Success.

The expected lists come from the webserver's GraphQL API; everything asserted is read from the page DOM.
Screenshots go to $TINYBENCH_SCREENSHOTS (default .screenshots/ui/ in the project, ignored by git); their paths
are printed. Without Chromium the test fails with the reason: it never skips.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tinybench_assets import paths
from tinybench_assets_tests.test_ui.browser_helpers import (
    ASSET_QUERY,
    CHROMIUM,
    CHROMIUM_ARGS,
    EXPECT_QUERY,
    GRAPH_BOX_JS,
    GRAPH_JS,
    RUNS_QUERY,
    VIEWPORT,
    asset_name,
    chromium_problem,
    free_port,
    graph_from_dom,
    graphql,
    isolated_env,
    kill_group,
    screenshot_dir,
    write_instance_yaml,
)

POPULATED = "openllm.arc"  # materialized by populate.py
EVALUATED = "openllm/held-out"  # model_evaluation's partition, materialized by populate.py
UI_PARTITION = "openllm.mmlu"  # landed, materialized from the UI by the test
UI_ASSET = "raw_responses"
PLOT_ASSET = "irt_model"

pytestmark = pytest.mark.timeout(400)


PANE_BACKGROUND_JS = """(sel) => {
  const pane = document.querySelector(sel).parentElement;
  const r = pane.getBoundingClientRect();
  const top = Math.max(r.top, 0), bottom = Math.min(r.bottom, window.innerHeight);
  const left = Math.max(r.left, 0), right = Math.min(r.right, window.innerWidth);
  for (const fy of [0.97, 0.9, 0.75, 0.5, 0.25]) {
    for (const fx of [0.02, 0.1, 0.3, 0.5]) {
      const x = left + fx * (right - left), y = top + fy * (bottom - top);
      const el = document.elementFromPoint(x, y);
      if (el && pane.contains(el) && !el.closest("foreignObject")) return [x, y];
    }
  }
  return null;
}"""


# --------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def chromium_ok():
    problem = chromium_problem()
    if problem:
        pytest.fail(f"browser test cannot run: {problem}", pytrace=False)


@pytest.fixture(scope="module")
def ui_store(tmp_path_factory, chromium_ok):
    root = tmp_path_factory.mktemp("ui_store")
    env = isolated_env(root)
    write_instance_yaml(Path(env["DAGSTER_HOME"]))
    t = time.time()
    out = subprocess.run(
        [sys.executable, "-m", "tinybench_assets_tests.test_ui.populate"],
        env=env,
        cwd=paths.PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, f"populating the store failed:\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}"
    return {"root": root, "env": env, "populate_s": time.time() - t, "populate_out": out.stdout.strip()}


@pytest.fixture(scope="module")
def webserver(ui_store):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    exe = shutil.which("dagster-webserver", path=str(Path(sys.executable).parent)) or "dagster-webserver"
    log = open(ui_store["root"] / "webserver.log", "w")
    t = time.time()
    proc = subprocess.Popen(
        [exe, "-w", str(paths.PROJECT_ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)],
        env=ui_store["env"],
        cwd=paths.PROJECT_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 120
        last = None
        while True:
            if proc.poll() is not None:
                raise AssertionError(
                    f"dagster-webserver exited {proc.returncode}:\n"
                    f"{(ui_store['root'] / 'webserver.log').read_text()[-5000:]}"
                )
            try:
                nodes = graphql(base, "{ assetNodes { id } }", timeout=10)["assetNodes"]
                if nodes:
                    break
            except Exception as e:  # noqa: BLE001 - not up yet
                last = e
            if time.time() > deadline:
                raise AssertionError(
                    f"dagster-webserver not ready after 120 s ({last}):\n"
                    f"{(ui_store['root'] / 'webserver.log').read_text()[-5000:]}"
                )
            time.sleep(0.5)
        yield {"base": base, "start_s": time.time() - t, "log": ui_store["root"] / "webserver.log"}
    finally:
        kill_group(proc)
        log.close()


@pytest.fixture(scope="module")
def browser(chromium_ok, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium_profile")
    with sync_playwright() as pw:
        try:
            ctx = pw.chromium.launch_persistent_context(
                str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, viewport=VIEWPORT
            )
        except Exception as e:  # noqa: BLE001
            pytest.fail(f"browser test cannot run: Chromium at {CHROMIUM} did not start: {e}", pytrace=False)
        try:
            yield ctx
        finally:
            ctx.close()


# --------------------------------------------------------------------------------------------- the test
def test_dagster_ui_in_chromium(ui_store, webserver, browser, capsys):
    from playwright.sync_api import expect

    t0 = time.time()
    base = webserver["base"]
    shots_dir = screenshot_dir()
    shots: list[Path] = []
    timings = {"populate": ui_store["populate_s"], "webserver_start": webserver["start_s"]}

    nodes = graphql(base, EXPECT_QUERY)["assetNodes"]
    names = {asset_name(n["assetKey"]["path"]) for n in nodes}
    expected_edges = {
        (asset_name(d["path"]), asset_name(n["assetKey"]["path"])) for n in nodes for d in n["dependencyKeys"]
    }
    groups = sorted({n["groupName"] for n in nodes})
    from tinybench_assets.definitions import defs

    defined = {k.to_user_string() for k in defs.get_repository_def().assets_defs_by_key}
    assert names == defined, f"the webserver serves other assets than the Definitions: {sorted(names ^ defined)}"
    assert expected_edges

    page = browser.new_page()
    page.set_default_timeout(30_000)
    # First visit: Dagster may open a "Join the Dagster community" modal over the page; dismiss it whenever it shows.
    # (a fresh DAGSTER_HOME has no .nux/nux.yaml, so it shows here, about a second after the first page loads).
    community = page.get_by_text("Join the Dagster community")

    def skip_community_modal() -> None:
        page.get_by_role("button", name="Skip").click()
        timings["first_visit_modal"] = f"dismissed {time.time() - t0:.1f} s in"

    page.add_locator_handler(community, skip_community_modal)

    def shot(name: str, locator=None) -> Path:
        p = shots_dir / f"{name}.png"
        (locator or page).screenshot(path=str(p))
        shots.append(p)
        return p

    def dismiss_first_visit_modal(wait_s: float = 10) -> None:
        """Wait up to wait_s for the modal; the locator handler clicks Skip (it may do so inside any Playwright call)."""
        deadline = time.time() + wait_s
        while "first_visit_modal" not in timings and time.time() < deadline:
            if community.is_visible():
                expect(community).to_be_hidden()  # the handler runs before this assertion
                break
            page.wait_for_timeout(200)
        timings.setdefault("first_visit_modal", "not seen")

    try:
        # ---- 1. the asset graph: every asset and every lineage edge
        t = time.time()
        page.goto(f"{base}/asset-groups")
        dismiss_first_visit_modal()
        expect(page.locator("svg[class*=svgContainer]")).to_be_visible()
        for g in groups:  # collapsed group boxes, named as the pipeline's stages
            expect(
                page.locator("svg[class*=svgContainer] foreignObject").get_by_text(g, exact=True).first
            ).to_be_visible()
        shot("asset_graph_groups")
        timings["graph_groups"] = time.time() - t
        page.locator("[role=img][aria-label=settings]").last.click()
        expand = page.get_by_role("menuitem", name=re.compile("Expand all groups"))
        if expand.count():
            expand.click()
        page.keyboard.press("Escape")
        # The graph draws only the boxes inside the viewport: double-click the background to fit the expanded graph
        # (width-fitted), and zoom out while a box is still off screen.
        # The pane may extend under the page header (the layout depends on the graph), so pick a point of the pane
        # that is on screen and shows background (no asset box, no header over it) and double-click there.
        point = page.evaluate(PANE_BACKGROUND_JS, "svg[class*=svgContainer]")
        assert point, "no visible background point in the asset graph pane to double-click"
        page.mouse.dblclick(*point)
        labels = page.locator("svg[class*=svgContainer] foreignObject [class*=assetName]")
        for zoom_outs in range(4):  # noqa: B007 - read after the loop
            try:
                expect(labels).to_have_count(len(names), timeout=5_000)
                break
            except AssertionError:
                page.locator("[aria-label=zoom_out]").click()
        timings["graph_zoom_outs"] = zoom_outs
        timings["graph_fitted"] = time.time() - t
        expect(labels).to_have_count(len(names))
        page.wait_for_timeout(800)  # edges settle after the zoom animation
        dom = page.evaluate(GRAPH_JS)
        boxes, seen_edges, unmatched = graph_from_dom(dom, names)
        assert set(boxes) == names, f"graph misses {sorted(names - set(boxes))}"
        assert not unmatched, f"edges drawn between no two asset boxes: {unmatched[:5]}"
        assert seen_edges == expected_edges, (
            f"lineage edges missing from the page: {sorted(expected_edges - seen_edges)}; "
            f"extra: {sorted(seen_edges - expected_edges)}"
        )
        shot("asset_graph")
        box = page.evaluate(GRAPH_BOX_JS)
        page.screenshot(path=str(shots_dir / "asset_graph_crop.png"), clip=box)
        shots.append(shots_dir / "asset_graph_crop.png")
        timings["graph"] = time.time() - t

        # ---- 2. partitioned assets: partitions, latest metadata, plots rendered as images
        def plots_load(asset_key: str, partition: str, also: tuple = ()) -> list[str]:
            asset = graphql(base, ASSET_QUERY, {"path": [asset_key]})["assetNodeOrError"]
            latest = asset["assetMaterializations"][0]
            assert latest["partition"] == partition
            plots = [
                e["label"]
                for e in latest["metadataEntries"]
                if e["__typename"] == "MarkdownMetadataEntry" and "data:image/png" in (e.get("mdStr") or "")
            ]
            assert plots, f"{asset_key}'s latest materialization has no PNG plot in its metadata"
            page.goto(f"{base}/assets/{asset_key}?view=partitions")
            for key in asset["partitionKeys"]:
                expect(page.get_by_text(key, exact=True).first).to_be_visible()
            assert {partition, *also} <= set(asset["partitionKeys"])
            shot(f"{asset_key}_partitions")
            page.goto(f"{base}/assets/{asset_key}")
            expect(page.get_by_text(partition, exact=True).first).to_be_visible()  # latest materialization's partition
            table = page.locator("table").filter(has=page.get_by_text(plots[0], exact=True)).first  # the metadata
            for entry in latest["metadataEntries"]:
                expect(table.get_by_text(entry["label"], exact=True).first).to_be_visible()
            shot(f"{asset_key}_metadata")
            for i, label in enumerate(plots):
                row = table.locator("tr").filter(has=page.get_by_text(label, exact=True))
                row.get_by_text("[Show Markdown]").click()
                dialog = page.get_by_role("dialog")
                img = dialog.locator("img").first
                expect(img).to_be_visible()
                img.evaluate("e => e.complete ? null : new Promise(r => { e.onload = r; e.onerror = r; })")
                width = img.evaluate("e => e.naturalWidth")
                assert width > 0, f"plot {label!r} of {asset_key} did not load as an image"
                if i == 0:
                    shot(f"{asset_key}_plot", dialog)
                dialog.get_by_role("button", name="Close").click()
                expect(dialog).to_be_hidden()
            return plots

        t = time.time()
        plots_load(PLOT_ASSET, POPULATED, also=(UI_PARTITION,))
        timings["asset_page"] = time.time() - t
        t = time.time()
        assert "evaluation" in plots_load("model_evaluation", EVALUATED)  # the evaluation's picture
        timings["evaluation_page"] = time.time() - t

        # ---- 3. the checks tab of every materialized asset that has checks: each check and its result
        t = time.time()
        checked = 0
        for n in nodes:
            checks = (n.get("assetChecksOrError") or {}).get("checks") or []
            runs = [c for c in checks if c["executionForLatestMaterialization"]]
            if not runs:
                continue
            aname = asset_name(n["assetKey"]["path"])
            page.goto(f"{base}/assets/{aname}?view=checks")
            expect(page.get_by_text(f"Checks ({len(checks)})")).to_be_visible()
            for c in checks:
                # the list on the left: one row per check, its (middle-truncated) name titled in full, then its result
                row = page.locator("[class*=checkRow]").filter(has=page.locator(f'[title="{c["name"]}"]'))
                expect(row).to_have_count(1)
                status = (c["executionForLatestMaterialization"] or {}).get("status")
                if status:
                    expect(row).to_contain_text(status.replace("_", " "), ignore_case=True)
            if not checked:
                shot(f"{aname}_checks")
            checked += 1
        assert checked, "no asset check was evaluated while populating the store"
        timings["checks"] = time.time() - t

        # ---- 4. materialize one small partition from the UI and wait for the run to succeed
        t = time.time()
        before = {r["runId"] for r in graphql(base, RUNS_QUERY)["runsOrError"]["results"]}
        page.goto(f"{base}/assets/{UI_ASSET}")
        page.get_by_role("button", name=re.compile("Materialize")).first.click()
        dialog = page.get_by_role("dialog")
        expect(dialog.get_by_text(f"Launch runs to materialize {UI_ASSET}")).to_be_visible()
        dialog.get_by_text("Select a partition or create one").click()
        page.get_by_role("menuitem", name=UI_PARTITION).or_(page.get_by_role("option", name=UI_PARTITION)).first.click()
        dialog.get_by_text(f"Launch runs to materialize {UI_ASSET}").click()  # closes the partition drop-down
        launch = dialog.get_by_role("button", name="Launch 1 run")
        expect(launch).to_be_enabled()
        shot("launch_dialog")
        launch.click()
        run = None
        deadline = time.time() + 180
        while time.time() < deadline:
            new = [r for r in graphql(base, RUNS_QUERY)["runsOrError"]["results"] if r["runId"] not in before]
            if new:
                run = new[0]
                if run["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
                    break
            time.sleep(1)
        assert run is not None, "no run started after 'Launch 1 run'"
        tags = {tg["key"]: tg["value"] for tg in run["tags"]}
        assert tags.get("dagster/partition") == UI_PARTITION, tags
        assert [asset_name(a["path"]) for a in run["assetSelection"] or []] == [UI_ASSET]
        page.goto(f"{base}/runs/{run['runId']}")
        assert run["status"] == "SUCCESS", (
            f"run {run['runId']} launched from the UI ended {run['status']}; webserver log: {webserver['log']}"
        )
        expect(page.get_by_text("Success", exact=True).first).to_be_visible(timeout=30_000)
        expect(page.get_by_text("Loading run logs")).to_have_count(0, timeout=30_000)
        shot("ui_run")
        page.goto(f"{base}/assets/{UI_ASSET}?view=partitions")
        expect(page.get_by_text(UI_PARTITION, exact=True).first).to_be_visible()
        timings["ui_run"] = time.time() - t
    except Exception:
        shot("failure")
        raise
    finally:
        timings["browser_total"] = time.time() - t0
        with capsys.disabled():
            print(f"\n[test_ui] {ui_store['populate_out']}")
            print(
                "[test_ui] "
                + ", ".join(f"{k} {v:.1f} s" if isinstance(v, float) else f"{k} {v}" for k, v in timings.items())
            )
            for p in shots:
                print(f"[test_ui] screenshot {p}")
