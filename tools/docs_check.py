"""Checks the built documentation site in a real headless browser.

Serves the built site (`mkdocs build` writes it to `site/`) on 127.0.0.1, opens every page
in headless Chromium through Playwright and fails when:

- a page logs a console error or raises an uncaught exception (a broken script, a
  resource that does not load: no host but 127.0.0.1 resolves, so a page that needs the
  network fails here too);
- an internal link (`<a href>`, `<img src>`) points to a page or file the site lacks, or
  to an anchor (`page.html#id`) that the target page does not have;
- the search box does not find `PPOConfig`.

    python tools/docs_check.py [--site site] [--chromium /usr/bin/chromium]

Playwright's own browser download is not needed: Debian's `chromium` package (or any
Chromium given by `--chromium` / `$TFRL_CHROMIUM`) is driven through `executable_path`.
Exit status 0 when every check passed, 1 otherwise (each failure printed on one line).
"""

import argparse
import functools
import http.server
import os
import shutil
import sys
import threading
import time
import urllib.parse
from typing import Dict, List, Set, Tuple

SEARCH_TERM = "PPOConfig"


def _serve(site: str) -> Tuple[http.server.ThreadingHTTPServer, str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:  # no line per request
            pass

    handler = functools.partial(Quiet, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _pages(site: str) -> List[str]:
    """Site-relative URLs of every HTML page (directory URLs as MkDocs links them)."""
    pages = []
    for folder, _, names in os.walk(site):
        for name in names:
            if name.endswith(".html"):
                rel = os.path.relpath(os.path.join(folder, name), site).replace(os.sep, "/")
                pages.append(rel[: -len("index.html")] if rel.endswith("index.html") else rel)
    return sorted(pages)


def _target_path(site: str, path: str) -> str:
    """The file a site URL path serves (directory -> its index.html)."""
    local = os.path.join(site, urllib.parse.unquote(path).lstrip("/"))
    if path.endswith("/") or os.path.isdir(local):
        return os.path.join(local, "index.html")
    return local


def find_chromium(given: str = "") -> str:
    for candidate in (given, os.environ.get("TFRL_CHROMIUM", ""), "chromium", "chromium-browser",
                      "google-chrome"):
        found = candidate if os.path.isfile(candidate) else shutil.which(candidate or "-")
        if candidate and found:
            return found
    return ""


def check(site: str, chromium: str) -> List[str]:
    from playwright.sync_api import sync_playwright

    failures: List[str] = []
    server, base = _serve(site)
    pages = _pages(site)
    ids: Dict[str, Set[str]] = {}
    links: List[Tuple[str, str]] = []  # (page, absolute URL)
    try:
        with sync_playwright() as p:
            # Nothing outside the local server: every other host name fails to resolve,
            # so a page that needs the network logs an error here.
            browser = p.chromium.launch(
                executable_path=chromium, headless=True,
                args=["--no-sandbox", "--disable-gpu",
                      "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"])
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()  # one tab for every page: opening tabs is slow
            errors: List[str] = []
            page.on("console", lambda msg: errors.append(msg.text)
                    if msg.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            for rel in pages:
                errors.clear()
                response = page.goto(f"{base}/{rel}", wait_until="load")
                if response is None or response.status != 200:
                    status = response.status if response else "no response"
                    failures.append(f"{rel or '/'}: HTTP {status}")
                page.wait_for_timeout(250)  # scripts that run after `load` (search, ...)
                failures += [f"{rel or '/'}: console error: {e}" for e in errors]
                ids[urllib.parse.urlsplit(page.url).path] = set(page.eval_on_selector_all(
                    "[id]", "els => els.map(e => e.id)"))
                hrefs = page.eval_on_selector_all(
                    "a[href], img[src]", "els => els.map(e => e.href || e.src)")
                links += [(rel or "/", h) for h in hrefs if h.startswith(base)]
            page.close()

            page = context.new_page()
            page.goto(f"{base}/", wait_until="load")
            page.keyboard.press("/")  # Material's shortcut: focus the search box
            page.keyboard.type(SEARCH_TERM)
            try:
                page.wait_for_selector(".md-search-result__item", timeout=15_000)
                found = page.inner_text(".md-search-result__list")
                if SEARCH_TERM not in found:
                    failures.append(f"search: results for {SEARCH_TERM!r} do not mention it")
            except Exception as e:  # playwright's TimeoutError
                failures.append(f"search: no result for {SEARCH_TERM!r} ({type(e).__name__})")
            page.close()
            browser.close()
    finally:
        server.shutdown()

    checked = 0
    for rel, url in links:
        parts = urllib.parse.urlsplit(url)
        target = _target_path(site, parts.path)
        checked += 1
        if not os.path.isfile(target):
            failures.append(f"{rel}: broken link {url[len(base):]}")
            continue
        if parts.fragment and target.endswith(".html"):
            key = parts.path if not parts.path.endswith("index.html") else parts.path[:-10]
            anchors = ids.get(key) or ids.get(key.rstrip("/") + "/") or set()
            if urllib.parse.unquote(parts.fragment) not in anchors:
                failures.append(f"{rel}: link to a missing anchor {url[len(base):]}")
    searched = "failed" if any(f.startswith("search") for f in failures) else "found"
    print(f"docs_check: {len(pages)} pages, {checked} internal links, search for "
          f"{SEARCH_TERM!r}: {searched}")
    return failures


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default="site", help="the built site (mkdocs build's output)")
    parser.add_argument("--chromium", default="", help="the Chromium binary (default: "
                        "$TFRL_CHROMIUM, else chromium on the PATH)")
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.site, "index.html")):
        print(f"docs_check: {args.site}/index.html does not exist; run `mkdocs build` first "
              "(or pass --site).", file=sys.stderr)
        return 2
    chromium = find_chromium(args.chromium)
    if not chromium:
        print("docs_check: no Chromium found; install Debian's `chromium` package or pass "
              "--chromium=/path/to/chromium.", file=sys.stderr)
        return 2
    start = time.time()
    failures = check(args.site, chromium)
    for failure in failures:
        print(f"docs_check: FAIL {failure}")
    print(f"docs_check: {'FAILED' if failures else 'passed'} in {time.time() - start:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
