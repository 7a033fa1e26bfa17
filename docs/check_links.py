"""Every internal link of the built site leads somewhere: each ``href``/``src`` to a file of the
site names a file that exists and, with ``#anchor``, an ``id`` in it. Run by dev/docs after
Sphinx (``python docs/check_links.py build/docs/html``); exits 1 naming each broken link."""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            if value and (name == "href" or (name == "src" and tag in ("img", "script"))):
                self.links.append(value)


def broken_links(site: Path) -> list[str]:
    pages: dict[Path, _Page] = {}
    for path in site.rglob("*.html"):
        if path.relative_to(site).parts[0] in ("_static", "_sources"):
            continue  # the theme's own templates, not pages
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = page
    bad = []
    for path, page in sorted(pages.items()):
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue  # not the site's
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(site.resolve())}: {link}"
            if not target.is_file():
                bad.append(f"{where} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else set()
                if unquote(parts.fragment) not in ids:
                    bad.append(f"{where} (no id {parts.fragment!r} there)")
    return bad


def main(argv: list[str]) -> int:
    site = Path(argv[0] if argv else "build/docs/html")
    bad = broken_links(site)
    for line in bad:
        print(f"broken link: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
