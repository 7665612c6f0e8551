"""Every link in the built book and in README.md leads somewhere.

    python infra/docs/check.py --book DIR [--readme README.md]
    python infra/docs/check.py --self-test

mdBook has no link checker of its own. `--book` is what `mdbook build docs`
wrote (docs/book.toml, chapters in docs/src/): every `href` and `src` of
every page (chapters, the print page, the sidebar, the 404 page) that is
not an address elsewhere (`https:`, `mailto:`, `//host`) must name a file of
the book, never one outside it, and its `#anchor` an `id` on that page
(mdBook gives each heading one). A path from the root (`/`), and every link
of a page with a `<base>` (mdBook's 404 page), is read from the book's root,
where the site serves it. A chapter linking `other.md#heading` is checked as mdBook
wrote it: `other.html#heading`.

README.md is read as GitHub shows it: each Markdown link outside code (a
span or a fence) must name a file of the repository; a link into the
book's sources (`docs/src/tools.md#adding-mcp-servers`) must name a chapter
the book built and an `id` on its page; a link to another Markdown file
with an anchor, a heading there (GitHub's anchors); `#anchor` alone, a
heading of the README.

Each broken link is printed with its page and line. Exit status 1 on any.

`--self-test` builds a small book and README in a temporary directory, one
link a case: each broken link (a missing page, a missing anchor, a page
outside the book, a missing image, a README link to a chapter the book does
not have or to an anchor its page lacks, to a missing file, to a missing
heading of its own) must be reported, and each good one (a page, an anchor
on it or on the same page, an address elsewhere, a link inside code) must
not be.
"""

import argparse
import os
import re
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


def elsewhere(url):
    """An address outside the book and the repository: a scheme or a host."""
    return bool(urlsplit(url).scheme) or url.startswith("//")


class Page(HTMLParser):
    """One built page: the ids it has, and the links it makes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []  # (line, url)
        # mdBook's 404 page sets `<base href="{site-url}">`: its links are
        # from the book's root, wherever the page is asked for.
        self.based = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "base":
            self.based = True
            return
        for name in ("id",) + (("name",) if tag == "a" else ()):
            if attrs.get(name):
                self.ids.add(attrs[name])
        for name in ("href", "src"):
            if attrs.get(name) is not None:
                self.links.append((self.getpos()[0], attrs[name]))


def read_pages(book):
    pages = {}
    for path in sorted(book.rglob("*.html")):
        page = Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = page
    return pages


def check_book(book):
    """Problems with the built book's links, and how many links it has."""
    book = book.resolve()
    pages = read_pages(book)
    problems, count = [], 0
    for path, page in pages.items():
        where = path.relative_to(book)
        for line, url in page.links:
            if elsewhere(url) or url.startswith(("data:", "javascript:")):
                continue
            count += 1
            parts = urlsplit(url)
            target = path
            if parts.path:
                # A path from the root (`/`) is from the book's: where the site serves it.
                origin = book if page.based or parts.path.startswith("/") else path.parent
                target = Path(os.path.normpath(origin / unquote(parts.path).lstrip("/")))
                if target != book and book not in target.parents:
                    problems.append(f"{where}:{line}: {url} leaves the book")
                    continue
                if target.is_dir():
                    target = target / "index.html"
                if not target.is_file():
                    problems.append(f"{where}:{line}: {url}: {target.relative_to(book)} is not in the book")
                    continue
            anchor = unquote(parts.fragment)
            if anchor and target.suffix == ".html" and anchor not in pages[target].ids:
                problems.append(f"{where}:{line}: {url}: {target.relative_to(book)} has no id {anchor!r}")
    return problems, count


