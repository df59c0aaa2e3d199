#!/usr/bin/env python3
"""Check the links between the repository's Markdown pages.

    python3 scripts/check_doc_links.py [FILE.md ...]   (default: README.md and docs/*.md)

Every relative link target ([text](path), ![alt](path)) must exist in the repository, and every
#anchor must name a heading of its page, with the anchors GitHub makes (lower case, punctuation
dropped, spaces as hyphens, -1, -2, ... for repeats). Links with a scheme (https:, mailto:) are
not followed. Exits 1 naming each broken link.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*```")


def prose_lines(path):
    """The page's lines outside fenced code blocks."""
    inside = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            inside = not inside
        elif not inside:
            yield line


def anchors(path):
    """GitHub's anchors for the headings of a page."""
    seen, out = {}, set()
    for line in prose_lines(path):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda g: g.group(1) or "", m.group(1))
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(page):
    for line in prose_lines(page):
        # Inline code spans are not links.
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                yield f"{page.relative_to(ROOT)}: link to {target}: {file_part} does not exist"
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                yield f"{page.relative_to(ROOT)}: link to {target}: no heading #{anchor} in {dest.relative_to(ROOT)}"


def main(args):
    pages = [pathlib.Path(a).resolve() for a in args] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    problems = [p for page in pages for p in broken_links(page)]
    for p in problems:
        print(p, file=sys.stderr)
    print(f"checked the links of {len(pages)} pages: {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
