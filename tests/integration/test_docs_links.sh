#!/bin/bash
# Every relative link of the README, docs/ and bench/ resolves: a markdown
# link names a file or folder that exists and, with an #anchor into a
# markdown file, a heading or an <a id> of that file; a path into
# bench/results written in the text (a raw output, or a glob of them) names
# what is there; and bench's pages name a result kept gzipped with its .gz.
# A renamed or compressed result cannot leave a link behind.
. "$(dirname "$0")/lib.sh"

python3 - "$KV_SOURCE_DIR" <<'PY' || fail "links that do not resolve (above)"
import glob, os, re, sys

os.chdir(sys.argv[1])
pages = ["README.md"] + sorted(glob.glob("docs/**/*.md", recursive=True)) + \
    sorted(glob.glob("bench/**/*.md", recursive=True))
link = re.compile(r'(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
result_path = re.compile(r"bench/results/[\w./{},*-]*")


def anchors(path):
    """The anchors of a markdown page: <a id>, {#id}, and its headings as GitHub names them."""
    text = open(path, encoding="utf-8").read()
    ids = set(re.findall(r'<a\s+(?:id|name)="([^"]+)"', text)) | set(re.findall(r"\{#([\w-]+)\}", text))
    seen = {}
    for line in re.sub(r"```.*?```", "", text, flags=re.S).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        title = re.sub(r"<[^>]+>|\{#[\w-]+\}", "", m.group(1)).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        ids.add(slug if n == 0 else f"{slug}-{n}")
    return ids


def expand(path):
    """PATH with its {a,b} groups expanded, as the shell would."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [x for alt in m.group(1).split(",") for x in expand(path[:m.start()] + alt + path[m.end():])]


known, broken, checked = {}, [], 0
for page in pages:
    text = re.sub(r"```.*?```", "", open(page, encoding="utf-8").read(), flags=re.S)
    for m in link.finditer(text):
        target = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
            continue  # a URL
        checked += 1
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(dest):
            broken.append(f"{page}: ({target}): no such file")
        elif anchor and dest.endswith(".md"):
            if dest not in known:
                known[dest] = anchors(dest)
            if anchor not in known[dest]:
                broken.append(f"{page}: ({target}): no anchor #{anchor} in {dest}")
    for m in result_path.finditer(text):
        path = m.group(0).rstrip(".,;:")
        checked += 1
        for one in expand(path):
            if not glob.glob(one):
                broken.append(f"{page}: {path}: no file or folder {one}")
# bench's pages name a result by its file name within its folder: one that
# is kept gzipped is named with its .gz (code blocks are commands, not names).
results = [f for f in glob.glob("bench/results/**/*", recursive=True) if os.path.isfile(f)]
plain = {os.path.basename(f) for f in results}
packed = {os.path.basename(f)[:-3] for f in results if f.endswith(".gz")} - plain
for page in (p for p in pages if p.startswith("bench/")):
    text = open(page, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("    "))
    for name in re.findall(r"(?<![\w./-])([\w-]+(?:\.[\w-]+)*\.(?:log|txt|json|jsonl|cu|diff))(?![\w.])", text):
        checked += 1
        if name in packed:
            broken.append(f"{page}: {name}: kept gzipped, as {name}.gz")
for b in broken:
    print(b, file=sys.stderr)
print(f"{len(pages)} pages, {checked} links and paths, {len(broken)} that do not resolve",
      file=sys.stderr)
sys.exit(1 if broken else 0)
PY
echo "ok"
