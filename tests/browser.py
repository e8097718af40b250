"""A real headless browser for the HTML reports: Debian's chromium driven by Playwright.

The tests open a report as a user does (a file:// URL, no server), and check what a user would see:
the page's console and script errors, each figure's pixels, the links to files beside the report.
Playwright's own browser download is not used (it needs the network): `make browser` installs
Debian's chromium (`make test` in the background), and without it these tests fail with a reason.

`python -m tests.browser PAGE.html OUT.png` takes the full-page screenshot kept in docs/.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest
from PIL import Image
from playwright.sync_api import BrowserContext, ConsoleMessage, Page, sync_playwright

# A laptop screen: the width the committed screenshots are taken at.
LAPTOP = {"width": 1280, "height": 800}
# Without the background-networking flags chromium keeps dialling Google's hosts, which this kind of
# closed machine refuses (many at a time); GPU and sandbox are unavailable in containers and CI.
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


# `make test` installs chromium in the background (the Makefile's debian target) and writes the
# installer's pid here: a browser test that starts before it is done waits for it.
INSTALL_PID = Path(__file__).resolve().parents[1] / ".venv" / "chromium-install.pid"
INSTALL_WAIT_S = 900.0


def chromium_path() -> str | None:
    found = shutil.which("chromium")
    if found is None and _wait_for_install():
        found = shutil.which("chromium")
    return found


def _wait_for_install() -> bool:
    """Wait for a background install of chromium still running; whether there was one."""
    try:
        pid = int(INSTALL_PID.read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return False
    deadline = time.monotonic() + INSTALL_WAIT_S
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, another user's
            pass
        time.sleep(2.0)
    return True


@contextmanager
def launch() -> Iterator[BrowserContext]:
    """Chromium with a fresh, throw-away profile (a shared profile leaks state between tests); pages
    open with `.new_page()` on what it yields."""
    executable = chromium_path()
    if executable is None:
        raise RuntimeError("chromium is not installed (apt-get install chromium, or `make browser`)")
    with tempfile.TemporaryDirectory(prefix="agentk-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=executable, args=CHROMIUM_ARGS, headless=True, viewport=LAPTOP
        )
        try:
            yield context
        finally:
            context.close()


@dataclass
class Loaded:
    """An opened page with what it said while loading."""

    page: Page
    path: Path
    console_errors: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)


def open_page(browser: BrowserContext, path: Path, width: int = LAPTOP["width"]) -> Loaded:
    """Open a local HTML file as a user would (file://) and wait until it and its images loaded."""
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": LAPTOP["height"]})
    loaded = Loaded(page, Path(path).resolve())

    def on_console(message: ConsoleMessage) -> None:
        line = f"{message.type}: {message.text}"
        loaded.console.append(line)
        if message.type in ("error", "assert"):
            loaded.console_errors.append(line)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: loaded.page_errors.append(str(exc)))
    page.on("requestfailed", lambda request: loaded.failed_requests.append(f"{request.url}: {request.failure}"))
    page.goto(loaded.path.as_uri(), wait_until="load")
    page.wait_for_load_state("networkidle")
    return loaded


def screenshot(page: Page, path: Path | None = None, full_page: bool = True) -> bytes:
    """The page's PNG (the whole scrolled length by default), also written to `path` when given."""
    png = page.screenshot(full_page=full_page, type="png", animations="disabled")
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(png)
    return png


def is_blank(png: bytes | Path, share: float = 0.995) -> bool:
    """True when one colour covers nearly all pixels (a figure that drew nothing, an empty page)."""
    data = Path(png).read_bytes() if isinstance(png, Path) else png
    image = Image.open(BytesIO(data)).convert("RGB")
    # Small images are enough to tell a drawing from a blank, and getcolors stays cheap.
    image.thumbnail((400, 400))
    pixels = image.width * image.height
    if pixels == 0:
        return True
    colours = image.getcolors(maxcolors=pixels) or []
    return max(count for count, _ in colours) >= share * pixels


def _local_path(url: str) -> Path:
    return Path(unquote(urlparse(url).path))