def prose_lines(text):
    """(line, text) outside code fences, code spans blanked."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced:
            yield number, re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), line)


def markdown_links(text):
    links = []
    for number, line in prose_lines(text):
        for match in re.finditer(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line):
            links.append((number, match.group(1)))
        reference = re.match(r"\s*\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)", line)
        if reference:
            links.append((number, reference.group(1)))
    return links


def github_anchors(text):
    """GitHub's anchors for a Markdown file's headings (a repeat gets -1, -2, …)."""
    anchors, seen = set(), {}
    for _, line in prose_lines(text):
        heading = re.match(r"#{1,6} +(.*?)#*\s*$", line)
        if not heading:
            continue
        words = re.sub(r"[`*_]{2,}|[`]", "", heading.group(1)).strip().lower()
        anchor = "".join(c for c in words if c.isalnum() or c in " -_").replace(" ", "-")
        n = seen.get(anchor, 0)
        seen[anchor] = n + 1
        anchors.add(anchor if n == 0 else f"{anchor}-{n}")
    return anchors


def check_readme(readme, book, book_src):
    """Problems with README.md's links, and how many links it has."""
    readme, book, book_src = readme.resolve(), book.resolve(), book_src.resolve()
    repo = readme.parent
    text = readme.read_text(encoding="utf-8")
    ids = {}
    problems, count = [], 0
    for line, url in markdown_links(text):
        if elsewhere(url):
            continue
        count += 1
        where = f"{readme.name}:{line}: ({url})"
        parts = urlsplit(url)
        anchor = unquote(parts.fragment)
        if not parts.path:
            if anchor not in github_anchors(text):
                problems.append(f"{where}: {readme.name} has no heading #{anchor}")
            continue
        target = Path(os.path.normpath(repo / unquote(parts.path)))
        if repo not in target.parents:
            problems.append(f"{where} leaves the repository")
            continue
        if not target.exists():
            problems.append(f"{where}: {target.relative_to(repo)} does not exist")
            continue
        if book_src in target.parents and target.suffix == ".md":
            page = book / target.relative_to(book_src).with_suffix(".html")
            if not page.is_file():
                missing = target.relative_to(repo)
                problems.append(f"{where}: the book has no page for {missing} (not in docs/src/SUMMARY.md?)")
                continue
            if anchor:
                if page not in ids:
                    parsed = Page()
                    parsed.feed(page.read_text(encoding="utf-8"))
                    ids[page] = parsed.ids
                if anchor not in ids[page]:
                    problems.append(f"{where}: {page.relative_to(book)} has no id {anchor!r}")
        elif anchor and target.suffix == ".md":
            if anchor not in github_anchors(target.read_text(encoding="utf-8")):
                problems.append(f"{where}: {target.relative_to(repo)} has no heading #{anchor}")
    return problems, count


