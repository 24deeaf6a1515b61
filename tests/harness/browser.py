"""What the browser tests share: the page wrapper and the per-page check."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import Page

# Elements wider than the viewport, as selectors, so a failure names the culprit.
_OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const culprits = [];
  for (const el of document.querySelectorAll('body *')) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (box.right > width + 1 || box.left < -1) {
      let hidden = false;
      for (let p = el.parentElement; p; p = p.parentElement) {
        const style = getComputedStyle(p);
        if (style.overflowX !== 'visible' && p.getBoundingClientRect().right <= width + 1) {
          hidden = true; break;
        }
      }
      if (hidden) continue;
      const id = el.id ? '#' + el.id : '';
      const cls = el.className && typeof el.className === 'string'
        ? '.' + el.className.trim().split(/\\s+/).join('.') : '';
      culprits.push(`${el.tagName.toLowerCase()}${id}${cls} right=${Math.round(box.right)}`);
    }
  }
  return {
    scrollWidth: document.documentElement.scrollWidth,
    clientWidth: width,
    culprits: culprits.slice(0, 10),
  };
}"""

# Tables wider than their box. A .table-wrap scrolls what is wider than it, so
# the page-wide check above never sees a table that pushes its columns (or a
# row's buttons) out of sight: each wrapper is checked against its table, and
# each cell, button and link against the wrapper. Visually hidden elements
# (1 px, clipped) do not count.
_TABLES_OVERFLOWING = """() => {
  const culprits = [];
  const name = el => el.tagName.toLowerCase() +
    (el.className && typeof el.className === 'string'
      ? '.' + el.className.trim().split(/\\s+/).join('.') : '') +
    ' "' + (el.textContent || '').trim().slice(0, 30) + '"';
  document.querySelectorAll('.table-wrap').forEach((wrap, i) => {
    if (wrap.scrollWidth > wrap.clientWidth + 1) {
      culprits.push(`table ${i}: ${wrap.scrollWidth} px wide in a ${wrap.clientWidth} px box`);
    }
    const outer = wrap.getBoundingClientRect();
    for (const el of wrap.querySelectorAll('th, td, button, .button, a, code')) {
      const b = el.getBoundingClientRect();
      if (b.width <= 1 || b.height <= 1) continue;
      let clipped = false;  // inside a visually hidden header (a phone's stacked table)
      for (let p = el.parentElement; p && p !== wrap; p = p.parentElement) {
        const pb = p.getBoundingClientRect();
        if (pb.width <= 1 || pb.height <= 1) { clipped = true; break; }
      }
      if (clipped) continue;
      if (b.right > outer.right + 1 || b.left < outer.left - 1) {
        culprits.push(`table ${i}: ${name(el)} at ${Math.round(b.left)}..${Math.round(b.right)}` +
          ` outside ${Math.round(outer.left)}..${Math.round(outer.right)}`);
      }
    }
  });
  return culprits.slice(0, 10);
}"""

SERIOUS = {"serious", "critical"}


@dataclass
class BrowserPage:
    """A Playwright page plus what the harness knows about it. Attribute access
    falls through to the page, so tests call `page.goto`, `page.get_by_role`…"""

    page: Page
    viewport: str
    live_url: str
    js_errors: list[str] = field(default_factory=list)

    def navigate(self, name: str) -> None:
        """Follows a link of the main navigation as a person would: on a phone
        the navigation is folded into the Menu, which is opened first."""
        link = self.page.get_by_role("navigation", name="Main").get_by_role("link", name=name)
        menu = self.page.locator("summary.menu-toggle")
        if not link.is_visible() and menu.is_visible():
            menu.click()
        link.click()

    def __getattr__(self, name):
        return getattr(self.page, name)


def horizontal_overflow(page: BrowserPage) -> dict:
    return page.page.evaluate(_OVERFLOWING)


def tables_overflowing(page: BrowserPage) -> list[str]:
    return page.page.evaluate(_TABLES_OVERFLOWING)


# One axe-core run, in the page: every rule as before, the nodes detailed for
# the violations only (resultTypes, as before), and of those only the serious
# and critical ones cross to Python, cut down to what a failure message shows.
_AXE_RUN = """async () => {
  const results = await axe.run(document, {resultTypes: ['violations']});
  return results.violations.filter(v => ['serious', 'critical'].includes(v.impact)).map(v => ({
    id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target),
  }));
}"""


def serious_axe_violations(page: BrowserPage) -> list[dict]:
    from axe_playwright_python.base import AXE_SCRIPT

    # Injected once a document: a second check of the same page (after a
    # click that changed it in place) runs the copy already there.
    if not page.page.evaluate("() => typeof window.axe === 'object'"):
        page.page.evaluate(AXE_SCRIPT)
    return page.page.evaluate(_AXE_RUN)


def screenshot(page: BrowserPage, name: str, folder: Path) -> Path:
    """The whole page as a PNG, `<name>-<viewport>.png` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / f"{name}-{page.viewport}.png"
    page.page.screenshot(path=str(shot), full_page=True)
    return shot


def assert_page_ok(page: BrowserPage, name: str, folder: Path, *, keep_shot: bool) -> Path | None:
    """The page check. Its screenshot is written when `keep_shot` says so, and
    whenever the check fails (the picture of what failed); None otherwise."""
    shot = screenshot(page, name, folder) if keep_shot else None
    try:
        overflow = horizontal_overflow(page)
        assert overflow["scrollWidth"] <= overflow["clientWidth"], (
            f"{name} at {page.viewport} size is {overflow['scrollWidth']} px wide in a "
            f"{overflow['clientWidth']} px viewport; too wide: {overflow['culprits']}"
        )
        tables = tables_overflowing(page)
        assert not tables, (
            f"{name} at {page.viewport} size has a table wider than its box: {tables}"
        )
        violations = serious_axe_violations(page)
        assert not violations, f"axe-core on {name} at {page.viewport} size: {violations}"
    except AssertionError as failure:
        if shot is None:
            shot = screenshot(page, name, folder)
        failure.add_note(f"screenshot: {shot}")
        raise
    return shot