def broken_links(page: Page, base: Path | None = None) -> list[str]:
    """Every link that does not work, with why: a local file or folder that does not exist, an
    in-page anchor with no target, and any external link (a report is meant to work offline, so none
    is expected). Relative hrefs resolve against `base` (default: the page's own folder)."""
    base_url = (Path(base).resolve().as_uri() + "/") if base is not None else page.url
    hrefs: list[str] = page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))")
    problems = []
    for href in hrefs:
        url = urljoin(base_url, href)
        parsed = urlparse(url)
        if href.startswith("#"):
            anchor = unquote(href[1:])
            if anchor and page.locator(f"[id='{anchor}'], a[name='{anchor}']").count() == 0:
                problems.append(f"{href}: no element with that id on the page")
        elif parsed.scheme == "file":
            if not _local_path(url).exists():
                problems.append(f"{href}: {_local_path(url)} does not exist")
        else:
            problems.append(f"{href}: an external link in a page meant to work offline")
    return problems


@dataclass(frozen=True)
class DrawnFigure:
    caption: str
    width: float
    height: float
    blank: bool


def drawn_figures(page: Page) -> list[DrawnFigure]:
    """Each <figure> holding an <svg>, with its rendered size and whether its pixels are blank."""
    found = []
    figures = page.locator("figure:has(svg)")
    for index in range(figures.count()):
        svg = figures.nth(index).locator("svg").first
        svg.scroll_into_view_if_needed()
        box = svg.bounding_box() or {"width": 0.0, "height": 0.0}
        caption = figures.nth(index).locator("figcaption")
        title = caption.first.inner_text() if caption.count() else f"figure {index + 1}"
        blank = True if box["width"] < 1 or box["height"] < 1 else is_blank(svg.screenshot(type="png"))
        found.append(DrawnFigure(title, box["width"], box["height"], blank))
    return found


def overflowing(page: Page) -> list[str]:
    """Boxes whose content is wider than they are at this width: the page scrolling sideways, or a
    table hidden behind its own scroll bar (its last columns unseen, and cut when printed)."""
    return page.evaluate(
        """() => [document.documentElement, ...document.body.querySelectorAll('*')]
            .filter(el => el === document.documentElement
                ? el.scrollWidth > window.innerWidth
                : el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0
                  && getComputedStyle(el).overflowX !== 'visible')
            .map(el => `<${el.tagName.toLowerCase()}${el.className ? ' class=' + el.className : ''}>`
                       + ` holds ${el.scrollWidth}px in ${el.clientWidth}px: `
                       + (el.innerText || '').trim().split('\\n')[0].slice(0, 60))"""
    )


def not_available_notes(page: Page) -> list[str]:
    """The text of every "not available: <reason>" piece on the page."""
    return [text.strip() for text in page.locator(".na").all_inner_texts()]


@pytest.fixture(scope="module")
def browser() -> Iterator[BrowserContext]:
    # `make test` installs chromium (the Makefile's debian target): without it the reports are
    # untested, which is a failure to set up, not a reason to pass quietly.
    if chromium_path() is None:
        log = INSTALL_PID.with_name("chromium-install.log")
        said = f"; its install log {log}: {log.read_text(encoding='utf-8')[-500:]}" if log.is_file() else ""
        pytest.fail("chromium is not installed: `make browser` (or apt-get install chromium) installs Debian's package"
                    + said)
    with launch() as launched:
        yield launched


def main(argv: list[str]) -> int:
    """python -m tests.browser PAGE.html OUT.png [WIDTH]: a full-page screenshot at a laptop's width."""
    if len(argv) not in (2, 3):
        print(main.__doc__, file=sys.stderr)
        return 2
    page_path, out = Path(argv[0]), Path(argv[1])
    width = int(argv[2]) if len(argv) == 3 else LAPTOP["width"]
    with launch() as chromium:
        loaded = open_page(chromium, page_path, width=width)
        png = screenshot(loaded.page)
        # 128 flat colours keep text and figures crisp (a report is flat colour) at a third of the
        # bytes: these images are committed.
        image = Image.open(BytesIO(png)).convert("RGB")
        out.parent.mkdir(parents=True, exist_ok=True)
        image.quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, optimize=True)
        for line in loaded.console_errors + loaded.page_errors:
            print(f"warning: {line}", file=sys.stderr)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