def self_test():
    page = '<html><body><h1 id="top">T</h1>{}</body></html>'
    chapter = '<html><body><h2 id="adding-mcp-servers">Adding MCP servers</h2></body></html>'
    book_must_fail = {
        "a missing page": '<a href="gone.html">x</a>',
        "a missing anchor": '<a href="chapter.html#nowhere">x</a>',
        "a missing anchor on the same page": '<a href="#bottom">x</a>',
        "a page outside the book": '<a href="../outside.html">x</a>',
        "a page missing from the root": '<a href="/gone.html">x</a>',
        "a missing image": '<img src="images/diagram.png">',
        "a missing stylesheet": '<link rel="stylesheet" href="css/gone.css">',
    }
    book_must_pass = {
        "a page": '<a href="chapter.html">x</a>',
        "an anchor on a page": '<a href="chapter.html#adding-mcp-servers">x</a>',
        "an anchor on the same page": '<a href="#top">x</a>',
        "a folder's index": '<a href="./">x</a>',
        "the root": '<a href="/">x</a> <a href="/chapter.html#adding-mcp-servers">x</a>',
        "an address elsewhere": '<a href="https://docs.slack.dev/">x</a> <a href="mailto:a@example.com">m</a>',
        "a stylesheet": '<link rel="stylesheet" href="css/book.css">',
    }
    readme_must_fail = {
        "a chapter the book does not have": "[x](docs/src/absent.md)",
        "an anchor the chapter lacks": "[x](docs/src/chapter.md#no-such-heading)",
        "a missing file": "[x](infra/missing.sh)",
        "a missing heading of its own": "[x](#no-such-heading)",
        "a heading another file lacks": "[x](notes.md#elsewhere)",
        "a reference link to a missing file": "[x]: docs/gone.md",
    }
    readme_must_pass = {
        "a chapter": "[x](docs/src/chapter.md)",
        "an anchor of a chapter": "[x](docs/src/chapter.md#adding-mcp-servers)",
        "a heading of its own": "[x](#the-two-commands)",
        "a file": "[x](infra/test.sh)",
        "a heading of another file": "[x](notes.md#notes-for-later)",
        "an address elsewhere": "[x](https://api.slack.com/apps)",
        "a link inside code": "`[x](nowhere.md)` and\n```\n[y](gone.md)\n```",
    }
    failures = []

    scratch = tempfile.TemporaryDirectory(prefix="docs-check-")

    def world(index, readme_body):
        root = Path(tempfile.mkdtemp(dir=scratch.name))
        book = root / "docs" / "book"
        (book / "css").mkdir(parents=True)
        (book / "index.html").write_text(page.format(index))
        (book / "chapter.html").write_text(chapter)
        (book / "css" / "book.css").write_text("")
        (root / "docs" / "src").mkdir()
        (root / "docs" / "src" / "chapter.md").write_text("## Adding MCP servers\n")
        (root / "docs" / "src" / "absent.md").write_text("# Not in the summary\n")
        (root / "infra").mkdir()
        (root / "infra" / "test.sh").write_text("")
        (root / "notes.md").write_text("# Notes for later\n")
        (root / "README.md").write_text(f"# Title\n\n## The two commands\n\n{readme_body}\n")
        return root, book

    for cases, fails in ((book_must_fail, True), (book_must_pass, False)):
        for name, link in cases.items():
            root, book = world(link, "")
            found, _ = check_book(book)
            if fails and not found:
                failures.append(f"not caught in the book: {name}")
            if not fails:
                failures += [f"wrongly reported in the book ({name}): {problem}" for problem in found]
    for cases, fails in ((readme_must_fail, True), (readme_must_pass, False)):
        for name, link in cases.items():
            root, book = world("", link)
            found, _ = check_readme(root / "README.md", book, root / "docs" / "src")
            if fails and not found:
                failures.append(f"not caught in the README: {name}")
            if not fails:
                failures += [f"wrongly reported in the README ({name}): {problem}" for problem in found]
    scratch.cleanup()
    if failures:
        print("\n".join(failures))
        return 1
    caught = len(book_must_fail) + len(readme_must_fail)
    passed = len(book_must_pass) + len(readme_must_pass)
    print(f"self-test: {caught} broken links caught, {passed} good ones pass")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--book", metavar="DIR", help="the built book (mdbook build docs --dest-dir DIR)")
    group.add_argument("--self-test", action="store_true", help="check the checker against links it builds")
    parser.add_argument("--readme", default="README.md", help="the README whose links to check (default README.md)")
    parser.add_argument("--src", default="docs/src", help="the book's sources (default docs/src)")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    book = Path(args.book)
    if not (book / "index.html").is_file():
        print(f"{book} has no index.html: build the book first (mdbook build docs)")
        return 1
    problems, in_book = check_book(book)
    readme_problems, in_readme = check_readme(Path(args.readme), book, Path(args.src))
    problems += readme_problems
    if problems:
        print("\n".join(problems))
        print(f"{len(problems)} broken links")
        return 1
    pages = len(list(book.rglob("*.html")))
    print(f"links: {in_book} in the book ({pages} pages) and {in_readme} in {args.readme}, every one resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
