"""The pictures in docs/: the graph explorer around CERN with an edge's evidence open, a Graph RAG
trace drawn in the explorer, and the ask page's picture, at 100% zoom in headless Chromium.

    .venv/bin/python bench/screenshots.py [--out docs]

It serves a fresh data directory holding the demo corpus (`sparqlrag serve`), asks the demo
question, and saves explorer.png, explorer-trace.png and ask-picture.png. Needs chromium and
chromium-driver, and d3 fetched by `make install`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from processes import server  # noqa: E402

from sparqlrag.cli.parser import DEMO_QUESTION  # noqa: E402

BASE = "http://localhost:7878/"
WINDOW = "--window-size=1300,950"


def chromium() -> Any:
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for argument in ["--headless", "--no-sandbox", "--disable-gpu", "--force-device-scale-factor=1", WINDOW]:
        options.add_argument(argument)
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver") or "chromedriver")
    return webdriver.Chrome(options=options, service=service)


def waited(driver: Any, css: str, count: int = 1) -> list[Any]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, 60).until(
        lambda d: (found := d.find_elements(By.CSS_SELECTOR, css)) and len(found) >= count and found
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch, server(Path(scratch) / "data", BASE) as (client, _):
        for path in sorted((ROOT / "sparqlrag" / "demo" / "corpus").glob("*.md")):
            made = client.post("/api/v1/documents", json={"id": path.stem, "text": path.read_text()})
            assert made.status_code == 201, made.text
        trace = client.post("/api/v1/graph-rag", json={"question": DEMO_QUESTION}).json()["trace"]
        url = str(client.base_url).rstrip("/")
        driver = chromium()
        try:
            driver.get(f"{url}/explore?" + urlencode({"collection": "default", "entity": f"{BASE}id/default/cern"}))
            waited(driver, "svg.graph g.node", 4)
            waited(driver, f'svg.graph g.node[data-id="{BASE}id/default/tim-berners-lee"] circle')[0].click()
            time.sleep(1)
            invented = [
                edge
                for edge in waited(driver, "svg.graph g.edge")
                if "invented" in (edge.get_attribute("data-id") or "") or "invented" in edge.text
            ]
            (invented or waited(driver, "svg.graph g.edge"))[0].send_keys("\n")
            waited(driver, "#details li.evidence")
            driver.save_screenshot(str(args.out / "explorer.png"))

            params = {"collection": "default", "trace": trace.rsplit("/", 1)[1]}
            driver.get(f"{url}/explore?" + urlencode(params))
            waited(driver, "svg.graph g.node.source")
            driver.save_screenshot(str(args.out / "explorer-trace.png"))

            driver.get(f"{url}/ask")
            waited(driver, "#collection option")
            waited(driver, "#question")[0].send_keys(DEMO_QUESTION)
            waited(driver, "form.ask button")[0].click()
            waited(driver, ".turn svg.trace g.node.source")
            driver.execute_script("document.querySelector('.turn .explanation').scrollIntoView()")
            time.sleep(0.5)
            driver.save_screenshot(str(args.out / "ask-picture.png"))
        finally:
            driver.quit()
    for name in ("explorer.png", "explorer-trace.png", "ask-picture.png"):
        print(f"{args.out / name}: {(args.out / name).stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
